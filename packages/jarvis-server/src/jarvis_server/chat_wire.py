"""Writing OpenAI ``chat.completion`` objects and ``chat.completion.chunk`` SSE events.

SSE is written by hand: each event is ``data: <json>\\n\\n`` (or ``event: <name>\\ndata: <json>\\n\\n``), the
stream ends with ``data: [DONE]``. ``finish_reason`` is always one of OpenAI's values (jarvis normalises
providers' spellings; ``error`` never reaches a client as a finish reason, it becomes an error).
Tool calls in a stream are sent the way OpenAI sends them: ``delta.tool_calls[i]`` with ``index``, ``id``,
``type`` and ``function.{name, arguments}`` (jarvis engines assemble the calls, so each arrives whole).
"""

from __future__ import annotations

import json
import secrets
import time
from typing import Any, Dict, Iterable, List, Optional

from jarvis_core.types import Completion, ToolCall, Usage, normalize_finish_reason

__all__ = ["DONE", "ChunkWriter", "completion_object", "sse", "usage_object"]

DONE = b"data: [DONE]\n\n"


def _dumps(obj: Any) -> bytes:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode()


#: JSON string quoting (the C implementation behind json.dumps for a str, without its per-call overhead).
_quote = getattr(json.encoder, "c_encode_basestring", None) or json.encoder.encode_basestring


def sse(data: Any, event: Optional[str] = None) -> bytes:
    """One SSE event carrying ``data`` as JSON."""
    head = b"event: " + event.encode() + b"\n" if event else b""
    return head + b"data: " + _dumps(data) + b"\n\n"


def new_id() -> str:
    """A fresh ``chatcmpl-…`` id."""
    return "chatcmpl-" + secrets.token_hex(12)


def usage_object(usage: Optional[Usage]) -> Dict[str, int]:
    """OpenAI's ``usage`` object."""
    u = usage or Usage()
    return {"prompt_tokens": u.prompt_tokens, "completion_tokens": u.completion_tokens, "total_tokens": u.total_tokens}


def tool_call_deltas(calls: Iterable[ToolCall], start: int = 0) -> List[Dict[str, Any]]:
    """Tool calls as stream deltas (``index`` counts calls across the whole response)."""
    return [dict(call.to_openai(), index=start + i) for i, call in enumerate(calls)]


def completion_object(completion: Completion, *, model: str) -> Dict[str, Any]:
    """A whole ``chat.completion`` response."""
    message: Dict[str, Any] = {"role": "assistant", "content": completion.content if completion.content else None}
    if completion.tool_calls:
        message["tool_calls"] = [c.to_openai() for c in completion.tool_calls]
    elif message["content"] is None:
        message["content"] = ""
    if completion.reasoning:
        message["reasoning_content"] = completion.reasoning
    finish = normalize_finish_reason(completion.finish_reason, has_tool_calls=bool(completion.tool_calls))
    return {
        "id": new_id(),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": completion.model or model,
        "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": finish}],
        "usage": usage_object(completion.usage),
    }


class ChunkWriter:
    """Builds the SSE bytes of one streamed response (one id, one ``created``, one model)."""

    __slots__ = ("_content_post", "_content_pre", "_head", "_usage_field", "include_usage", "tool_index")

    def __init__(self, model: str, *, include_usage: bool = False, chunk_id: Optional[str] = None) -> None:
        self.include_usage = include_usage
        self.tool_index = 0
        # Every chunk shares these fields; the JSON prefix is built once.
        head = {"id": chunk_id or new_id(), "object": "chat.completion.chunk", "created": int(time.time()), "model": model}
        self._head = _dumps(head)[:-1] + b',"choices":'
        self._usage_field = b',"usage":null}' if include_usage else b"}"
        # Content deltas are most of a stream: their bytes are a fixed prefix, the quoted text, a fixed suffix.
        self._content_pre = b"data: " + self._head + b'[{"index":0,"delta":{"content":'
        self._content_post = b'},"logprobs":null,"finish_reason":null}]' + self._usage_field + b"\n\n"

    def _chunk(self, delta: Dict[str, Any], finish_reason: Optional[str] = None, usage: Optional[Usage] = None) -> bytes:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
        tail = self._usage_field if usage is None else b',"usage":' + _dumps(usage_object(usage)) + b"}"
        return b"data: " + self._head + b"[" + _dumps(choice) + b"]" + tail + b"\n\n"

    def role(self) -> bytes:
        """The first chunk: the assistant role and empty content."""
        return self._chunk({"role": "assistant", "content": ""})

    def content(self, text: str) -> bytes:
        return self._content_pre + _quote(text).encode() + self._content_post

    def reasoning(self, text: str) -> bytes:
        return self._chunk({"reasoning_content": text})

    def tool_calls(self, calls: Iterable[ToolCall]) -> bytes:
        deltas = tool_call_deltas(calls, self.tool_index)
        self.tool_index += len(deltas)
        return self._chunk({"tool_calls": deltas})

    def finish(self, reason: str, usage: Optional[Usage] = None) -> bytes:
        """The chunk carrying ``finish_reason`` (and ``usage`` when given: the managed-agents stream)."""
        return self._chunk({}, reason, usage)

    def usage(self, usage: Optional[Usage]) -> bytes:
        """The chunk after the finish chunk when usage was asked for: no choices, just ``usage``."""
        return b"data: " + self._head + b"[],\"usage\":" + _dumps(usage_object(usage)) + b"}\n\n"

    def final(self, reason: str, usage: Optional[Usage]) -> bytes:
        """The finish chunk, then (when asked) the usage chunk, then ``[DONE]``."""
        out = self.finish(reason)
        if self.include_usage:
            out += self.usage(usage)
        return out + DONE
