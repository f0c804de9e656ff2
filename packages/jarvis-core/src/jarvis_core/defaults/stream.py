"""Post-processing of streams for :meth:`ModelAdapter.stream_processor`.

:class:`StreamProcessor` sits between an engine's wire chunks and its caller. It passes native reasoning
and native tool calls through and runs the rest of the text through the parsers of its
:class:`~jarvis_core.parsers.compose.ParserPlan` (an :class:`~jarvis_core.parsers.compose.OutputParser`
does the routing): inline reasoning is split out of ``content`` only when an opening tag starts a reasoning
block (on a stream the prompt is unknown), and text-form tool calls become complete
:class:`~jarvis_core.types.ToolCall` objects in the finishing chunk. Text that may still turn out to be a
call is held back until it is certain; everything else flows through at once.
"""

from __future__ import annotations

from typing import Any, List, Optional

from jarvis_core.parsers.base import ParsedDelta
from jarvis_core.parsers.compose import ParserPlan
from jarvis_core.types import StreamChunk

__all__ = ["StreamProcessor"]


class StreamProcessor:
    """Feed it every :class:`StreamChunk` of one response, then call :meth:`finish`."""

    def __init__(self, plan: ParserPlan, tools: Any = None) -> None:
        self.parser = plan.for_stream(tools)
        self._native_calls = False
        self._flushed = False

    def _parse(self, text: str, final: bool) -> List[ParsedDelta]:
        parser = self.parser
        events = parser.feed(text)
        if final:
            events = events + parser.finish(parse_calls=not self._native_calls)
        return events

    def _chunk(self, events: List[ParsedDelta], base: Optional[StreamChunk]) -> Optional[StreamChunk]:
        content = "".join(e.content for e in events if e.content)
        reasoning = "".join(e.reasoning for e in events if e.reasoning)
        calls = tuple(c for e in events for c in e.tool_calls)
        notes = [str(d) for e in events for d in e.diagnostics]
        native_reasoning = base.reasoning if base is not None else None
        if native_reasoning:
            reasoning = native_reasoning + reasoning
        finish = base.finish_reason if base is not None else None
        if calls and finish in (None, "stop"):
            finish = "tool_calls"  # calls are only ever parsed when the stream is flushed
        metadata = dict(base.metadata) if base is not None else {}
        if notes:
            metadata["parser_diagnostics"] = notes
        native_calls = tuple(base.tool_calls) if base is not None else ()
        usage = base.usage if base is not None else None
        if not (content or reasoning or calls or native_calls or finish or usage or metadata):
            return None
        return StreamChunk(
            content=content or None,
            reasoning=reasoning or None,
            tool_calls=native_calls + calls,
            finish_reason=finish,
            usage=usage,
            metadata=metadata,
        )

    def feed(self, chunk: StreamChunk) -> List[StreamChunk]:
        """Process one wire chunk; return zero or more chunks for the caller."""
        if self._flushed:
            return [chunk]
        flushed: List[ParsedDelta] = []
        if chunk.reasoning:
            flushed = self.parser.stop_reasoning()  # the server splits reasoning: text skips the parser now
        if chunk.tool_calls:
            self._native_calls = True
        final = chunk.finish_reason is not None
        if final:
            self._flushed = True
        out = self._chunk(flushed + self._parse(chunk.content or "", final), chunk)
        return [out] if out is not None else []

    def finish(self) -> List[StreamChunk]:
        """End of stream: flush held text (and parsed tool calls) if no finishing chunk did already."""
        if self._flushed:
            return []
        self._flushed = True
        out = self._chunk(self._parse("", True), None)
        return [out] if out is not None else []
