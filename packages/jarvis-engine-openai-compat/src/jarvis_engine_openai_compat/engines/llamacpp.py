"""llama.cpp's ``llama-server`` (default ``http://localhost:8080``; ``/health`` answers 503 while loading).

One model per server: the ``model`` field is informational. ``tool_mode`` ``auto`` (the default here) asks
the server's ``/props`` whether the model's chat template renders tools, and constrains tool calls through
a JSON schema when it does not.
"""

from __future__ import annotations

from typing import ClassVar, FrozenSet, Optional

from jarvis_core.engine.base import SAMPLING_OPTIONS
from jarvis_engine_openai_compat.engines.base import LOCAL_OPTIONS, OpenAICompatEngine

__all__ = ["LlamaCppEngine"]


class LlamaCppEngine(OpenAICompatEngine):
    """llama.cpp's ``llama-server`` (one model per server; the ``model`` field is informational)."""

    engine_id: ClassVar[str] = "llamacpp"
    default_host = "http://localhost:8080"
    health_path = "/health"
    allowed_options: ClassVar[FrozenSet[str]] = LOCAL_OPTIONS
    default_sampling: ClassVar[FrozenSet[str]] = SAMPLING_OPTIONS
    top_k_disabled: ClassVar[Optional[int]] = 0
    default_tool_mode: ClassVar[str] = "auto"

    def _auto_mode(self) -> Optional[str]:
        if self._template_tools is None:
            return None
        return "native" if self._template_tools else "json_schema"

    def prepare(self, model: str) -> None:
        """Check that the server is up: it serves the one model it was started with, whatever the name."""
        self.list_models()
