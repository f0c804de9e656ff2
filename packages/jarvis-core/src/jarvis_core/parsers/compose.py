"""Reasoning and tool parsing together, in vLLM's order: reasoning is split first, then tool calls are
parsed from the content that remains."""

from __future__ import annotations

from typing import Any, List, Optional, Tuple

import attrs

from jarvis_core.parsers.base import Diagnostic, ParsedDelta, ToolCall
from jarvis_core.parsers.lookup import get_reasoning_parser, get_tool_parser

__all__ = ["OutputParser", "ParsedOutput", "parse_output"]


@attrs.frozen
class ParsedOutput:
    """Content, reasoning and tool calls of one model output."""

    content: Optional[str] = None
    reasoning: Optional[str] = None
    tool_calls: Tuple[ToolCall, ...] = ()
    diagnostics: Tuple[Diagnostic, ...] = ()


class OutputParser:
    """Streams one output through an optional reasoning parser and an optional tool parser.

    Parsers may be given by name or as parser objects (fresh ones: each parses one output).
    """

    def __init__(
        self,
        tool_parser: Any = None,
        reasoning_parser: Any = None,
        *,
        tools: Any = None,
        registry: Any = None,
        **options: Any,
    ) -> None:
        self.reasoning = (
            get_reasoning_parser(reasoning_parser, registry=registry, **options)
            if isinstance(reasoning_parser, str) else reasoning_parser
        )
        self.tool = get_tool_parser(tool_parser, tools, registry=registry) if isinstance(tool_parser, str) else tool_parser
        self._content: List[str] = []
        self._reasoning: List[str] = []
        self._calls: List[ToolCall] = []
        self._notes: List[Diagnostic] = []

    def _through_tools(self, events: List[ParsedDelta], final: bool) -> List[ParsedDelta]:
        if self.tool is None:
            return events
        out: List[ParsedDelta] = []
        for ev in events:
            if ev.reasoning or ev.tool_calls or ev.diagnostics:
                out.append(ParsedDelta(reasoning=ev.reasoning, tool_calls=ev.tool_calls, diagnostics=ev.diagnostics))
            if ev.content:
                out.extend(self.tool.feed(ev.content))
        if final:
            out.extend(self.tool.finish())
        return out

    def _record(self, events: List[ParsedDelta]) -> List[ParsedDelta]:
        for ev in events:
            if ev.content:
                self._content.append(ev.content)
            if ev.reasoning:
                self._reasoning.append(ev.reasoning)
            self._calls.extend(ev.tool_calls)
            self._notes.extend(ev.diagnostics)
        return events

    def feed(self, delta: str) -> List[ParsedDelta]:
        """Consume a delta; return the events that became certain."""
        events = self.reasoning.feed(delta) if self.reasoning is not None else [ParsedDelta(content=delta)]
        return self._record(self._through_tools(events, final=False))

    def finish(self) -> List[ParsedDelta]:
        """End of output: the final events (complete tool calls included)."""
        events = self.reasoning.finish() if self.reasoning is not None else []
        return self._record(self._through_tools(events, final=True))

    @property
    def result(self) -> ParsedOutput:
        return ParsedOutput(
            content="".join(self._content) or None,
            reasoning="".join(self._reasoning) or None,
            tool_calls=tuple(self._calls),
            diagnostics=tuple(self._notes),
        )


def parse_output(
    text: str,
    *,
    tool_parser: Any = None,
    reasoning_parser: Any = None,
    tools: Any = None,
    registry: Any = None,
    **options: Any,
) -> ParsedOutput:
    """Parse a whole output with an optional reasoning parser, then an optional tool parser (by name)."""
    parser = OutputParser(tool_parser, reasoning_parser, tools=tools, registry=registry, **options)
    parser.feed(text or "")
    parser.finish()
    return parser.result
