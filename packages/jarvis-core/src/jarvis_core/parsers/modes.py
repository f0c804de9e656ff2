"""The two streaming shapes shared by the tool-call formats.

- :class:`PrefixTailParser`: text before the format's start marker is content and streams out at once
  (minus a possibly-partial marker); from the marker on, everything is held and decided in ``_decide`` at
  the end (the formats are all-or-nothing, so no call is certain before then).
- :class:`SectionParser`: a :class:`PrefixTailParser` whose held section holds calls each between two
  tokens (DeepSeek, Kimi K2).
- :class:`LeadingParser`: the output is a tool call only if it *opens* with one of the format's openers
  (after whitespace); otherwise it is all content and streams out unchanged.

Subclasses implement ``_decide(held) -> list[ParsedDelta]`` on the held text.
"""

from __future__ import annotations

from typing import Any, List, Optional, Sequence, Tuple

from jarvis_core.parsers.base import Diagnostic, ParsedDelta, ToolCallPreview, ToolParser, normalize_arguments
from jarvis_core.parsers.scan import LeadingGate, MarkerWatcher
from jarvis_core.parsers.schema import tool_schemas
from jarvis_core.types import ToolCall, new_call_id

__all__ = ["CallBuilder", "LeadingParser", "PrefixTailParser", "SectionParser"]


class CallBuilder:
    """Turns parsed ``(name, arguments)`` into :class:`ToolCall` objects with unique, stable ids."""

    def __init__(self, id_style: str = "openai") -> None:
        self.id_style = id_style
        self._ids: List[str] = []
        self._used: set[Any] = set()

    def id_for(self, index: int, preferred: Optional[str] = None) -> str:
        while len(self._ids) <= index:
            self._ids.append("")
        if not self._ids[index]:
            candidate = preferred or new_call_id(self.id_style)
            while candidate in self._used:  # model-supplied ids may repeat
                candidate = f"{preferred}#{len(self._used)}" if preferred else new_call_id(self.id_style)
            self._ids[index] = candidate
            self._used.add(candidate)
        return self._ids[index]

    def call(self, index: int, name: str, arguments: str, preferred_id: Optional[str] = None) -> ToolCall:
        return ToolCall(id=self.id_for(index, preferred_id), name=name, arguments=arguments)

    def preview(self, index: int, name: str, arguments: str, preferred_id: Optional[str] = None) -> ToolCallPreview:
        return ToolCallPreview(index=index, id=self.id_for(index, preferred_id), name=name, arguments=arguments)


def failed(text: str, code: str, message: str) -> List[ParsedDelta]:
    """The all-or-nothing failure: the held text goes back to content, with a diagnostic."""
    return [ParsedDelta(content=text, diagnostics=(Diagnostic(code, message),))]


class _HoldingParser(ToolParser):
    """What both shapes share: the tools' schemas, the call ids, and the held text (``None``: nothing held
    yet), decided at the end by the subclass's ``_decide``."""

    id_style = "openai"

    def __init__(self, tools: Any = None, **options: Any) -> None:
        super().__init__(tools, **options)
        self.schemas = tool_schemas(tools)
        self.calls = CallBuilder(self.id_style)
        self._held_parts: Optional[List[str]] = None

    def _held(self) -> str:
        if self._held_parts is None:
            return ""
        if len(self._held_parts) > 1:
            self._held_parts[:] = ["".join(self._held_parts)]
        return self._held_parts[0] if self._held_parts else ""

    def _previews(self) -> List[ToolCallPreview]:
        return self._preview(self._held()) if self._held_parts is not None else []

    # subclass hooks
    def _decide(self, held: str) -> List[ParsedDelta]:  # pragma: no cover - abstract
        raise NotImplementedError

    def _preview(self, held: str) -> List[ToolCallPreview]:
        return []


class PrefixTailParser(_HoldingParser):
    """Content until the first start marker; the rest is held and decided at the end."""

    start_markers: Sequence[str] = ()

    def __init__(self, tools: Any = None, **options: Any) -> None:
        super().__init__(tools, **options)
        self._watch = MarkerWatcher(self.start_markers)

    def _feed(self, delta: str) -> List[ParsedDelta]:
        if self._held_parts is not None:
            self._held_parts.append(delta)
            return []
        safe, marker, rest = self._watch.feed(delta)
        if marker is not None:
            self._held_parts = [rest]
        return [ParsedDelta(content=safe)] if safe else []

    def _finish(self) -> List[ParsedDelta]:
        if self._held_parts is None:
            tail = self._watch.flush()
            return [ParsedDelta(content=tail)] if tail else []
        return self._decide(self._held())

    def held_text(self) -> str:
        return self._held() if self._held_parts is not None else self._watch.held


class SectionParser(PrefixTailParser):
    """Calls each between ``call_begin`` and ``call_end`` in a section: ``_section`` cuts the section out of
    the held text, ``_read_call`` reads one call's inner text as ``(name, arguments, id or None)``, or
    ``None`` to skip it (noting why). Arguments that are not JSON pass through, noted; an unfinished last
    call is dropped, noted; no complete call at all: the held text goes back to content."""

    call_begin = ""
    call_end = ""

    def _section(self, held: str) -> str:  # pragma: no cover - abstract
        raise NotImplementedError

    def _read_call(self, inner: str, notes: List[Diagnostic]) -> Optional[Tuple[str, str, Optional[str]]]:
        raise NotImplementedError  # pragma: no cover - abstract

    def _decide(self, held: str) -> List[ParsedDelta]:
        section = self._section(held)
        calls: List[ToolCall] = []
        notes: List[Diagnostic] = []
        pos = section.find(self.call_begin)
        while pos != -1:
            close = section.find(self.call_end, pos)
            if close == -1:
                notes.append(Diagnostic("unfinished_call", "the last tool call is not finished; dropped"))
                break
            read = self._read_call(section[pos + len(self.call_begin) : close], notes)
            pos = section.find(self.call_begin, close)
            if read is None:
                continue
            name, args_text, call_id = read
            if not name:
                notes.append(Diagnostic("invalid_call", "a tool call has no name; skipped"))
                continue
            args, valid = normalize_arguments(args_text or "{}")
            if not valid:
                notes.append(Diagnostic("invalid_arguments", f"arguments of {name!r} are not valid JSON"))
            calls.append(self.calls.call(len(calls), name, args, call_id))
        if not calls:
            out = failed(held, "no_valid_call", "no complete tool call in the section; kept as content")
            return [ParsedDelta(content=out[0].content, diagnostics=out[0].diagnostics + tuple(notes))]
        return [ParsedDelta(tool_calls=tuple(calls), diagnostics=tuple(notes))]


class LeadingParser(_HoldingParser):
    """A tool call only when the output opens with one of ``openers``; otherwise streamed content."""

    openers: Sequence[str] = ()

    def __init__(self, tools: Any = None, **options: Any) -> None:
        super().__init__(tools, **options)
        self._gate: Optional[LeadingGate] = LeadingGate(self.openers)

    def _feed(self, delta: str) -> List[ParsedDelta]:
        if self._held_parts is not None:
            self._held_parts.append(delta)
            return []
        if self._gate is None:
            return [ParsedDelta(content=delta)]
        decided = self._gate.feed(delta)
        if decided is None:
            return []
        opener, text = decided
        self._gate = None
        if opener is None:
            return [ParsedDelta(content=text)]
        self._held_parts = [text]
        return []

    def _finish(self) -> List[ParsedDelta]:
        if self._held_parts is not None:
            return self._decide(self._held())
        if self._gate is not None:
            text = self._gate.flush()
            return [ParsedDelta(content=text)] if text else []
        return []

    def held_text(self) -> str:
        if self._held_parts is not None:
            return self._held()
        return self._gate.peek() if self._gate is not None else ""
