"""One model turn of a worker request, streamed through the ``llamacpp`` engine.

The engine does everything on the wire: the payload (with the model family's sampling defaults), the
request, SSE and chunk decoding, error classification and the reply limits. The worker only watches, with
a :class:`~jarvis_engine_openai_compat.engines.llamacpp.StreamWatch` on an engine of its own per request:

- the response headers register the connection's socket with the request's record, so that a cancel, a
  loop verdict or the supervisor can shut it down from another thread (which wakes this thread at once
  and makes llama.cpp drop the generation); the engine has its own connection pool, so no other request's
  connection is ever touched;
- every network read stamps the record's progress (the supervisor's stall check reads it);
- in native tool mode, a ``decision_request`` whose arguments are complete ends the turn at once.

Content deltas go to the record's bounded partial output and to the loop detector.
"""

from __future__ import annotations

from typing import Any, Dict, Mapping, Optional, Sequence, Tuple

import attrs
import httpx

from jarvis_core.types import Message, StreamChunk, ToolCall, ToolSpec, Usage

from ..engines.llamacpp import LlamaCppEngine
from .loop_detector import LoopDetector
from .record import RequestRecord
from .signals import first_decision
from .state import RequestState

__all__ = ["Ended", "Turn", "request_engine", "stream_turn"]


class Ended(Exception):
    """The record was ended from outside (cancel, restart, a loop) while this thread worked on it."""


class _Decided(Exception):
    def __init__(self, calls: Tuple[ToolCall, ...], decision: ToolCall) -> None:
        super().__init__(decision.name)
        self.calls = calls
        self.decision = decision


@attrs.frozen
class Turn:
    """What one turn produced: the text, the complete tool calls, the decision request that ended it early."""

    content: str = ""
    calls: Tuple[ToolCall, ...] = ()
    decision: Optional[ToolCall] = None
    finish_reason: str = "stop"
    usage: Optional[Usage] = None
    timings: Mapping[str, Any] = attrs.field(factory=dict)


class _RecordWatch:
    """The :class:`~jarvis_engine_openai_compat.engines.llamacpp.StreamWatch` of one request."""

    def __init__(self, rec: RequestRecord, stop_on_decision: bool) -> None:
        self._rec = rec
        self._stop_on_decision = stop_on_decision

    def opened(self, response: httpx.Response) -> None:
        stream = response.extensions.get("network_stream")
        sock = stream.get_extra_info("socket") if stream is not None else None
        if not self._rec.headers_arrived(sock):
            raise Ended

    def received(self) -> None:
        self._rec.progress()

    def tool_calls(self, calls: Tuple[ToolCall, ...]) -> None:
        if self._stop_on_decision:
            decision = first_decision(calls, streaming=True)
            if decision is not None:
                raise _Decided(calls, decision)


def request_engine(url: str, rec: RequestRecord, *, connect_timeout: float, stop_on_decision: bool,
                   bus: Any = None) -> LlamaCppEngine:
    """The engine one request streams through: its own connections, no read timeout (a prefill may take
    many minutes; the supervisor judges stalls), the worker's tool handling (``native`` on the wire)."""
    engine = LlamaCppEngine(host=url, timeout=float("inf"), connect_timeout=connect_timeout, tool_mode="native",
                            bus=bus)
    engine.watch = _RecordWatch(rec, stop_on_decision)
    return engine


async def stream_turn(engine: LlamaCppEngine, rec: RequestRecord, generation: int, messages: Sequence[Message], *,
                      model: str, temperature: Optional[float], max_tokens: int, tools: Sequence[ToolSpec],
                      options: Dict[str, Any], detector: LoopDetector) -> Turn:
    """Stream one turn into ``rec``. Raises :class:`Ended` when the record ended meanwhile, and the
    engine's typed errors when the server refused or the stream broke."""
    if rec.final:
        raise Ended
    rec.begin_http(generation)
    final: Optional[StreamChunk] = None
    try:
        async for chunk in engine.stream_full(messages, model=model, temperature=temperature, max_tokens=max_tokens,
                                              tools=tools or None, **options):
            final = chunk
            text = chunk.content
            if text:
                rec.add_text(text)
                verdict = detector.feed(text)
                if verdict is not None:
                    rec.finish(RequestState.CANCELED, verdict.reason, verdict.line)
                    raise Ended
            if rec.final:
                raise Ended
    except _Decided as stop:
        rec.closed_early = True  # the server may still be generating in that slot
        rec.end_http()
        return Turn("".join(rec.turn_parts), stop.calls, stop.decision, "tool_calls")
    rec.end_http()
    if final is None:
        return Turn("".join(rec.turn_parts))
    return Turn("".join(rec.turn_parts), final.tool_calls, None, final.finish_reason or "stop", final.usage,
                dict(final.metadata.get("timings") or {}))
