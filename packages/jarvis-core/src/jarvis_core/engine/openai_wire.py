"""The OpenAI chat-completions wire format: request payloads, whole responses and SSE stream chunks.

Shared by every engine that speaks ``/v1/chat/completions`` (vLLM, SGLang, llama.cpp, LM Studio, any
OpenAI-compatible server, and OpenAI itself). It knows the servers' departures from OpenAI's own format
(reasoning in ``reasoning_content`` or ``reasoning``; vLLM tool headers without ``arguments``, several
fragments of one index in one delta, absent keys meaning "no change"; llama.cpp ``timings``; the usage-only
chunk with empty ``choices``; flat LiteLLM-style tool calls) so that the engines do not have to.

Streams: :class:`SSEByteDecoder` turns raw body bytes into ``data`` payloads (one plain loop per network
read), :meth:`ChatStreamDecoder.decode` turns each into at most one :class:`~jarvis_core.types.StreamChunk`
(a text delta that repeats the previous one's bytes around a new string costs one string scan; anything
else goes through :func:`loads_payload` and a few dict lookups) and, at the end, the one final chunk with
complete tool calls, finish reason, usage and metadata. Together they run faster than
a bare ``aiter_lines`` + ``json.loads`` loop (``benchmarks/bench_openai_compat.py``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping as _Mapping  # isinstance through typing.Mapping costs ~1 us a call
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, TypeVar

from jarvis_core.engine.http_errors import error_from_payload
from jarvis_core.engine.messages import _tool_call_from_dict, messages_to_dicts, tools_to_openai
from jarvis_core.engine.streams import loads_payload
from jarvis_core.errors import MalformedResponseError, StreamError
from jarvis_core.types import Completion, StreamChunk, ToolCall, Usage, new_call_id, normalize_finish_reason

__all__ = [
    "ChatStreamDecoder",
    "build_chat_payload",
    "parse_chat_completion",
    "parse_tool_calls",
    "parse_usage",
]

_T = TypeVar("_T")

_EMPTY: Mapping[str, Any] = {}

#: The string scanner behind ``json.loads`` (in C): ``(text, index after the closing quote)`` from the
#: index after an opening quote; raises ``ValueError`` on a malformed string.
_scanstring: Any = json.decoder.scanstring  # type: ignore[attr-defined]  # not in typeshed's json.decoder
_CONTENT_KEY = '"content":'


def build_chat_payload(
    messages: Sequence[Any],
    *,
    model: str,
    temperature: Optional[float] = None,
    max_tokens: Optional[int] = None,
    tools: Optional[Sequence[Any]] = None,
    stream: bool = False,
    options: Optional[Mapping[str, Any]] = None,
    include_usage: bool = True,
    max_tokens_field: str = "max_tokens",
    reasoning_field: Optional[str] = None,
) -> Dict[str, Any]:
    """The JSON body of a ``POST /v1/chat/completions``.

    ``messages`` are :class:`~jarvis_core.types.Message` objects or OpenAI dicts; ``tools`` are
    :class:`~jarvis_core.types.ToolSpec` objects or OpenAI dicts. ``options`` (already allow-listed and
    renamed by the engine) are copied in as they are; ``None`` values are left out, so "unset" never reaches
    the server. A streamed request asks for usage (``stream_options.include_usage``) unless
    ``include_usage=False``. ``max_tokens_field`` lets OpenAI's newer models use ``max_completion_tokens``. ``reasoning_field``
    replays assistant reasoning in the history under that key (see
    :func:`~jarvis_core.engine.messages.message_to_dict`).
    """
    payload: Dict[str, Any] = {"model": model, "messages": messages_to_dicts(messages, reasoning_field=reasoning_field)}
    if temperature is not None:
        payload["temperature"] = temperature
    if max_tokens is not None:
        payload[max_tokens_field] = max_tokens
    wire_tools = tools_to_openai(tools)
    if wire_tools:
        payload["tools"] = wire_tools
    if options:
        for key, value in options.items():
            if value is not None:
                payload[key] = value
    if stream:
        payload["stream"] = True
        if include_usage:
            payload["stream_options"] = {"include_usage": True}
    return payload


def parse_usage(raw: Any) -> Optional[Usage]:
    """A :class:`Usage` from an OpenAI ``usage`` object (``None`` when absent or not an object)."""
    if not isinstance(raw, _Mapping):
        return None
    prompt = raw.get("prompt_tokens") or 0
    completion = raw.get("completion_tokens") or 0
    total = raw.get("total_tokens")
    return Usage(int(prompt), int(completion), int(total) if total is not None else int(prompt) + int(completion))


def parse_tool_calls(raw: Any) -> tuple[Any, ...]:
    """Complete tool calls from a message's ``tool_calls`` (OpenAI nested or flat ``{id, name, arguments}``).

    Arguments given as an object are encoded to a JSON string; a missing id becomes ``call_<position>``.
    """
    if not raw:
        return ()
    if not isinstance(raw, list):
        raise MalformedResponseError(f"tool_calls must be a list, got {type(raw).__name__}", excerpt=str(raw)[:200])
    return tuple(_tool_call_from_dict(c) for c in raw if isinstance(c, _Mapping))


def _reasoning_of(message: Mapping[str, Any]) -> Optional[str]:
    # llama.cpp and older vLLM say reasoning_content; newer vLLM and Ollama's /v1 say reasoning.
    value = message.get("reasoning_content") or message.get("reasoning")
    return value if isinstance(value, str) and value else None


def _metadata_of(payload: Mapping[str, Any], choice: Mapping[str, Any]) -> Dict[str, Any]:
    meta: Dict[str, Any] = {}
    if payload.get("id"):
        meta["id"] = payload["id"]
    if payload.get("timings"):
        meta["timings"] = payload["timings"]
    if choice.get("stop_reason") is not None:
        meta["stop_reason"] = choice["stop_reason"]
    if payload.get("__tool_call_incomplete") or choice.get("__tool_call_incomplete"):
        meta["tool_call_incomplete"] = True
    return meta


def parse_chat_completion(payload: Any, *, engine_id: str = "") -> Completion:
    """A :class:`Completion` from a non-streamed chat-completions response.

    An error payload raises its typed error; a response that is not a chat completion (no choices, not an
    object) raises :class:`~jarvis_core.errors.MalformedResponseError`.
    """
    if not isinstance(payload, _Mapping):
        raise MalformedResponseError(f"{engine_id or 'engine'}: expected a JSON object, got {type(payload).__name__}",
                                     engine_id=engine_id, excerpt=json.dumps(payload)[:200])
    if payload.get("error") or payload.get("object") == "error":
        raise error_from_payload(payload, engine_id=engine_id)
    choices = payload.get("choices")
    if not choices or not isinstance(choices, list) or not isinstance(choices[0], _Mapping):
        excerpt = json.dumps(payload)[:200]
        raise MalformedResponseError(
            f"{engine_id or 'engine'}: the response has no choices: {excerpt}", engine_id=engine_id, excerpt=excerpt
        )
    choice = choices[0]
    message = choice.get("message") or _EMPTY
    try:
        calls = parse_tool_calls(message.get("tool_calls"))
    except MalformedResponseError as exc:
        raise MalformedResponseError(f"{engine_id or 'engine'}: {exc}", engine_id=engine_id, excerpt=exc.excerpt) from None
    content = message.get("content")
    if isinstance(content, list):  # content parts
        content = "".join(p.get("text", "") for p in content if isinstance(p, _Mapping)) or None
    return Completion(
        content=content if content else None,
        reasoning=_reasoning_of(message),
        tool_calls=calls,
        usage=parse_usage(payload.get("usage")) or Usage(),
        model=str(payload.get("model") or ""),
        finish_reason=normalize_finish_reason(choice.get("finish_reason"), has_tool_calls=bool(calls)),
        metadata=_metadata_of(payload, choice),
    )


class _PendingCall:
    __slots__ = ("id", "name", "parts")

    def __init__(self) -> None:
        self.id: Optional[str] = None
        self.name: Optional[str] = None
        self.parts: List[str] = []


class ChatStreamDecoder:
    """Turns decoded SSE chunks of a streamed chat completion into :class:`StreamChunk` objects.

    :meth:`feed` returns the content and reasoning deltas of one chunk (usually zero or one
    ``StreamChunk``); tool-call fragments are assembled by ``index``; ``finish_reason``, usage (the last
    one wins: vLLM's ``continuous_usage_stats`` sends it cumulatively), llama.cpp ``timings`` and the
    response id and model are kept until :meth:`finish`, which returns the one final chunk carrying the
    complete tool calls, the normalized finish reason, the usage and that metadata.
    """

    __slots__ = ("_calls", "_finish", "_meta", "_shape", "_usage", "engine_id", "model")

    def __init__(self, *, engine_id: str = "") -> None:
        self.engine_id = engine_id
        #: The model id the server reported (from the first chunk that had one).
        self.model = ""
        self._calls: Dict[int, _PendingCall] = {}
        self._finish: Optional[str] = None
        self._usage: Optional[Usage] = None
        self._meta: Dict[str, Any] = {}
        # The last plain text delta's payload around its text: (before, after, len(before)); see decode().
        self._shape: Optional[tuple[Any, ...]] = None

    @property
    def finish_reason(self) -> Optional[str]:
        """The server's raw finish reason, once it sent one."""
        return self._finish

    def feed(self, chunk: Any) -> List[StreamChunk]:
        """Take one decoded ``data:`` payload; return the deltas it carried (none or one)."""
        out = self.delta(chunk)
        return [out] if out is not None else []

    def delta(self, chunk: Any) -> Optional[StreamChunk]:
        """Hot-path twin of :meth:`feed`: the content/reasoning delta of one payload, or ``None``."""
        try:
            choice = chunk["choices"][0]
            delta = choice["delta"]
        except (KeyError, IndexError, TypeError):
            return self._irregular(chunk)
        if not self.model or chunk.get("usage") or choice.get("finish_reason"):
            self._note(chunk, choice)  # the first chunk, the finish chunk (llama.cpp timings ride on it) or usage
        if type(delta) is dict and len(delta) == 1 and "content" in delta:  # the usual text-only delta
            content = delta["content"]
            return StreamChunk.delta(content) if content else None
        return self._rich_delta(delta)

    def decode(self, payload: str) -> Optional[StreamChunk]:
        """``delta(loads_payload(payload))`` for one ``data:`` payload as it came, about three times faster
        for the usual text delta (malformed JSON raises :class:`~jarvis_core.errors.StreamError`).

        Servers send every text delta of a stream as the same bytes around a different string: the same id,
        model and timestamp, ``"delta":{"content":"…"}``. Once a payload was decoded in full and found to
        be such a delta, a payload whose bytes match it everywhere but inside that one JSON string is the
        same delta with another text, and only the string is decoded. Anything else (another key, a finish
        reason, usage, a string that is not valid JSON) is decoded in full. A subclass that overrides
        :meth:`delta` to watch payloads therefore does not see repeats of a plain text delta.
        """
        text = self._repeated(payload)
        if text is not None:
            return StreamChunk.delta(text) if text else None
        return self._decoded(payload, self.delta)

    def decode_text(self, payload: str) -> Optional[str]:
        """:meth:`decode`'s twin of :meth:`text`: only the content text of one payload as it came, without
        building a chunk object per token (text-only streams read about an eighth faster for it)."""
        text = self._repeated(payload)
        if text is not None:
            return text or None
        return self._decoded(payload, self.text)

    def _decoded(self, payload: str, read: Callable[[Any], _T]) -> _T:
        """``read(loads_payload(payload))``, learning the payload's shape when it is a plain text delta."""
        chunk = loads_payload(payload, engine_id=self.engine_id)
        out = read(chunk)
        if out is not None and self.model:
            self._learn(payload, chunk)
        return out

    def _repeated(self, payload: str) -> Optional[str]:
        """The text of a payload that is the learned text delta with another string, else ``None``."""
        shape = self._shape
        if shape is None or not payload.startswith(shape[0]):
            return None
        try:
            text, end = _scanstring(payload, shape[2])
        except ValueError:
            return None
        after = shape[1]
        return text if len(payload) - end == len(after) and payload.endswith(after) else None

    def _learn(self, payload: str, chunk: Any) -> None:
        # Only a payload that delta() handled without side effects (model known, no usage, no finish reason,
        # a delta of exactly one string "content") and whose only "content" key is that delta's: its string
        # token is then the one place where the next such payload may differ.
        try:
            choice = chunk["choices"][0]
            delta = choice["delta"]
        except (KeyError, IndexError, TypeError):
            return
        if (chunk.get("usage") or choice.get("finish_reason") or "error" in chunk or type(delta) is not dict
                or len(delta) != 1 or type(delta.get("content")) is not str):
            return
        at = payload.find(_CONTENT_KEY)
        if at < 0 or payload.find(_CONTENT_KEY, at + 1) >= 0:
            return
        start = at + len(_CONTENT_KEY)
        while payload[start:start + 1] in (" ", "\t", "\r", "\n"):  # separators with spaces: ": "
            start += 1
        if payload[start:start + 1] != '"':
            return
        try:
            text, end = _scanstring(payload, start + 1)
        except ValueError:
            return
        if text == delta["content"]:
            self._shape = (payload[:start + 1], payload[end:], start + 1)

    def text(self, chunk: Any) -> Optional[str]:
        """Like :meth:`delta` but only the content text (for text-only streams; reasoning is dropped)."""
        try:
            choice = chunk["choices"][0]
            delta = choice["delta"]
        except (KeyError, IndexError, TypeError):
            out = self._irregular(chunk)
            return out.content if out is not None else None
        if not self.model or chunk.get("usage") or choice.get("finish_reason"):
            self._note(chunk, choice)  # the first chunk, the finish chunk (llama.cpp timings ride on it) or usage
        if type(delta) is dict and len(delta) == 1 and "content" in delta:
            return delta["content"] or None
        out = self._rich_delta(delta)
        return out.content if out is not None else None

    def _irregular(self, chunk: Any) -> Optional[StreamChunk]:
        # Not the usual {choices: [{delta: …}]}: an error, the usage-only chunk, or something malformed.
        if type(chunk) is not dict:
            raise StreamError(f"{self.engine_id or 'engine'} sent a non-object stream chunk: {chunk!r:.200}",
                              engine_id=self.engine_id)
        if chunk.get("error") or chunk.get("object") == "error":  # older vLLM: a flat error object
            raise error_from_payload(chunk, engine_id=self.engine_id, in_stream=True)
        choices = chunk.get("choices")
        choice = choices[0] if isinstance(choices, list) and choices and isinstance(choices[0], dict) else _EMPTY
        self._note(chunk, choice)
        delta = choice.get("delta")
        return self._rich_delta(delta) if delta else None

    def _note(self, chunk: Dict[str, Any], choice: Mapping[str, Any]) -> None:
        if chunk.get("error"):
            raise error_from_payload(chunk, engine_id=self.engine_id, in_stream=True)
        if not self.model and chunk.get("model"):
            self.model = str(chunk["model"])
            if chunk.get("id"):
                self._meta["id"] = chunk["id"]
        usage = chunk.get("usage")
        if usage:
            self._usage = parse_usage(usage)
        if "timings" in chunk:
            self._meta["timings"] = chunk["timings"]
        if choice.get("finish_reason"):
            self._finish = choice["finish_reason"]
            if choice.get("stop_reason") is not None:
                self._meta["stop_reason"] = choice["stop_reason"]
            if choice.get("__tool_call_incomplete") or chunk.get("__tool_call_incomplete"):
                self._meta["tool_call_incomplete"] = True

    def _rich_delta(self, delta: Any) -> Optional[StreamChunk]:
        if not isinstance(delta, _Mapping):
            return None
        calls = delta.get("tool_calls")
        if calls:
            self._add_calls(calls)
        content = delta.get("content")
        reasoning = delta.get("reasoning_content") or delta.get("reasoning")
        if content or reasoning:
            return StreamChunk.delta(content or None, reasoning or None)
        return None

    def _add_calls(self, fragments: Any) -> None:
        if not isinstance(fragments, list):
            raise StreamError(f"{self.engine_id or 'engine'} sent tool_calls that are not a list", engine_id=self.engine_id)
        for frag in fragments:
            if not isinstance(frag, _Mapping):
                continue
            index = frag.get("index")
            if not isinstance(index, int):
                # Index-less servers: a fragment with an id starts a new call, one without continues the last.
                last = max(self._calls, default=-1)
                index = last + 1 if (frag.get("id") or last < 0) else last
            pending = self._calls.get(index)
            if pending is None:
                pending = self._calls[index] = _PendingCall()
            if frag.get("id"):
                pending.id = str(frag["id"])
            fn = frag.get("function") or frag
            name = fn.get("name")
            if name:
                pending.name = str(name)
            args = fn.get("arguments")
            if args:
                pending.parts.append(args if isinstance(args, str) else json.dumps(args, ensure_ascii=False))

    def tool_calls(self) -> tuple[Any, ...]:
        """The tool calls assembled so far, in index order."""
        out = []
        for index in sorted(self._calls):
            p = self._calls[index]
            if not p.id:
                p.id = new_call_id()  # the server sent none: a unique one, kept for later calls of this method
            out.append(ToolCall(id=p.id, name=p.name or "", arguments="".join(p.parts) or "{}"))
        return tuple(out)

    def finish(self, *, done: bool = True) -> List[StreamChunk]:
        """The final chunk: complete tool calls, normalized finish reason, usage and metadata.

        ``done`` says the stream ended properly (``[DONE]`` or a clean end after a finish reason). A
        stream that ended with neither a finish reason nor ``[DONE]`` broke off: that raises
        :class:`~jarvis_core.errors.StreamError`.
        """
        if self._finish is None and not done:
            raise StreamError(
                f"{self.engine_id or 'engine'}: the stream ended before the server finished the response "
                "(the connection dropped or the server stopped)",
                engine_id=self.engine_id,
            )
        calls = self.tool_calls()
        meta = dict(self._meta)
        if self.model:
            meta["model"] = self.model
        return [
            StreamChunk(
                tool_calls=calls,
                finish_reason=normalize_finish_reason(self._finish, has_tool_calls=bool(calls)),
                usage=self._usage,
                metadata=meta,
            )
        ]
