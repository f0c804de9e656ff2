"""Formats whose output *is* JSON: ``llama3_json`` (Llama 3.1 to 3.3, also ``llama4_json``) and ``granite``
(Granite 3.x).

``llama3_json``: ``{"name": …, "parameters"|"arguments": {…}}`` objects, optionally after
``<|python_tag|>``, separated by ``;``. On a whole output it follows vLLM: every top-level ``{`` must start a
call, any bad one makes the whole output content, and text around the calls is dropped. Because a ``{``
may come at any point, that rule can only be decided at the end, so a stream holds everything back. With
``stream_friendly=True`` (what :class:`~jarvis_core.defaults.ModelAdapter` uses) it follows vLLM's
*streaming* rule instead: tool calls only when the output opens with ``{`` or ``<|python_tag|>``, so plain
answers stream without delay.

``granite``: the output opens with ``<|tool_call|>`` or ``<tool_call>`` (or directly ``[``) followed by a
JSON array of calls; anything else is content.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, List

from jarvis_core.parsers.base import Diagnostic, ParsedDelta, ToolCallPreview
from jarvis_core.parsers.jsonblocks import call_from_object, preview_json_call
from jarvis_core.parsers.modes import LeadingParser, failed
from jarvis_core.parsers.scan import raw_decode

if TYPE_CHECKING:
    from jarvis_core.types import ToolCall

__all__ = ["GraniteParser", "Llama3JsonParser"]

PYTHON_TAG = "<|python_tag|>"


class Llama3JsonParser(LeadingParser):
    """``llama3_json``."""

    name = "llama3_json"
    openers = ("{", PYTHON_TAG)

    def _feed(self, delta: str) -> List[ParsedDelta]:
        if self.options.get("stream_friendly"):
            return super()._feed(delta)
        if self._held_parts is None:
            self._held_parts = []
            self._gate = None
        self._held_parts.append(delta)
        return []

    def _decide(self, held: str) -> List[ParsedDelta]:
        tag = held.find(PYTHON_TAG)
        pos = held.find("{", tag + len(PYTHON_TAG) if tag != -1 else 0)
        if pos == -1:
            if tag == -1:
                return [ParsedDelta(content=held)]
            return failed(held, "no_call", "<|python_tag|> is not followed by a JSON call; output kept as content")
        calls: List[ToolCall] = []
        notes: List[Diagnostic] = []
        while pos != -1:
            try:
                obj, end = raw_decode(held, pos)
            except ValueError as exc:
                return failed(held, "invalid_json", f"text at offset {pos} is not a JSON call ({exc}); kept as content")
            parsed = call_from_object(obj)
            if parsed is None:
                return failed(held, "missing_name", "a JSON object has no 'name'; output kept as content")
            name, args, valid = parsed
            if not valid:
                notes.append(Diagnostic("invalid_arguments", f"arguments of {name!r} are not valid JSON"))
            calls.append(self.calls.call(len(calls), name, args))
            pos = held.find("{", end)
        return [ParsedDelta(tool_calls=tuple(calls), diagnostics=tuple(notes))]

    def _preview(self, held: str) -> List[ToolCallPreview]:
        found = preview_json_call(held)
        return [self.calls.preview(0, *found)] if found else []


class GraniteParser(LeadingParser):
    """``granite`` (3.x): ``<|tool_call|>[{…}, …]`` at the start of the output."""

    name = "granite"
    openers = ("<|tool_call|>", "<tool_call>", "[")

    def _decide(self, held: str) -> List[ParsedDelta]:
        body = held.strip()
        for token in ("<|tool_call|>", "<tool_call>"):
            if body.startswith(token):
                body = body[len(token) :].lstrip()
                break
        try:
            items = json.loads(body)
        except (ValueError, RecursionError) as exc:
            return failed(held, "invalid_json", f"tool-call array is not valid JSON ({exc}); kept as content")
        if not isinstance(items, list) or not items:
            return failed(held, "not_a_call_list", "expected a non-empty JSON array of calls; kept as content")
        calls: List[ToolCall] = []
        for obj in items:
            parsed = call_from_object(obj)
            if parsed is None:
                return failed(held, "missing_name", "a call has no 'name'; output kept as content")
            calls.append(self.calls.call(len(calls), parsed[0], parsed[1]))
        return [ParsedDelta(tool_calls=tuple(calls))]
