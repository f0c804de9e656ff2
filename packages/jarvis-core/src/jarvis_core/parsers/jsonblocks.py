"""Formats whose calls are JSON objects between tags: ``hermes`` (Qwen2.5/Qwen3, Hermes) and ``granite4``.

Both wrap each call as ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``. They differ in what
becomes content: hermes keeps only the text before the first block (text after the last block is
dropped, as vLLM does) and accepts an unterminated last block; granite4 keeps all text outside the blocks
and requires every block to be closed. Either way one bad block turns the whole output back into content.
"""

from __future__ import annotations

import json
import re
from typing import Any, List, Optional, Tuple

from jarvis_core.parsers.base import Diagnostic, ParsedDelta, ToolCallPreview, normalize_arguments
from jarvis_core.parsers.modes import PrefixTailParser, failed
from jarvis_core.parsers.scan import raw_decode

__all__ = ["Granite4Parser", "HermesParser", "call_from_object", "preview_json_call"]

START, END = "<tool_call>", "</tool_call>"

_NAME = re.compile(r'"name"\s*:\s*"((?:[^"\\]|\\.)*)"')
_ARGS = re.compile(r'"(?:arguments|parameters)"\s*:\s*')


def call_from_object(obj: Any) -> Optional[Tuple[str, str, bool]]:
    """``(name, arguments JSON, arguments valid)`` from a decoded ``{"name", "arguments"|"parameters"}``."""
    if not isinstance(obj, dict) or not isinstance(obj.get("name"), str) or not obj["name"]:
        return None
    args = obj.get("arguments", obj.get("parameters", {}))
    text, valid = normalize_arguments(args)
    return obj["name"], text, valid


def preview_json_call(text: str) -> Optional[Tuple[str, str]]:
    """``(name, raw argument text so far)`` once the name string is complete; None before that."""
    m = _NAME.search(text)
    if m is None:
        return None
    try:
        name = json.loads(f'"{m.group(1)}"')
    except ValueError:
        return None
    a = _ARGS.search(text)
    if a is None:
        return name, ""
    rest = text[a.end() :]
    try:
        _, end = raw_decode(rest)
        return name, rest[:end]
    except ValueError:
        return name, rest.rstrip()


def split_blocks(held: str, *, require_close: bool) -> Tuple[List[str], List[str], bool]:
    """``(block bodies, text outside blocks, ok)``; ``ok`` is False when a block is unterminated but must not be."""
    bodies: List[str] = []
    outside: List[str] = []
    pos = 0
    while True:
        i = held.find(START, pos)
        if i == -1:
            outside.append(held[pos:])
            return bodies, outside, True
        outside.append(held[pos:i])
        j = held.find(END, i + len(START))
        if j == -1:
            bodies.append(held[i + len(START) :])
            return bodies, outside, not require_close
        bodies.append(held[i + len(START) : j])
        pos = j + len(END)


class _JsonBlockParser(PrefixTailParser):
    start_markers = (START,)
    require_close = False
    keep_outside_text = False

    def _decide(self, held: str) -> List[ParsedDelta]:
        bodies, outside, ok = split_blocks(held, require_close=self.require_close)
        if not ok:
            return failed(held, "unterminated_call", f"a {START} block has no {END}; output kept as content")
        calls, notes = [], []
        for index, body in enumerate(bodies):
            try:
                obj = json.loads(body)
            except (ValueError, RecursionError) as exc:
                return failed(held, "invalid_json", f"tool call {index} is not valid JSON ({exc}); output kept as content")
            parsed = call_from_object(obj)
            if parsed is None:
                return failed(held, "missing_name", f"tool call {index} has no 'name'; output kept as content")
            name, args, valid = parsed
            if not valid:
                notes.append(Diagnostic("invalid_arguments", f"arguments of {name!r} are not valid JSON"))
            calls.append(self.calls.call(index, name, args))
        rest = "".join(outside)
        if self.keep_outside_text:
            return [ParsedDelta(content=rest, tool_calls=tuple(calls), diagnostics=tuple(notes))]
        if rest.strip():
            notes.append(Diagnostic("text_dropped", f"{len(rest)} characters outside the tool calls were dropped"))
        return [ParsedDelta(tool_calls=tuple(calls), diagnostics=tuple(notes))]

    def _preview(self, held: str) -> List[ToolCallPreview]:
        bodies, _, _ = split_blocks(held, require_close=False)
        out = []
        for index, body in enumerate(bodies):
            found = preview_json_call(body)
            if found is None:
                break
            out.append(self.calls.preview(index, *found))
        return out


class HermesParser(_JsonBlockParser):
    """``hermes``: ``<tool_call>{json}</tool_call>`` blocks; content is the text before the first block."""

    name = "hermes"


class Granite4Parser(_JsonBlockParser):
    """``granite4``: hermes-like blocks, every block closed; content is all the text outside the blocks."""

    name = "granite4"
    require_close = True
    keep_outside_text = True
