"""llama.cpp's ``llama-server`` (default ``http://localhost:8080``; ``/health`` answers 503 while loading).

One model per server: the ``model`` field is informational. ``tool_mode`` ``auto`` (the default here) asks
the server's ``/props`` whether the model's chat template renders tools, and constrains tool calls through
a JSON schema when it does not.
"""

from __future__ import annotations

from typing import Any, ClassVar, FrozenSet, Mapping, Optional

from jarvis_core.engine.base import SAMPLING_OPTIONS
from jarvis_core.errors import EngineError
from jarvis_engine_openai_compat.engines.base import LOCAL_OPTIONS, OpenAICompatEngine

__all__ = ["LlamaCppEngine", "template_supports_tools"]


def template_supports_tools(props: Any) -> bool:
    """Whether llama.cpp's ``/props`` says the model's chat template renders tools and tool calls (no
    report at all: assume it does, as older servers handled tools themselves)."""
    caps = props.get("chat_template_caps") if isinstance(props, Mapping) else None
    if not isinstance(caps, Mapping):
        return True
    return bool(caps.get("supports_tools") and caps.get("supports_tool_calls", True))


class LlamaCppEngine(OpenAICompatEngine):
    """llama.cpp's ``llama-server`` (one model per server; the ``model`` field is informational)."""

    engine_id: ClassVar[str] = "llamacpp"
    default_host = "http://localhost:8080"
    health_path = "/health"
    allowed_options: ClassVar[FrozenSet[str]] = LOCAL_OPTIONS
    default_sampling: ClassVar[FrozenSet[str]] = SAMPLING_OPTIONS
    top_k_disabled: ClassVar[Optional[int]] = 0
    default_tool_mode: ClassVar[str] = "auto"

    #: What ``/props`` said about the chat template's tool support (``None``: not asked yet).
    _template_tools: Optional[bool] = None

    def _auto_mode(self) -> str:
        """``native`` when the model's chat template renders tools, else ``json_schema`` (``/props``, asked
        once; a server without it handles the tools itself: ``native``)."""
        if self._template_tools is None:
            try:
                props = self.request_json("GET", "/props", timeout=self.health_timeout)
            except EngineError:
                return "native"
            self._template_tools = template_supports_tools(props)
        return "native" if self._template_tools else "json_schema"

    async def _aauto_mode(self) -> str:
        if self._template_tools is None:
            try:
                props = await self.arequest_json("GET", "/props", timeout=self.health_timeout)
            except EngineError:
                return "native"
            self._template_tools = template_supports_tools(props)
        return "native" if self._template_tools else "json_schema"

    def prepare(self, model: str) -> None:
        """Check that the server is up: it serves the one model it was started with, whatever the name."""
        self.list_models()
