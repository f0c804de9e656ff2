"""``qwen3_xml`` / ``qwen3_coder``: XML-ish calls of Qwen3-Coder and Qwen3.5.

    <tool_call>
    <function=NAME>
    <parameter=P>
    value
    </parameter>
    </function>
    </tool_call>

Values are raw text with one leading and one trailing newline removed, typed by the request's JSON schema
(without a schema they stay strings). Recovery rules follow vLLM: a ``<parameter=NAME>`` at a line start
(NAME in the schema) closes an unterminated parameter, a missing ``</tool_call>`` is tolerated, and a
``</parameter>`` or ``</function>`` counts only when what follows it is structural, so the same text inside
a value (code, XML) is literal. Every scan is one pass over the held text.
"""

from __future__ import annotations

import bisect
import json
import re
from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Optional, Tuple

from jarvis_core.parsers.base import Diagnostic, ParsedDelta, ToolCallPreview
from jarvis_core.parsers.modes import PrefixTailParser, failed
from jarvis_core.parsers.schema import convert_qwen_value

if TYPE_CHECKING:
    from jarvis_core.types import ToolCall

__all__ = ["Qwen3XmlParser"]

FUNC, PARAM = "<function=", "<parameter="
PARAM_END, FUNC_END = "</parameter>", "</function>"

_AFTER_PARAM_END = re.compile(r"\s*(?:<parameter=|</function>|</tool_call>|\Z)")
_AFTER_FUNC_END = re.compile(r"\s*(?:</tool_call>|<tool_call>|<function=|\Z)")
_LINE_PARAM = re.compile(r"\n<parameter=([^>\n]*)>")
_BAD_NAME = re.compile(r"[{}<>\"'\s]")


def _strip_one_newline(value: str) -> str:
    if value.startswith("\n"):
        value = value[1:]
    if value.endswith("\n"):
        value = value[:-1]
    return value


def _structural(text: str, tag: str, follower: re.Pattern[str]) -> List[int]:
    out, pos = [], text.find(tag)
    while pos != -1:
        if follower.match(text, pos + len(tag)):
            out.append(pos)
        pos = text.find(tag, pos + len(tag))
    return out


def _next(positions: List[int], start: int, stop: int) -> int:
    i = bisect.bisect_left(positions, start)
    return positions[i] if i < len(positions) and positions[i] < stop else -1


def parse_function_body(body: str, props: Optional[Mapping[str, Any]]) -> Tuple[Dict[str, Any], List[str]]:
    """Parameters of one function body as raw strings, in order, and any problems noticed."""
    closes = _structural(body, PARAM_END, _AFTER_PARAM_END)
    line_params = [(m.start() + 1, m.group(1).strip()) for m in _LINE_PARAM.finditer(body)]
    implicit = [pos for pos, name in line_params if props is None or name in props]
    values: Dict[str, Any] = {}
    problems: List[str] = []
    pos = body.find(PARAM)
    while pos != -1:
        gt = body.find(">", pos + len(PARAM))
        if gt == -1:
            problems.append("unfinished <parameter= tag")
            break
        name = body[pos + len(PARAM) : gt].strip()
        start = gt + 1
        close = _next(closes, start, len(body) + 1)
        stop = close if close != -1 else len(body)
        nxt = _next(implicit, start, stop)
        if nxt != -1:
            end, pos = nxt, nxt
        elif close != -1:
            end, pos = close, body.find(PARAM, close + len(PARAM_END))
        else:
            end, pos = len(body), -1
            problems.append(f"parameter {name!r} is not closed")
        values[name] = _strip_one_newline(body[start:end])
    return values, problems


def split_functions(held: str) -> List[Tuple[str, Optional[str]]]:
    """``(raw name, body)`` for each ``<function=…>`` in ``held``; body None when the tag is unfinished."""
    starts: List[int] = []
    pos = held.find(FUNC)
    while pos != -1:
        starts.append(pos)
        pos = held.find(FUNC, pos + len(FUNC))
    ends = _structural(held, FUNC_END, _AFTER_FUNC_END)
    out: List[Tuple[str, Optional[str]]] = []
    for i, start in enumerate(starts):
        region_end = starts[i + 1] if i + 1 < len(starts) else len(held)
        gt = held.find(">", start + len(FUNC), region_end)
        if gt == -1:
            out.append((held[start + len(FUNC) : region_end], None))
            continue
        end = _next(ends, gt + 1, region_end)
        if end == -1:
            tc = held.rfind("</tool_call>", gt + 1, region_end)
            end = tc if tc != -1 else region_end
        out.append((held[start + len(FUNC) : gt], held[gt + 1 : end]))
    return out


class Qwen3XmlParser(PrefixTailParser):
    """``qwen3_xml`` (alias ``qwen3_coder``)."""

    name = "qwen3_xml"
    start_markers = ("<tool_call>", FUNC)

    def _decide(self, held: str) -> List[ParsedDelta]:
        calls: List[ToolCall] = []
        notes: List[Diagnostic] = []
        for raw_name, body in split_functions(held):
            name = raw_name.strip()
            if body is None:
                notes.append(Diagnostic("unfinished_call", f"function tag {raw_name[:60]!r} is not finished"))
                continue
            if not name or _BAD_NAME.search(name):
                notes.append(Diagnostic("invalid_name", f"function name {raw_name[:60]!r} rejected"))
                continue
            has_schema = name in self.schemas
            props = self.schemas.get(name) if has_schema else None
            values, problems = parse_function_body(body, props)
            notes.extend(Diagnostic("recovered", f"{name}: {p}") for p in problems)
            args = {k: convert_qwen_value(v, (props or {}).get(k), has_schema) for k, v in values.items()}
            calls.append(self.calls.call(len(calls), name, json.dumps(args, ensure_ascii=False)))
        if not calls:
            out = failed(held, "no_valid_call", "no parsable <function=…> call; output kept as content")
            return [ParsedDelta(content=out[0].content, diagnostics=out[0].diagnostics + tuple(notes))]
        return [ParsedDelta(tool_calls=tuple(calls), diagnostics=tuple(notes))]

    def _preview(self, held: str) -> List[ToolCallPreview]:
        out = []
        for index, (raw_name, body) in enumerate(split_functions(held)):
            if body is None:
                break
            props = self.schemas.get(raw_name.strip())
            values, _ = parse_function_body(body, props)
            out.append(self.calls.preview(index, raw_name.strip(), json.dumps(values, ensure_ascii=False)))
        return out
