"""Shared building blocks for reading model output in ``parse_response``.

Text-tag families follow one skeleton (:func:`parse_tagged_calls`): strip model noise (thinking, scratch
pads), pull out *every* tagged call and decode each body, and if any decoded, reply with those calls and
an empty message (prose around the calls is dropped). Otherwise: text that is already Jarvis JSON passes
through (``None``), a bare ``{"name", "arguments"}`` object or a fenced one becomes a call, and plain
text becomes the message. Nothing here raises on model output.
"""

from __future__ import annotations

import re
from typing import Any, Dict, FrozenSet, List, Mapping, Optional, Tuple

from jarvis_core.prompts.jarvis_json import JarvisReply, JarvisToolCall, decode_object

__all__ = [
    "ARRAY_PARAMS",
    "fenced_body",
    "normalize_array_params",
    "parse_tagged_calls",
    "strip_blocks",
    "strip_think",
    "tagged_bodies",
]

#: Parameters that are always lists: a single string value is wrapped in a one-element list.
ARRAY_PARAMS: FrozenSet[str] = frozenset({"resolved_datetimes"})

_FENCE = re.compile(r"```[ \t]*(?:json|JSON)?[ \t]*\r?\n?(.*?)\r?\n?[ \t]*```", re.DOTALL)


def strip_think(text: str, open_tag: str = "<think>", close_tag: str = "</think>") -> str:
    """``text`` without thinking: closed blocks removed, an unclosed block removed to the end, and text before
    an end tag with no opening tag removed too (the chat template opened the block in the prompt)."""
    out = strip_blocks(text, open_tag, close_tag)
    first_close = out.find(close_tag)
    if first_close != -1 and open_tag not in out[:first_close]:
        out = out[first_close + len(close_tag):]
    start = out.find(open_tag)
    if start != -1:
        out = out[:start]
    return out.strip()


def strip_blocks(text: str, open_tag: str, close_tag: str) -> str:
    """``text`` with every closed ``open_tag…close_tag`` block removed (an unclosed one is left)."""
    parts: List[str] = []
    pos = 0
    while True:
        i = text.find(open_tag, pos)
        j = text.find(close_tag, i + len(open_tag)) if i != -1 else -1
        if i == -1 or j == -1:
            parts.append(text[pos:])
            return "".join(parts)
        parts.append(text[pos:i])
        pos = j + len(close_tag)


def tagged_bodies(text: str, open_tag: str, close_tag: str) -> Tuple[List[str], Optional[str]]:
    """``(closed block bodies, body of an unclosed last block or None)``, in order."""
    bodies: List[str] = []
    pos = 0
    while True:
        i = text.find(open_tag, pos)
        if i == -1:
            return bodies, None
        j = text.find(close_tag, i + len(open_tag))
        if j == -1:
            return bodies, text[i + len(open_tag):]
        bodies.append(text[i + len(open_tag):j])
        pos = j + len(close_tag)


def fenced_body(text: str) -> Optional[str]:
    """The body of the first markdown code fence (```json … ``` or ``` … ```) in ``text``, or None."""
    m = _FENCE.search(text)
    return m.group(1).strip() if m else None


def normalize_array_params(arguments: Mapping[str, Any], keys: FrozenSet[str] = ARRAY_PARAMS) -> Dict[str, Any]:
    """A copy of ``arguments`` where each parameter in ``keys`` given as one string becomes ``[string]``."""
    out = dict(arguments)
    for key in keys:
        if isinstance(out.get(key), str):
            out[key] = [out[key]]
    return out


def _call(obj: Any, array_params: FrozenSet[str]) -> Optional[JarvisToolCall]:
    call = JarvisToolCall.from_object(obj)
    if call is None:
        return None
    return JarvisToolCall(call.name, normalize_array_params(call.arguments, array_params), call.failure_message)


def _bare_call(obj: Optional[Dict[str, Any]], array_params: FrozenSet[str]) -> Optional[JarvisToolCall]:
    if obj is None or "name" not in obj or not ("arguments" in obj or "parameters" in obj):
        return None
    return _call(obj, array_params)


def parse_tagged_calls(
    raw: str,
    *,
    open_tag: str = "<tool_call>",
    close_tag: str = "</tool_call>",
    array_params: FrozenSet[str] = ARRAY_PARAMS,
    bare_calls: bool = True,
    fenced_calls: bool = True,
) -> Optional[JarvisReply]:
    """The text-tag skeleton (see the module doc). ``raw`` should already be stripped of thinking.

    Returns None for text that needs no change (Jarvis JSON already, or JSON that is neither Jarvis JSON
    nor a call) and for empty text. A last call cut off before its closing tag is still a call when its
    body is a complete JSON object; when it is not, the reply carries the text before it and an ``error``
    saying the call was cut off (never a silent drop).
    """
    cleaned = raw.strip()
    if not cleaned:
        return None
    bodies, unclosed = tagged_bodies(cleaned, open_tag, close_tag)
    calls = [c for c in (_call(decode_object(b), array_params) for b in bodies) if c is not None]
    if unclosed is not None:
        tail = _call(decode_object(unclosed), array_params)
        if tail is not None:
            calls.append(tail)
        elif not calls:
            before = cleaned[: cleaned.rfind(open_tag)].strip()
            return JarvisReply(message=before, error="the model's tool call was cut off before it was complete")
    if calls:
        return JarvisReply.calls(calls)
    obj = decode_object(cleaned)
    if obj is not None:
        if "tool_calls" in obj:
            return None  # already Jarvis JSON: passed on unchanged
        found = _bare_call(obj, array_params) if bare_calls else None
        return JarvisReply.calls([found]) if found is not None else None
    if fenced_calls:
        body = fenced_body(cleaned)
        found = _bare_call(decode_object(body), array_params) if body is not None else None
        if found is not None:
            return JarvisReply.calls([found])
    if cleaned.startswith("{"):
        return None  # broken JSON: left to the lenient reader downstream
    return JarvisReply.text(cleaned)
