"""Post-processing of streams for :meth:`ModelAdapter.stream_processor`.

:class:`StreamProcessor` sits between an engine's wire chunks and its caller. It passes native reasoning
and native tool calls through, splits inline reasoning out of ``content`` (only when an opening tag starts
a reasoning block: on a stream the prompt is unknown), and, when tools were given, turns text-form tool
calls into complete :class:`~jarvis_core.types.ToolCall` objects in the finishing chunk. Text that may
still turn out to be a call is held back until it is certain; everything else flows through at once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, List, Optional

from jarvis_core.parsers.base import ParsedDelta
from jarvis_core.types import StreamChunk

if TYPE_CHECKING:
    from jarvis_core.defaults.adapter import ModelAdapter

__all__ = ["StreamProcessor"]


class StreamProcessor:
    """Feed it every :class:`StreamChunk` of one response, then call :meth:`finish`."""

    def __init__(self, adapter: ModelAdapter, tools: Any = None) -> None:
        rcls = adapter._load("reasoning", adapter.reasoning_parser)
        self.reasoning = rcls(tags_only=True) if rcls is not None else None
        tcls = adapter._load("tool", adapter.tool_parser)
        use_tools = tcls is not None and (tools or getattr(tcls, "always_parse", False))
        self.tool = tcls(tools, stream_friendly=True) if use_tools else None
        self._native_reasoning = False
        self._native_calls = False
        self._flushed = False

    def _split(self, text: str, final: bool) -> List[ParsedDelta]:
        if self.reasoning is not None and not self._native_reasoning:
            events = list(self.reasoning.feed(text)) if text else []
            if final:
                events.extend(self.reasoning.finish())
        else:
            events = [ParsedDelta(content=text)] if text else []
        if self.tool is None:
            return events
        out: List[ParsedDelta] = []
        for ev in events:
            if ev.reasoning or ev.diagnostics or ev.tool_calls:
                out.append(ParsedDelta(reasoning=ev.reasoning, tool_calls=ev.tool_calls, diagnostics=ev.diagnostics))
            if ev.content:
                out.extend(self.tool.feed(ev.content))
        if final:
            if self._native_calls:  # the server parsed the calls: held text was just text
                held = self.tool.held_text()
                if held:
                    out.append(ParsedDelta(content=held))
            else:
                out.extend(self.tool.finish())
        return out

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
        if chunk.reasoning:
            self._native_reasoning = True
        if chunk.tool_calls:
            self._native_calls = True
        if self._flushed:
            return [chunk]
        final = chunk.finish_reason is not None
        if final:
            self._flushed = True
        out = self._chunk(self._split(chunk.content or "", final), chunk)
        return [out] if out is not None else []

    def finish(self) -> List[StreamChunk]:
        """End of stream: flush held text (and parsed tool calls) if no finishing chunk did already."""
        if self._flushed:
            return []
        self._flushed = True
        events = self._split("", True)
        out = self._chunk(events, None)
        return [out] if out is not None else []
