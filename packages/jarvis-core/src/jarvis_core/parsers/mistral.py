"""``mistral``: calls after the ``[TOOL_CALLS]`` token, in either tokenizer generation.

- before v11: ``content[TOOL_CALLS] [{"name": …, "arguments": {…}}, …]`` (a JSON array);
- v11 and later: ``content[TOOL_CALLS]name[ARGS]{…}[TOOL_CALLS]name2[ARGS]{…}`` (optionally
  ``name[CALL_ID]id[ARGS]{…}``). Arguments that are not valid JSON are passed through verbatim, as vLLM does
  on purpose, and reported in a diagnostic.

Content is the text before the token. If nothing after the token parses, the text after the token (without
the token, stripped) is added to the content, like vLLM's pre-v11 failure path; the text before the token
is kept as well (it has already been streamed). Tool-call ids are 9 alphanumerics (Mistral's rule).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, List, Optional, Tuple

from jarvis_core.parsers.base import Diagnostic, ParsedDelta, normalize_arguments
from jarvis_core.parsers.jsonblocks import call_from_object
from jarvis_core.parsers.modes import PrefixTailParser
from jarvis_core.parsers.scan import raw_decode

if TYPE_CHECKING:
    from jarvis_core.types import ToolCall

__all__ = ["MistralParser"]

TOKEN, ARGS, CALL_ID = "[TOOL_CALLS]", "[ARGS]", "[CALL_ID]"


def _arguments(text: str) -> tuple[Any, ...]:
    """``(arguments string, diagnostics)``: normalized JSON when valid, else the raw text verbatim."""
    try:
        obj, end = raw_decode(text)
    except ValueError:
        return text, (Diagnostic("invalid_arguments", "arguments are not valid JSON; passed through verbatim"),)
    notes: Tuple[Diagnostic, ...] = ()
    if text[end:].strip():
        notes = (Diagnostic("text_dropped", "text after the arguments was dropped"),)
    return normalize_arguments(obj)[0], notes


class MistralParser(PrefixTailParser):
    """``mistral``."""

    name = "mistral"
    start_markers = (TOKEN,)
    id_style = "mistral"

    def _decide(self, held: str) -> List[ParsedDelta]:
        after = held[len(TOKEN) :]
        events: Optional[List[ParsedDelta]]
        if after.lstrip().startswith("["):
            events = self._legacy(after)
        else:
            events = self._v11(held)
        if events is not None:
            return events
        text = after.replace(TOKEN, "").strip()
        return [ParsedDelta(content=text, diagnostics=(Diagnostic("no_valid_call", "no parsable call after [TOOL_CALLS]; kept as content"),))]

    def _legacy(self, after: str) -> Optional[List[ParsedDelta]]:
        try:
            items, end = raw_decode(after)
        except ValueError:
            return None
        if not isinstance(items, list) or not items:
            return None
        calls: List[ToolCall] = []
        for obj in items:
            parsed = call_from_object(obj)
            if parsed is None:
                return None
            calls.append(self.calls.call(len(calls), parsed[0], parsed[1]))
        notes = (Diagnostic("text_dropped", "text after the call array was dropped"),) if after[end:].strip() else ()
        return [ParsedDelta(tool_calls=tuple(calls), diagnostics=notes)]

    def _v11(self, held: str) -> Optional[List[ParsedDelta]]:
        calls: List[ToolCall] = []
        notes: List[Diagnostic] = []
        for segment in held.split(TOKEN)[1:]:
            if ARGS in segment:
                head, args_text = segment.split(ARGS, 1)
            elif "{" in segment:
                head, args_text = segment[: segment.find("{")], segment[segment.find("{") :]
            else:
                notes.append(Diagnostic("invalid_call", f"segment {segment[:40]!r} has no [ARGS]; skipped"))
                continue
            call_id = None
            if CALL_ID in head:
                head, call_id = head.split(CALL_ID, 1)
                call_id = call_id.strip() or None
            name = head.strip()
            if not name or any(c.isspace() for c in name):
                notes.append(Diagnostic("invalid_name", f"tool name {name[:40]!r} rejected"))
                continue
            args, more = _arguments(args_text)
            notes.extend(more)
            calls.append(self.calls.call(len(calls), name, args, call_id))
        if not calls:
            return None
        return [ParsedDelta(tool_calls=tuple(calls), diagnostics=tuple(notes))]
