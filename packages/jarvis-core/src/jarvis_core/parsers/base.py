"""Result and event types shared by every parser, and the two parser base classes.

A parser is used either on a whole text (``parse``) or on a stream (``feed`` each delta, then ``finish``).
Both paths run the same state machine, so a stream cut anywhere gives the same final result as the whole
text. ``feed`` returns :class:`ParsedDelta` events: text that is *certain* (content or reasoning deltas)
as soon as it is certain; complete tool calls arrive from ``finish`` (the formats are all-or-nothing: a
bad block later in the output turns earlier calls back into content, so no call is final before the end).

Parsers never raise on model output: anything malformed stays in ``content`` and the result carries a
:class:`Diagnostic`.
"""

from __future__ import annotations

import json
from typing import Any, Iterable, List, NamedTuple, Optional, Sequence, Tuple

import attrs

from jarvis_core.types import ToolCall, new_call_id

__all__ = [
    "Diagnostic",
    "ParsedDelta",
    "ReasoningParser",
    "ReasoningResult",
    "StreamSnapshot",
    "ToolCallPreview",
    "ToolParseResult",
    "ToolParser",
    "new_call_id",
    "normalize_arguments",
]


@attrs.frozen
class Diagnostic:
    """Why a parser left text as content, or what it repaired: ``code`` is stable, ``message`` is for people."""

    code: str
    message: str

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"


@attrs.frozen
class ToolParseResult:
    """The result of a tool-call parser: remaining ``content`` (None when empty) and the calls found."""

    content: Optional[str] = None
    tool_calls: Tuple[ToolCall, ...] = ()
    diagnostics: Tuple[Diagnostic, ...] = ()
    reasoning: Optional[str] = None  # only formats that carry both (gpt-oss Harmony) set it

    @property
    def tools_called(self) -> bool:
        """Whether any call was found (deprecated: ``bool(result.tool_calls)``)."""
        from jarvis_core.deprecation import deprecated

        deprecated("ToolParseResult.tools_called", "bool(result.tool_calls)")
        return bool(self.tool_calls)


@attrs.frozen
class ReasoningResult:
    """The result of a reasoning parser: ``content`` and ``reasoning``, each None when empty."""

    content: Optional[str] = None
    reasoning: Optional[str] = None
    diagnostics: Tuple[Diagnostic, ...] = ()


class ParsedDelta(NamedTuple):
    """One streaming event: certain text deltas and/or complete tool calls.

    A named tuple rather than an attrs class: one is built per streamed delta, and this is several times
    cheaper to create.
    """

    content: Optional[str] = None
    reasoning: Optional[str] = None
    tool_calls: Tuple[ToolCall, ...] = ()
    diagnostics: Tuple[Diagnostic, ...] = ()


@attrs.frozen
class ToolCallPreview:
    """A tool call still being generated: its header once the name is complete, and the argument text so far."""

    index: int
    id: str
    name: str
    arguments: str = ""


@attrs.frozen
class StreamSnapshot:
    """What a stream has shown so far (for UIs): emitted text plus previews of unfinished tool calls."""

    content: Optional[str] = None
    reasoning: Optional[str] = None
    tool_calls: Tuple[ToolCallPreview, ...] = ()


def normalize_arguments(value: Any) -> Tuple[str, bool]:
    """Arguments as a JSON string, and whether they were valid JSON.

    Objects are dumped with ``ensure_ascii=False``; a string that holds JSON is re-dumped; any other string is
    kept verbatim (some formats pass invalid JSON through on purpose, and the caller reports it).
    """
    if isinstance(value, str):
        try:
            decoded = json.loads(value)
        except (ValueError, RecursionError):
            return value, False
        return json.dumps(decoded, ensure_ascii=False), True
    try:
        return json.dumps({} if value is None else value, ensure_ascii=False), True
    except (TypeError, ValueError, RecursionError):
        return json.dumps(str(value), ensure_ascii=False), False


def _join(parts: Iterable[Optional[str]]) -> Optional[str]:
    text = "".join(p for p in parts if p)
    return text or None


class _Collector:
    """Accumulates events into a final result (shared by both parser kinds)."""

    def __init__(self) -> None:
        self.content: List[str] = []
        self.reasoning: List[str] = []
        self.calls: List[ToolCall] = []
        self.diagnostics: List[Diagnostic] = []

    def add(self, events: Sequence[ParsedDelta]) -> None:
        for content, reasoning, calls, diagnostics in events:
            if content:
                self.content.append(content)
            if reasoning:
                self.reasoning.append(reasoning)
            if calls:
                self.calls.extend(calls)
            if diagnostics:
                self.diagnostics.extend(diagnostics)


class _StreamingParser:
    """Common feed/finish plumbing: subclasses implement ``_feed(delta)`` and ``_finish()`` returning events."""

    def __init__(self) -> None:
        self._collector = _Collector()
        self._finished = False

    def feed(self, delta: str) -> List[ParsedDelta]:
        """Consume the next piece of model output; return the events that became certain."""
        if self._finished:
            return [ParsedDelta(diagnostics=(Diagnostic("fed_after_finish", "text fed after finish() ignored"),))]
        if not delta:
            return []
        if type(delta) is not str:
            delta = str(delta)
        events = [e for e in self._feed(delta) if e[0] or e[1] or e[2] or e[3]]
        if events:
            self._collector.add(events)
        return events

    def finish(self) -> List[ParsedDelta]:
        """End of output: flush held text and return the final events (complete tool calls come here)."""
        if self._finished:
            return []
        self._finished = True
        events = [e for e in self._finish() if _nonempty(e)]
        self._collector.add(events)
        return events

    @property
    def finished(self) -> bool:
        return self._finished

    # subclass hooks
    def _feed(self, delta: str) -> List[ParsedDelta]:  # pragma: no cover - abstract
        raise NotImplementedError

    def _finish(self) -> List[ParsedDelta]:  # pragma: no cover - abstract
        raise NotImplementedError


def _nonempty(ev: ParsedDelta) -> bool:
    return bool(ev.content or ev.reasoning or ev.tool_calls or ev.diagnostics)


class ToolParser(_StreamingParser):
    """Base of tool-call parsers. Subclasses set ``name`` and implement ``_feed``/``_finish``.

    One instance parses one output: ``parse`` and a ``feed``…``finish`` sequence each need a fresh parser
    (``get_tool_parser`` returns a new one per call; :meth:`parse` resets the state itself).
    """

    name = "?"

    def __init__(self, tools: Any = None, **options: Any) -> None:
        super().__init__()
        self.tools = tools
        self.options = options

    def parse(self, text: str, tools: Any = None, **options: Any) -> ToolParseResult:
        """Parse a whole output. ``tools`` (ToolSpecs or OpenAI tool dicts) types schema-typed values;
        ``options`` override the parser's own for this call."""
        fresh = type(self)(tools if tools is not None else self.tools, **{**self.options, **options})
        fresh.feed(text or "")
        fresh.finish()
        return fresh.result

    @property
    def result(self) -> ToolParseResult:
        """Everything emitted so far, as a result (final once :meth:`finish` ran)."""
        c = self._collector
        return ToolParseResult(
            content=_join(c.content),
            tool_calls=tuple(c.calls),
            diagnostics=tuple(c.diagnostics),
            reasoning=_join(c.reasoning),
        )

    def snapshot(self) -> StreamSnapshot:
        """Text emitted so far and previews of calls still being generated (never affects the result)."""
        c = self._collector
        return StreamSnapshot(_join(c.content), _join(c.reasoning), tuple(self._previews()))

    def held_text(self) -> str:
        """Raw text consumed but not yet emitted (what ``finish`` still has to decide about)."""
        return ""

    def _previews(self) -> List[ToolCallPreview]:
        return []


class ReasoningParser(_StreamingParser):
    """Base of reasoning parsers: splits a model's thinking out of its answer."""

    name = "?"

    def __init__(self, **options: Any) -> None:
        super().__init__()
        self.options = options

    def parse(self, text: str, **options: Any) -> ReasoningResult:
        """Parse a whole output into ``content`` and ``reasoning`` (``options``, e.g. ``enable_thinking=False``
        or ``chat_template_kwargs={...}``, override the parser's own for this call)."""
        fresh = type(self)(**{**self.options, **options})
        fresh.feed(text or "")
        fresh.finish()
        return fresh.result

    @property
    def result(self) -> ReasoningResult:
        c = self._collector
        return ReasoningResult(_join(c.content), _join(c.reasoning), tuple(c.diagnostics))

    def snapshot(self) -> StreamSnapshot:
        c = self._collector
        return StreamSnapshot(_join(c.content), _join(c.reasoning), ())
