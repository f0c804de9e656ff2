"""``kimi_k2``: Kimi K2's call section.

    content<|tool_calls_section_begin|><|tool_call_begin|>functions.NAME:IDX<|tool_call_argument_begin|>{args}
    <|tool_call_end|>…<|tool_calls_section_end|>

The ``functions.NAME:IDX`` string is the tool-call id; the name is the part before ``:`` after the last
``.``. The singular ``<|tool_call_section_begin|>`` spelling is accepted too. Arguments pass through.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, List

from jarvis_core.parsers.base import Diagnostic, ParsedDelta, normalize_arguments
from jarvis_core.parsers.modes import PrefixTailParser, failed
from jarvis_core.parsers.scan import earliest

if TYPE_CHECKING:
    from jarvis_core.types import ToolCall

__all__ = ["KimiK2Parser"]

BEGINS = ("<|tool_calls_section_begin|>", "<|tool_call_section_begin|>")
ENDS = ("<|tool_calls_section_end|>", "<|tool_call_section_end|>")
CALL, ARG, CALL_END = "<|tool_call_begin|>", "<|tool_call_argument_begin|>", "<|tool_call_end|>"


class KimiK2Parser(PrefixTailParser):
    """``kimi_k2``."""

    name = "kimi_k2"
    start_markers = BEGINS

    def _decide(self, held: str) -> List[ParsedDelta]:
        start = len(BEGINS[0]) if held.startswith(BEGINS[0]) else len(BEGINS[1])
        section = held[start:]
        end, _ = earliest(section, ENDS)
        if end != -1:
            section = section[:end]
        calls: List[ToolCall] = []
        notes: List[Diagnostic] = []
        pos = section.find(CALL)
        while pos != -1:
            close = section.find(CALL_END, pos)
            if close == -1:
                notes.append(Diagnostic("unfinished_call", "the last tool call is not finished; dropped"))
                break
            inner = section[pos + len(CALL) : close]
            pos = section.find(CALL, close)
            arg = inner.find(ARG)
            call_id, args_text = (inner, "{}") if arg == -1 else (inner[:arg], inner[arg + len(ARG) :])
            call_id = call_id.strip()
            name = call_id.split(":")[0].split(".")[-1].strip()
            if not name:
                notes.append(Diagnostic("invalid_call", "a tool call has no name; skipped"))
                continue
            args, valid = normalize_arguments(args_text.strip() or "{}")
            if not valid:
                notes.append(Diagnostic("invalid_arguments", f"arguments of {name!r} are not valid JSON"))
            calls.append(self.calls.call(len(calls), name, args, call_id))
        if not calls:
            out = failed(held, "no_valid_call", "no complete tool call in the section; kept as content")
            return [ParsedDelta(content=out[0].content, diagnostics=out[0].diagnostics + tuple(notes))]
        return [ParsedDelta(tool_calls=tuple(calls), diagnostics=tuple(notes))]
