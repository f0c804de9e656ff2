"""``acme_call``: Acme models write a tool call as ``<call>{"name": ..., "arguments": {...}}</call>`` in text."""

from __future__ import annotations

import json
from typing import Any, List

from jarvis_core.parsers.base import Diagnostic, ParsedDelta, ToolParser, new_call_id, normalize_arguments
from jarvis_core.types import ToolCall

OPEN, CLOSE = "<call>", "</call>"


class AcmeCallParser(ToolParser):
    """Text outside ``<call>`` blocks is content, emitted as soon as it is certain; each block becomes one
    tool call, returned by ``finish()`` (complete calls come at the end of the output). A block that is not a
    JSON object with a ``name`` stays content, with a diagnostic (a parser never raises on model output)."""

    name = "acme_call"

    def __init__(self, tools: Any = None, **options: Any) -> None:
        super().__init__(tools, **options)
        self._buffer = ""  # text not emitted yet: a possible start of "<call>", or an open block
        self._scanned = 0  # how far an open block was searched for "</call>" (keeps parsing linear)
        self._calls: List[ParsedDelta] = []  # complete calls, handed out by finish() as the contract says

    def _feed(self, delta: str) -> List[ParsedDelta]:
        self._buffer += delta
        events: List[ParsedDelta] = []
        while True:
            start = self._buffer.find(OPEN)
            if start < 0:
                keep = _partial_suffix(self._buffer, OPEN)
                text, self._buffer = self._buffer[: len(self._buffer) - keep], self._buffer[len(self._buffer) - keep:]
                if text:
                    events.append(ParsedDelta(content=text))
                return events
            if start:
                events.append(ParsedDelta(content=self._buffer[:start]))
                self._buffer = self._buffer[start:]
            end = self._buffer.find(CLOSE, max(len(OPEN), self._scanned - len(CLOSE)))
            if end < 0:
                self._scanned = len(self._buffer)
                return events  # the block is still arriving
            self._scanned = 0
            block, self._buffer = self._buffer[: end + len(CLOSE)], self._buffer[end + len(CLOSE):]
            parsed = _call(block)
            if parsed.tool_calls:
                self._calls.append(parsed)
            else:
                events.append(parsed)  # not a call after all: content, with its diagnostic

    def _finish(self) -> List[ParsedDelta]:
        rest, self._buffer = self._buffer, ""
        events: List[ParsedDelta] = []
        if rest.startswith(OPEN):
            events.append(ParsedDelta(content=rest, diagnostics=(Diagnostic("unclosed_call", "a <call> block never closed"),)))
        elif rest:
            events.append(ParsedDelta(content=rest))
        return events + self._calls

    def held_text(self) -> str:
        return self._buffer


def _partial_suffix(text: str, marker: str) -> int:
    """Length of the longest end of ``text`` that is a start of ``marker`` (held back until it is certain)."""
    for size in range(min(len(marker) - 1, len(text)), 0, -1):
        if marker.startswith(text[-size:]):
            return size
    return 0


def _call(block: str) -> ParsedDelta:
    body = block[len(OPEN): -len(CLOSE)]
    try:
        data = json.loads(body)
    except ValueError:
        data = None
    if not isinstance(data, dict) or not isinstance(data.get("name"), str):
        return ParsedDelta(content=block, diagnostics=(Diagnostic("bad_call", "a <call> block is not {name, arguments}"),))
    arguments, _valid = normalize_arguments(data.get("arguments", {}))
    return ParsedDelta(tool_calls=(ToolCall(new_call_id(), data["name"], arguments),))
