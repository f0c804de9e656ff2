"""Reasoning and tool parsing together, in vLLM's order: reasoning is split first, then tool calls are
parsed from the content that remains.

This module is the one place that routes model output through a family's parsers. :class:`ParserPlan` says
which parsers apply to one answer (the reasoning parser when the family has one; the tool parser when tools
were given, or when its format is always parsed, like gpt-oss Harmony) and builds the :class:`OutputParser`
that runs them, for a whole text or for a stream. :class:`~jarvis_core.defaults.ModelAdapter` hands out the
plan of a model (:meth:`~jarvis_core.defaults.ModelAdapter.parser_plan`); engines never pick parsers
themselves.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

import attrs

from jarvis_core.parsers.base import Diagnostic, ParsedDelta
from jarvis_core.parsers.lookup import get_reasoning_parser, get_tool_parser
from jarvis_core.types import ToolCall

__all__ = ["NO_PARSERS", "OutputParser", "ParsedOutput", "ParserPlan", "parse_output", "reasoning_options"]


@attrs.frozen
class ParsedOutput:
    """Content, reasoning and tool calls of one model output."""

    content: Optional[str] = None
    reasoning: Optional[str] = None
    tool_calls: Tuple[ToolCall, ...] = ()
    diagnostics: Tuple[Diagnostic, ...] = ()


class OutputParser:
    """Streams one output through an optional reasoning parser and an optional tool parser.

    Parsers may be given by name or as parser objects (fresh ones: each parses one output). With
    ``collect=False`` the events are only returned, not kept for :attr:`result` (streams that pass every
    event on at once need no second copy of the text).
    """

    def __init__(
        self,
        tool_parser: Any = None,
        reasoning_parser: Any = None,
        *,
        tools: Any = None,
        registry: Any = None,
        collect: bool = True,
        **options: Any,
    ) -> None:
        self.reasoning = (
            get_reasoning_parser(reasoning_parser, registry=registry, **options)
            if isinstance(reasoning_parser, str) else reasoning_parser
        )
        self.tool = get_tool_parser(tool_parser, tools, registry=registry) if isinstance(tool_parser, str) else tool_parser
        self._collect = collect
        self._content: List[str] = []
        self._reasoning: List[str] = []
        self._calls: List[ToolCall] = []
        self._notes: List[Diagnostic] = []

    def _through_tools(self, events: List[ParsedDelta], final: bool, parse_calls: bool = True) -> List[ParsedDelta]:
        tool = self.tool
        if tool is None:
            return events
        out: List[ParsedDelta] = []
        for ev in events:
            if ev.reasoning or ev.tool_calls or ev.diagnostics:
                out.append(ParsedDelta(reasoning=ev.reasoning, tool_calls=ev.tool_calls, diagnostics=ev.diagnostics))
            if ev.content:
                out.extend(tool.feed(ev.content))
        if final:
            if parse_calls:
                out.extend(tool.finish())
            else:  # the server sent the calls itself: text held as a possible call was just text
                held = tool.held_text()
                if held:
                    out.append(ParsedDelta(content=held))
        return out

    def _record(self, events: List[ParsedDelta]) -> List[ParsedDelta]:
        if not self._collect:
            return events
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
        if not delta:
            return []
        events = self.reasoning.feed(delta) if self.reasoning is not None else [ParsedDelta(content=delta)]
        return self._record(self._through_tools(events, final=False))

    def stop_reasoning(self) -> List[ParsedDelta]:
        """The server splits reasoning itself: flush what the reasoning parser holds (through the tool parser),
        and let every later delta skip it."""
        reasoning, self.reasoning = self.reasoning, None
        if reasoning is None:
            return []
        return self._record(self._through_tools(list(reasoning.finish()), final=False))

    def finish(self, *, parse_calls: bool = True) -> List[ParsedDelta]:
        """End of output: the final events (complete tool calls included). ``parse_calls=False``: the server
        sent its tool calls natively, so text the tool parser held back is content, not a call."""
        events = list(self.reasoning.finish()) if self.reasoning is not None else []
        return self._record(self._through_tools(events, final=True, parse_calls=parse_calls))

    @property
    def result(self) -> ParsedOutput:
        """Everything parsed so far (final once :meth:`finish` ran); empty with ``collect=False``."""
        return ParsedOutput(
            content="".join(self._content) or None,
            reasoning="".join(self._reasoning) or None,
            tool_calls=tuple(self._calls),
            diagnostics=tuple(self._notes),
        )


def reasoning_options(parser_cls: Any, text: str) -> Dict[str, Any]:
    """How to run a family's reasoning parser on a whole text whose prompt we do not know.

    With an end tag in the text, the family's own rules apply (thinking on). Without one, only an explicit
    opening tag makes reasoning, so a plain answer from a model with thinking off is never taken for
    truncated thinking.
    """
    end = getattr(parser_cls, "end_token", None)
    if end and end in text:
        return {"enable_thinking": True, "thinking": True}
    return {"tags_only": True}


@attrs.frozen
class ParserPlan:
    """Which parser classes apply to one answer: ``reasoning`` and ``tool`` (each a parser class, or None).

    Build it with :meth:`choose` (the one rule), or ask a model's adapter
    (:meth:`~jarvis_core.defaults.ModelAdapter.parser_plan`).
    """

    reasoning: Any = None
    tool: Any = None

    @classmethod
    def choose(cls, reasoning_cls: Any, tool_cls: Any, tools: Any) -> ParserPlan:
        """The rule: the family's reasoning parser always applies; its tool parser when ``tools`` were given,
        or when the parser class sets ``always_parse`` (its format is never plain prose)."""
        use_tool = tool_cls is not None and (bool(tools) or bool(getattr(tool_cls, "always_parse", False)))
        return cls(reasoning_cls, tool_cls if use_tool else None)

    @property
    def needed(self) -> bool:
        """True when an answer needs post-processing at all (else it passes through unchanged)."""
        return self.reasoning is not None or self.tool is not None

    def for_text(self, text: str, tools: Any = None, *, reasoning: bool = True, calls: bool = True) -> Optional[OutputParser]:
        """A parser for one whole answer ``text``, or None when nothing applies. ``reasoning=False``: the
        server already split the reasoning; ``calls=False``: it already sent the tool calls."""
        rcls = self.reasoning if reasoning else None
        tcls = self.tool if calls else None
        if rcls is None and tcls is None:
            return None
        return OutputParser(
            tcls(tools, stream_friendly=True) if tcls is not None else None,
            rcls(**reasoning_options(rcls, text)) if rcls is not None else None,
        )

    def for_stream(self, tools: Any = None) -> OutputParser:
        """A parser for one streamed answer: reasoning only where an opening tag starts it (the prompt is
        unknown on a stream); events are returned, not collected."""
        return OutputParser(
            self.tool(tools, stream_friendly=True) if self.tool is not None else None,
            self.reasoning(tags_only=True) if self.reasoning is not None else None,
            collect=False,
        )


#: The plan of a family without parsers.
NO_PARSERS = ParserPlan()


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
