"""``kimi_k2``: Kimi K2's call section.

    content<|tool_calls_section_begin|><|tool_call_begin|>functions.NAME:IDX<|tool_call_argument_begin|>{args}
    <|tool_call_end|>…<|tool_calls_section_end|>

The ``functions.NAME:IDX`` string is the tool-call id; the name is the part before ``:`` after the last
``.``. The singular ``<|tool_call_section_begin|>`` spelling is accepted too. Arguments pass through.
"""

from __future__ import annotations

from typing import List, Optional, Tuple

from jarvis_core.parsers.base import Diagnostic
from jarvis_core.parsers.modes import SectionParser
from jarvis_core.parsers.scan import earliest

__all__ = ["KimiK2Parser"]

BEGINS = ("<|tool_calls_section_begin|>", "<|tool_call_section_begin|>")
ENDS = ("<|tool_calls_section_end|>", "<|tool_call_section_end|>")
CALL, ARG, CALL_END = "<|tool_call_begin|>", "<|tool_call_argument_begin|>", "<|tool_call_end|>"


class KimiK2Parser(SectionParser):
    """``kimi_k2``."""

    name = "kimi_k2"
    start_markers = BEGINS
    call_begin, call_end = CALL, CALL_END

    def _section(self, held: str) -> str:
        section = held[len(BEGINS[0]) if held.startswith(BEGINS[0]) else len(BEGINS[1]) :]
        end, _ = earliest(section, ENDS)
        return section if end == -1 else section[:end]

    def _read_call(self, inner: str, notes: List[Diagnostic]) -> Optional[Tuple[str, str, Optional[str]]]:
        arg = inner.find(ARG)
        call_id, args_text = (inner, "{}") if arg == -1 else (inner[:arg], inner[arg + len(ARG) :])
        call_id = call_id.strip()
        return call_id.split(":")[0].split(".")[-1].strip(), args_text.strip(), call_id
