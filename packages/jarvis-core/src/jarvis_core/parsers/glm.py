"""``glm45`` / ``glm47``: GLM-4.5/4.6 and GLM-4.7/5 calls.

    content<tool_call>NAME
    <arg_key>k</arg_key>
    <arg_value>v</arg_value>
    </tool_call>

GLM-4.7 writes the same without newlines. A ``</tool_call>`` is required. Values are typed: a schema type
of ``string`` keeps the raw text; anything else (or no schema) is decoded as JSON, then as a Python
literal, and otherwise stays raw text — so without a schema ``"94107"`` becomes the number 94107, as in
vLLM. A call with no arguments gives ``{}``. Content is the text before the first call.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, List

from jarvis_core.parsers.base import Diagnostic, ParsedDelta
from jarvis_core.parsers.modes import PrefixTailParser, failed
from jarvis_core.parsers.schema import convert_glm_value

if TYPE_CHECKING:
    from jarvis_core.types import ToolCall

__all__ = ["GlmParser"]

START, END = "<tool_call>", "</tool_call>"
KEY, KEY_END, VAL, VAL_END = "<arg_key>", "</arg_key>", "<arg_value>", "</arg_value>"


def parse_glm_body(body: str) -> tuple[Any, ...]:
    """``(name, [(key, raw value)], problems)`` of one call body."""
    first = body.find(KEY)
    name = (body if first == -1 else body[:first]).strip()
    pairs, problems = [], []
    pos = first
    while pos != -1:
        k_end = body.find(KEY_END, pos)
        v_start = body.find(VAL, k_end) if k_end != -1 else -1
        v_end = body.find(VAL_END, v_start) if v_start != -1 else -1
        if v_end == -1:
            problems.append("an argument is not finished")
            break
        pairs.append((body[pos + len(KEY) : k_end].strip(), body[v_start + len(VAL) : v_end]))
        pos = body.find(KEY, v_end)
    return name, pairs, problems


class GlmParser(PrefixTailParser):
    """``glm45`` (alias ``glm47``)."""

    name = "glm45"
    start_markers = (START,)

    def _decide(self, held: str) -> List[ParsedDelta]:
        calls: List[ToolCall] = []
        notes: List[Diagnostic] = []
        pos = 0
        while True:
            start = held.find(START, pos)
            if start == -1:
                break
            end = held.find(END, start)
            if end == -1:
                notes.append(Diagnostic("unterminated_call", f"a {START} has no {END}; ignored"))
                break
            name, pairs, problems = parse_glm_body(held[start + len(START) : end])
            pos = end + len(END)
            notes.extend(Diagnostic("invalid_call", f"{name}: {p}") for p in problems)
            if not name or any(c.isspace() for c in name):
                notes.append(Diagnostic("invalid_name", f"tool name {name[:40]!r} rejected"))
                continue
            props = self.schemas.get(name, {})
            args = {k: convert_glm_value(v, props.get(k)) for k, v in pairs}
            calls.append(self.calls.call(len(calls), name, json.dumps(args, ensure_ascii=False)))
        if not calls:
            out = failed(held, "no_valid_call", "no complete <tool_call> block; kept as content")
            return [ParsedDelta(content=out[0].content, diagnostics=out[0].diagnostics + tuple(notes))]
        return [ParsedDelta(tool_calls=tuple(calls), diagnostics=tuple(notes))]
