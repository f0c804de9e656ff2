"""llama.cpp's ``llama-server`` (default ``http://localhost:8080``; ``/health`` answers 503 while loading).

One model per server: the ``model`` field is informational. ``tool_mode`` ``auto`` (the default here) asks
the server's ``/props`` whether the model's chat template renders tools, and constrains tool calls through
a JSON schema when it does not. llama.cpp's own request fields (``id_slot``, ``cache_prompt``,
``return_progress``) are allowed options, and ``/slots`` is read by :meth:`LlamaCppEngine.busy_slots`.

A :class:`StreamWatch` set on an engine sees its streams from outside: the response headers (and so the
connection's socket), every network read, and tool-call fragments as they arrive. The managed worker
uses one engine per request with a watch, which is how its stall detection, cancellation and early stop
on a decision request work on the engine's own stream decoding.
"""

from __future__ import annotations

import contextlib
from typing import Any, AsyncIterator, ClassVar, FrozenSet, List, Mapping, Optional, Protocol, Set, Tuple

import httpx

from jarvis_core.engine.base import SAMPLING_OPTIONS
from jarvis_core.engine.openai_wire import ChatStreamDecoder
from jarvis_core.engine.streams import SSEByteDecoder
from jarvis_core.errors import EngineError, EngineHTTPError, MalformedResponseError, VisionNotSupportedError
from jarvis_core.types import StreamChunk, ToolCall
from jarvis_engine_openai_compat.engines.base import LOCAL_OPTIONS, OpenAICompatEngine

__all__ = ["LlamaCppEngine", "StreamWatch", "template_supports_tools"]

#: llama.cpp's own request fields: pin a slot, reuse its prompt cache, send prefill progress events.
LLAMACPP_OPTIONS: FrozenSet[str] = frozenset({"id_slot", "cache_prompt", "return_progress"})


class StreamWatch(Protocol):
    """Watches an engine's streamed replies from outside (one stream at a time). A method that raises
    abandons the stream: the exception leaves the engine's stream as it is, and the connection is closed."""

    def opened(self, response: httpx.Response) -> None:
        """The response headers arrived, before any body byte. The connection's socket is
        ``response.extensions["network_stream"].get_extra_info("socket")``: shutting it down from another
        thread wakes the stream's reader at once and makes llama.cpp drop the generation."""

    def received(self) -> None:
        """A network read of the body arrived (a prefill progress event counts)."""

    def tool_calls(self, calls: Tuple[ToolCall, ...]) -> None:
        """A tool-call fragment arrived; ``calls`` are the calls assembled so far, the last maybe partial."""


class _WatchedEvents(SSEByteDecoder):
    __slots__ = ("_watch",)

    def __init__(self, watch: StreamWatch) -> None:
        super().__init__(until_done=True)
        self._watch = watch

    def feed(self, data: bytes, final: bool = False) -> List[Any]:
        self._watch.received()
        return super().feed(data, final)


class _WatchedChunks(ChatStreamDecoder):
    __slots__ = ("_watch",)

    def __init__(self, watch: StreamWatch, *, engine_id: str) -> None:
        super().__init__(engine_id=engine_id)
        self._watch = watch

    def delta(self, chunk: Any) -> Optional[StreamChunk]:
        out = super().delta(chunk)
        try:
            fragments = chunk["choices"][0]["delta"].get("tool_calls")
        except (KeyError, IndexError, TypeError, AttributeError):
            fragments = None
        if fragments:
            self._watch.tool_calls(self.tool_calls())
        return out


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
    allowed_options: ClassVar[FrozenSet[str]] = LOCAL_OPTIONS | LLAMACPP_OPTIONS
    default_sampling: ClassVar[FrozenSet[str]] = SAMPLING_OPTIONS
    top_k_disabled: ClassVar[Optional[int]] = 0
    default_tool_mode: ClassVar[str] = "auto"

    #: What ``/props`` said about the chat template's tool support (``None``: not asked yet).
    _template_tools: Optional[bool] = None
    #: Sees this engine's streams (see :class:`StreamWatch`); an engine with a watch streams one reply at a time.
    watch: Optional[StreamWatch] = None

    # -- the watch ------------------------------------------------------------------------------
    @contextlib.asynccontextmanager
    async def astream_response(
        self, method: str, path: str, *, json_body: Any = None, params: Optional[Mapping[str, Any]] = None,
        headers: Optional[Mapping[str, str]] = None, model: Optional[str] = None, timeout: Optional[float] = None,
    ) -> AsyncIterator[httpx.Response]:
        """:meth:`HTTPEngine.astream_response <jarvis_core.engine.http.HTTPEngine.astream_response>`, telling
        the :attr:`watch` when the headers arrived."""
        async with super().astream_response(method, path, json_body=json_body, params=params, headers=headers,
                                            model=model, timeout=timeout) as response:
            if self.watch is not None:
                self.watch.opened(response)
            yield response

    def _event_decoder(self) -> SSEByteDecoder:
        return super()._event_decoder() if self.watch is None else _WatchedEvents(self.watch)

    def _chat_decoder(self) -> ChatStreamDecoder:
        if self.watch is None:
            return ChatStreamDecoder(engine_id=self.engine_id)
        return _WatchedChunks(self.watch, engine_id=self.engine_id)

    # -- llama.cpp's endpoints ------------------------------------------------------------------

    def template_tools(self) -> bool:
        """Whether the model's chat template renders tools (the server's ``/props``, asked once; a server that
        does not answer it is assumed to handle tools itself, and is asked again next time)."""
        if self._template_tools is None:
            try:
                props = self.request_json("GET", "/props", timeout=self.health_timeout)
            except EngineError:
                return True
            self._template_tools = template_supports_tools(props)
        return self._template_tools

    def _auto_mode(self) -> str:
        """``native`` when the model's chat template renders tools, else ``json_schema``."""
        return "native" if self.template_tools() else "json_schema"

    async def _aauto_mode(self) -> str:
        if self._template_tools is None:
            try:
                props = await self.arequest_json("GET", "/props", timeout=self.health_timeout)
            except EngineError:
                return "native"
            self._template_tools = template_supports_tools(props)
        return "native" if self._template_tools else "json_schema"

    #: What ``/props`` said about vision (``modalities.vision``; ``None``: not asked yet, or not said).
    _vision: Optional[bool] = None

    def _vision_from(self, props: Any) -> None:
        modalities = props.get("modalities") if isinstance(props, dict) else None
        if isinstance(modalities, dict) and isinstance(modalities.get("vision"), bool):
            self._vision = modalities["vision"]

    def _refuse_blind(self, model: str) -> None:
        if self._vision is False:
            raise VisionNotSupportedError(
                f"{self.engine_id}: the model the server at {self.base_url} serves ({model or 'its one model'}) has no "
                "vision (llama.cpp's /props: modalities.vision is false); start it with the model's --mmproj "
                "projector, or use a vision model", engine_id=self.engine_id, model=model)

    def check_vision(self, model: str) -> None:
        """Refuse images when ``/props`` says ``modalities.vision`` is false (asked once; a server that does not
        say lets the request through)."""
        if self._vision is None:
            try:
                self._vision_from(self.request_json("GET", "/props", timeout=self.health_timeout))
            except EngineError:
                pass
        self._refuse_blind(model)

    async def acheck_vision(self, model: str) -> None:
        if self._vision is None:
            try:
                self._vision_from(await self.arequest_json("GET", "/props", timeout=self.health_timeout))
            except EngineError:
                pass
        self._refuse_blind(model)

    def prepare(self, model: str) -> None:
        """Check that the server is up: it serves the one model it was started with, whatever the name."""
        self.list_models()

    def busy_slots(self) -> Optional[Set[int]]:
        """Ids of the server slots processing a request now (``/slots``); empty when the server does not
        report slots (``--no-slots``), ``None`` when it could not be asked (unknown, not idle)."""
        try:
            slots = self.request_json("GET", "/slots", timeout=self.health_timeout)
        except (EngineHTTPError, MalformedResponseError):
            return set()
        except EngineError:
            return None
        if not isinstance(slots, list):
            return set()
        return {s["id"] for s in slots if isinstance(s, Mapping) and s.get("is_processing") and "id" in s}
