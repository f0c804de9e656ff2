"""Jarvis JSON: the one reply shape every prompt provider produces.

``{"message": str, "tool_calls": [{"name", "arguments": {...}, "failure_message"?}], "error": str|null}``

:class:`JarvisReply` is the typed value. :meth:`JarvisReply.parse` reads text that *is* Jarvis JSON and
:meth:`JarvisReply.from_text` reads any model output (Jarvis JSON, the first JSON object in prose that is
Jarvis JSON, else the text as a plain message). Neither ever raises on model output: whatever a model writes
becomes a reply, and what could not be read is dropped from ``tool_calls`` rather than turned into an error.
"""

from __future__ import annotations

import json
from typing import Any, Dict, List, Mapping, Optional, Tuple

import attrs

from jarvis_core.parsers.scan import raw_decode
from jarvis_core.types import ToolCall, new_call_id

__all__ = ["JarvisReply", "JarvisToolCall", "decode_object"]

# How many "{" positions from_text tries: bounds the work on long, brace-heavy output.
_MAX_SCAN = 32


def _mapping(value: Any) -> Mapping[str, Any]:
    return dict(value or {})


@attrs.frozen
class JarvisToolCall:
    """One call in a Jarvis JSON reply. ``failure_message`` is what to say aloud if the call fails."""

    name: str
    arguments: Mapping[str, Any] = attrs.field(factory=dict, converter=_mapping)
    failure_message: Optional[str] = None

    def to_dict(self) -> Dict[str, Any]:
        """The wire shape; ``failure_message`` only when set."""
        out: Dict[str, Any] = {"name": self.name, "arguments": dict(self.arguments)}
        if self.failure_message is not None:
            out["failure_message"] = self.failure_message
        return out

    def to_tool_call(self, call_id: Optional[str] = None) -> ToolCall:
        """As an engine :class:`~jarvis_core.types.ToolCall` (arguments as a JSON string, a fresh id)."""
        return ToolCall(call_id or new_call_id(), self.name, json.dumps(dict(self.arguments), ensure_ascii=False))

    @classmethod
    def from_object(cls, obj: Any) -> Optional[JarvisToolCall]:
        """A call from a decoded object, or None when it is not one.

        Accepts ``{"name", "arguments"}``, ``"parameters"`` for ``"arguments"``, the OpenAI nesting
        ``{"function": {"name", "arguments"}}`` and arguments given as a JSON string. Arguments that are not
        an object (or a string holding one) make it not a call.
        """
        if not isinstance(obj, Mapping):
            return None
        fn = obj.get("function")
        source = fn if isinstance(fn, Mapping) else obj
        name = source.get("name")
        if not isinstance(name, str) or not name.strip():
            return None
        args: Any = source.get("arguments", source.get("parameters", {}))
        if isinstance(args, str):
            args = decode_object(args) if args.strip() else {}
            if args is None:
                return None
        elif args is None:
            args = {}
        if not isinstance(args, Mapping):
            return None
        failure = obj.get("failure_message")
        return cls(name.strip(), args, failure if isinstance(failure, str) else None)


def _calls(value: Any) -> Tuple[JarvisToolCall, ...]:
    return tuple(value or ())


@attrs.frozen
class JarvisReply:
    """A Jarvis JSON reply: a message to say, the tool calls to run, and an error (or None)."""

    message: str = ""
    tool_calls: Tuple[JarvisToolCall, ...] = attrs.field(default=(), converter=_calls)
    error: Optional[str] = None

    @classmethod
    def text(cls, message: str) -> JarvisReply:
        """A reply that only says ``message``."""
        return cls(message=message)

    @classmethod
    def calls(cls, calls: Any) -> JarvisReply:
        """A reply that only calls tools (the message stays empty, as the reference providers do)."""
        return cls(tool_calls=tuple(calls))

    def to_dict(self) -> Dict[str, Any]:
        return {"message": self.message, "tool_calls": [c.to_dict() for c in self.tool_calls], "error": self.error}

    def to_json(self) -> str:
        """The reply as a Jarvis JSON string (what ``PromptProvider.parse_response`` returns)."""
        return json.dumps(self.to_dict(), ensure_ascii=False)

    def to_tool_calls(self) -> Tuple[ToolCall, ...]:
        """The calls as engine :class:`~jarvis_core.types.ToolCall` values, each with a fresh id."""
        return tuple(c.to_tool_call() for c in self.tool_calls)

    # -- reading --------------------------------------------------------------------------------
    @classmethod
    def from_object(cls, obj: Any) -> Optional[JarvisReply]:
        """A reply from a decoded object with ``tool_calls`` (or a single ``tool_call``) or ``message``;
        None for anything else. Calls that cannot be read are dropped."""
        if not isinstance(obj, Mapping) or not any(k in obj for k in ("tool_calls", "tool_call", "message")):
            return None
        raw_calls: Any = obj.get("tool_calls")
        if raw_calls is None and "tool_call" in obj:
            raw_calls = [obj["tool_call"]]
        if isinstance(raw_calls, Mapping):
            raw_calls = [raw_calls]
        calls: List[JarvisToolCall] = []
        for item in raw_calls if isinstance(raw_calls, list) else ():
            call = JarvisToolCall.from_object(item)
            if call is not None:
                calls.append(call)
        message = obj.get("message")
        error = obj.get("error")
        return cls(
            message=message if isinstance(message, str) else ("" if message is None else json.dumps(message)),
            tool_calls=calls,
            error=None if error is None or error == "" else str(error),
        )

    @classmethod
    def parse(cls, text: Optional[str]) -> Optional[JarvisReply]:
        """The reply ``text`` holds when it is a Jarvis JSON object (whitespace around it allowed); else None."""
        obj = decode_object(text or "")
        return None if obj is None else cls.from_object(obj)

    @classmethod
    def from_text(cls, text: Optional[str]) -> JarvisReply:
        """Read any model output: Jarvis JSON; else the first JSON object inside it that is Jarvis JSON;
        else the whole (stripped) text as the message. Never raises."""
        stripped = (text or "").strip()
        whole = cls.parse(stripped)
        if whole is not None:
            return whole
        pos = stripped.find("{")
        tries = 0
        while pos != -1 and tries < _MAX_SCAN:
            tries += 1
            try:
                obj, _end = raw_decode(stripped, pos)
            except ValueError:
                obj = None
            found = cls.from_object(obj)
            if found is not None:
                return found
            pos = stripped.find("{", pos + 1)
        return cls.text(stripped)


def decode_object(text: str) -> Optional[Dict[str, Any]]:
    """``text`` decoded as one JSON object (surrounding whitespace allowed), or None. Never raises."""
    stripped = text.strip()
    if not stripped.startswith("{"):
        return None
    try:
        obj, end = raw_decode(stripped)
    except ValueError:
        return None
    if end != len(stripped) or not isinstance(obj, dict):
        return None
    return obj
