"""Anthropic's Messages API: request bodies, whole responses and the SSE event stream.

Requests: system messages are gathered into the top-level ``system``; assistant tool calls become
``tool_use`` blocks; tool results become ``tool_result`` blocks of a user message, consecutive results
sharing one message (Anthropic has no tool role); ``max_tokens`` is always sent (it is required).
Thinking blocks returned earlier (``Completion.metadata["thinking_blocks"]``) are replayed when an
assistant message dict carries them under ``thinking_blocks``.

Responses: text blocks join into ``content``, thinking blocks into ``reasoning``, ``tool_use`` blocks
become tool calls; ``prompt_tokens`` counts cached input too (Anthropic's ``input_tokens`` excludes it).
"""

from __future__ import annotations

import json
from typing import Any, Dict, FrozenSet, Iterable, List, Mapping, Optional, Sequence

from jarvis_core.engine.http_errors import classify_http_error
from jarvis_core.engine.messages import arguments_object
from jarvis_core.engine.streams import loads_payload
from jarvis_core.errors import (
    ConflictingOptionsError,
    EngineError,
    InvalidOptionValueError,
    MalformedResponseError,
    StreamError,
)
from jarvis_core.structured import check_response_format, schema_name, schema_of
from jarvis_core.types import Completion, MessageLike, Role, StreamChunk, ToolCall, Usage, normalize_finish_reason
from jarvis_engine_cloud.images import anthropic_user_content
from jarvis_engine_cloud.wire_common import (
    as_stop_list,
    coerce_with_extras,
    openai_tool_choice,
    tool_specs,
)

__all__ = ["ERROR_STATUS", "OPTIONS", "AnthropicStreamDecoder", "build_payload", "parse_message", "parse_usage", "stream_error"]

#: Options the Anthropic route accepts beyond the named parameters.
OPTIONS: FrozenSet[str] = frozenset(
    {"top_p", "top_k", "stop", "tool_choice", "parallel_tool_calls", "thinking", "thinking_budget", "metadata",
     "response_format"}
)

_FINISH = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "pause_turn": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "tool_use": "tool_calls",
    "refusal": "content_filter",
}


def _finish_reason(raw: Optional[str], has_calls: bool) -> str:
    return _FINISH.get(raw or "", None) or normalize_finish_reason(raw, has_tool_calls=has_calls)


# -- requests -----------------------------------------------------------------------------------------
def _assistant_blocks(msg: Any, extras: Mapping[str, Any]) -> List[Dict[str, Any]]:
    blocks: List[Dict[str, Any]] = [dict(b) for b in extras.get("thinking_blocks") or () if isinstance(b, Mapping)]
    if msg.content:
        blocks.append({"type": "text", "text": msg.content})
    for call in msg.tool_calls:
        blocks.append(
            {
                "type": "tool_use",
                "id": call.id,
                "name": call.name,
                "input": arguments_object(call, engine_id="cloud", server="Anthropic"),
            }
        )
    return blocks


def _convert_messages(messages: Sequence[MessageLike]) -> tuple[Any, ...]:
    system: List[str] = []
    out: List[Dict[str, Any]] = []
    results_open = False  # the last message in ``out`` is a user message of tool_result blocks
    for msg, extras in coerce_with_extras(messages):
        if msg.role is Role.SYSTEM:
            if msg.text:
                system.append(msg.text)
            continue
        if msg.role is Role.TOOL:
            block: Dict[str, Any] = {"type": "tool_result", "tool_use_id": msg.tool_call_id or "", "content": msg.content or ""}
            if extras.get("is_error"):
                block["is_error"] = True
            if results_open:
                out[-1]["content"].append(block)
            else:
                out.append({"role": "user", "content": [block]})
                results_open = True
            continue
        if msg.role is Role.USER:
            content = anthropic_user_content(msg)
            if results_open:  # text (and images) after tool results belong to the same user turn
                if content:
                    out[-1]["content"].extend([{"type": "text", "text": content}] if isinstance(content, str) else content)
            else:
                out.append({"role": "user", "content": content})
            results_open = False
            continue
        blocks = _assistant_blocks(msg, extras)
        results_open = False
        if not blocks:
            continue  # Anthropic rejects empty assistant turns; an empty one says nothing anyway
        if len(blocks) == 1 and blocks[0]["type"] == "text":
            out.append({"role": "assistant", "content": blocks[0]["text"]})
        else:
            out.append({"role": "assistant", "content": blocks})
    return system, out


def _tool_choice(value: Any, parallel: Optional[bool]) -> Dict[str, Any]:
    if isinstance(value, Mapping) and value.get("type") in ("auto", "any", "tool", "none"):
        choice = dict(value)  # already in Anthropic's shape
    else:
        mode, name = openai_tool_choice(value)
        choice = {"auto": {"type": "auto"}, "none": {"type": "none"}, "required": {"type": "any"}}.get(mode) or {
            "type": "tool",
            "name": name,
        }
    if parallel is False and choice["type"] != "none":
        choice["disable_parallel_tool_use"] = True
    return choice


def _thinking(value: Any) -> Dict[str, Any]:
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise InvalidOptionValueError("cloud (anthropic)", "thinking", "give a token budget (int) or Anthropic's thinking "
                                      "object")
    return {"type": "enabled", "budget_tokens": value}


def answer_tool(response_format: Any, *, has_tools: bool = False) -> Optional[Dict[str, Any]]:
    """Structured output on Anthropic, through its forced-tool mechanism: the one tool the model must call, its
    ``input_schema`` the format's schema (any object for ``json_object``); ``None`` without a JSON format.

    :raises ConflictingOptionsError: tools were given as well (the forced tool would hide them).
    """
    checked = check_response_format(response_format, engine_id="cloud (anthropic)")
    if checked is None:
        return None
    if has_tools:
        raise ConflictingOptionsError("cloud (anthropic)", ["tools", "response_format"],
                                      "Anthropic's structured output forces one tool call, which leaves no room for tools")
    return {"name": schema_name(checked), "description": "Give your answer in this structure.",
            "input_schema": schema_of(checked) or {"type": "object"}}


def answer_from_tool(chunk_or_completion: Any, name: str) -> Any:
    """A completion (or stream chunk) whose forced answer tool call becomes its text: the call's arguments, the
    JSON object the model wrote."""
    answers = [c for c in chunk_or_completion.tool_calls if c.name == name]
    if not answers:
        return chunk_or_completion
    rest = tuple(c for c in chunk_or_completion.tool_calls if c.name != name)
    changes: Dict[str, Any] = {"content": (chunk_or_completion.content or "") + answers[0].arguments, "tool_calls": rest}
    if not rest and chunk_or_completion.finish_reason == "tool_calls":
        changes["finish_reason"] = "stop"
    if isinstance(chunk_or_completion, StreamChunk):
        return chunk_or_completion.replace(**changes)
    import attrs

    return attrs.evolve(chunk_or_completion, **changes)


def build_payload(
    messages: Sequence[MessageLike],
    *,
    model: str,
    max_tokens: int,
    temperature: Optional[float] = None,
    tools: Optional[Sequence[Any]] = None,
    options: Optional[Mapping[str, Any]] = None,
    stream: bool = False,
) -> Dict[str, Any]:
    """The JSON body of ``POST /v1/messages``. ``options`` must already be allow-listed (:data:`OPTIONS`)."""
    system, wire_messages = _convert_messages(messages)
    body: Dict[str, Any] = {"model": model, "max_tokens": int(max_tokens), "messages": wire_messages}
    if system:
        body["system"] = "\n\n".join(system)
    if temperature is not None:
        body["temperature"] = temperature
    specs = tool_specs(tools)
    if specs:
        body["tools"] = [{"name": s.name, "description": s.description, "input_schema": dict(s.parameters)} for s in specs]
    opts = {k: v for k, v in (options or {}).items() if v is not None}
    for key in ("top_p", "top_k", "metadata"):
        if key in opts:
            body[key] = opts[key]
    if "stop" in opts:
        body["stop_sequences"] = as_stop_list(opts["stop"])
    if "thinking" in opts or "thinking_budget" in opts:
        body["thinking"] = _thinking(opts.get("thinking", opts.get("thinking_budget")))
    if "tool_choice" in opts or opts.get("parallel_tool_calls") is False:
        if specs:
            body["tool_choice"] = _tool_choice(opts.get("tool_choice", "auto"), opts.get("parallel_tool_calls"))
    forced = answer_tool(opts.get("response_format"), has_tools=bool(specs))
    if forced is not None:
        body["tools"], body["tool_choice"] = [forced], {"type": "tool", "name": forced["name"]}
    if stream:
        body["stream"] = True
    return body


# -- responses ----------------------------------------------------------------------------------------
def parse_usage(raw: Any) -> Usage:
    """Anthropic ``usage`` as a :class:`Usage`: prompt tokens include cache writes and cache reads."""
    if not isinstance(raw, Mapping):
        return Usage()
    prompt = sum(int(raw.get(k) or 0) for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"))
    return Usage(prompt, int(raw.get("output_tokens") or 0))


def _tool_call(block: Mapping[str, Any]) -> ToolCall:
    args = block.get("input")
    return ToolCall(
        id=str(block.get("id") or ""),
        name=str(block.get("name") or ""),
        arguments=json.dumps(args if isinstance(args, Mapping) else {}, ensure_ascii=False),
    )


def _usage_details(raw: Any) -> Dict[str, Any]:
    if not isinstance(raw, Mapping):
        return {}
    keys = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "output_tokens")
    return {k: raw[k] for k in keys if raw.get(k) is not None}


def parse_message(payload: Any) -> Completion:
    """A :class:`Completion` from a (non-streamed) Messages API response."""
    if not isinstance(payload, Mapping) or not isinstance(payload.get("content"), list):
        excerpt = json.dumps(payload)[:200]
        raise MalformedResponseError(f"cloud (anthropic): not a Messages API response: {excerpt}", engine_id="cloud",
                                     excerpt=excerpt)
    texts: List[str] = []
    thoughts: List[str] = []
    calls: List[ToolCall] = []
    thinking_blocks: List[Dict[str, Any]] = []
    for block in payload["content"]:
        if not isinstance(block, Mapping):
            continue
        kind = block.get("type")
        if kind == "text":
            texts.append(str(block.get("text") or ""))
        elif kind == "thinking":
            thoughts.append(str(block.get("thinking") or ""))
            thinking_blocks.append(dict(block))
        elif kind == "redacted_thinking":
            thinking_blocks.append(dict(block))
        elif kind == "tool_use":
            calls.append(_tool_call(block))
    meta: Dict[str, Any] = {"provider": "anthropic"}
    if payload.get("id"):
        meta["id"] = payload["id"]
    if payload.get("stop_sequence"):
        meta["stop_sequence"] = payload["stop_sequence"]
    if thinking_blocks:
        meta["thinking_blocks"] = thinking_blocks
    details = _usage_details(payload.get("usage"))
    if details:
        meta["usage_details"] = details
    return Completion(
        content="".join(texts) or None,
        reasoning="".join(thoughts) or None,
        tool_calls=tuple(calls),
        usage=parse_usage(payload.get("usage")),
        model=str(payload.get("model") or ""),
        finish_reason=_finish_reason(payload.get("stop_reason"), bool(calls)),
        metadata=meta,
    )


#: The HTTP status each Anthropic error type stands for (an ``error`` event arrives under HTTP 200).
ERROR_STATUS = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "billing_error": 402,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "overloaded_error": 529,
}


def stream_error(payload: Mapping[str, Any]) -> EngineError:
    """The typed error for an ``error`` event: classified as if it had come with its HTTP status."""
    raw = payload.get("error")
    err: Mapping[str, Any] = raw if isinstance(raw, Mapping) else {}
    status = ERROR_STATUS.get(str(err.get("type", "")))
    if status is None:
        return StreamError(f"cloud (anthropic) reported an error mid-stream: {str(err.get('message', err))[:300]}",
                           engine_id="cloud")
    error = classify_http_error(status, payload, engine_id="cloud (anthropic)")
    error.engine_id = "cloud"
    return error


class _Block:
    __slots__ = ("id", "kind", "name", "parts", "signature", "thinking")

    def __init__(self, kind: str, start: Mapping[str, Any]) -> None:
        self.kind = kind
        self.id = str(start.get("id") or "")
        self.name = str(start.get("name") or "")
        self.parts: List[str] = []
        self.thinking: List[str] = []
        self.signature = str(start.get("signature") or "")


class AnthropicStreamDecoder:
    """Turns Anthropic's SSE events into :class:`StreamChunk` objects.

    Blocks are keyed by their ``index`` (which counts text and thinking blocks too, not only tool
    calls). ``input_json_delta`` fragments are concatenated per block (an empty result means ``{}``);
    ``signature_delta`` is kept for replay, never shown as reasoning; usage from ``message_delta`` is
    cumulative, so the last value wins. ``ping`` and unknown events are ignored; an ``error`` event
    raises its typed error.
    """

    def __init__(self) -> None:
        self.model = ""
        self._blocks: Dict[int, _Block] = {}
        self._usage: Dict[str, int] = {}
        self._stop_reason: Optional[str] = None
        self._meta: Dict[str, Any] = {"provider": "anthropic"}
        self.done = False

    def feed_datas(self, datas: Iterable[str], out: Optional[List[StreamChunk]] = None) -> List[StreamChunk]:
        """Take the ``data`` texts of one network read's SSE events; return the deltas they carried
        (appended to ``out`` when given, so that those before an error are still there when it raises).

        Every Anthropic event repeats its ``event:`` name as the payload's ``type``, so the names are not
        read (the SSE decoder builds no event objects): ``ping`` is skipped, an ``error`` payload (or one
        with an ``error`` member, as proxies send) raises its typed error.
        """
        out = [] if out is None else out
        delta = StreamChunk.delta
        for data in datas:
            try:
                payload = loads_payload(data)
            except StreamError:
                raise StreamError(f"cloud (anthropic): malformed stream event {data[:200]!r}", engine_id="cloud") from None
            if type(payload) is dict:
                if payload.get("type") == "content_block_delta":
                    # The usual event, a text delta: one chunk, nothing to remember.
                    body = payload.get("delta")
                    text = body.get("text") if type(body) is dict and body.get("type") == "text_delta" else None
                    if type(text) is str:
                        if text:
                            out.append(delta(text))
                        continue
            elif not isinstance(payload, Mapping):
                raise StreamError(f"cloud (anthropic): unexpected stream event {data[:200]!r}", engine_id="cloud")
            kind = payload.get("type")
            if kind == "ping":
                continue
            if kind == "error" or payload.get("error"):
                raise stream_error(payload)
            out += self.feed(payload)
        return out

    def feed(self, payload: Mapping[str, Any]) -> List[StreamChunk]:
        """Take one decoded event payload."""
        kind = payload.get("type")
        if kind == "content_block_delta":
            return self._delta(payload)
        if kind == "content_block_start":
            block = payload.get("content_block") or {}
            self._blocks[int(payload.get("index", len(self._blocks)))] = _Block(str(block.get("type", "")), block)
            if block.get("type") == "redacted_thinking":
                self._blocks[int(payload.get("index", 0))].parts.append(str(block.get("data") or ""))
        elif kind == "message_start":
            message = payload.get("message") or {}
            self.model = str(message.get("model") or "")
            if message.get("id"):
                self._meta["id"] = message["id"]
            self._take_usage(message.get("usage"))
        elif kind == "message_delta":
            delta = payload.get("delta") or {}
            if delta.get("stop_reason"):
                self._stop_reason = str(delta["stop_reason"])
            if delta.get("stop_sequence"):
                self._meta["stop_sequence"] = delta["stop_sequence"]
            self._take_usage(payload.get("usage"))
        elif kind == "message_stop":
            self.done = True
        return []

    def _take_usage(self, raw: Any) -> None:
        if isinstance(raw, Mapping):
            for key, value in raw.items():
                if isinstance(value, int):
                    self._usage[key] = value  # cumulative: the latest value replaces the earlier one

    def _delta(self, payload: Mapping[str, Any]) -> List[StreamChunk]:
        index = int(payload.get("index", 0))
        delta = payload.get("delta") or {}
        block = self._blocks.get(index)
        if block is None:  # a delta without its start: treat it as a block of the delta's kind
            block = self._blocks[index] = _Block("", {})
        dtype = delta.get("type")
        if dtype == "text_delta":
            text = str(delta.get("text") or "")
            return [StreamChunk.delta(text)] if text else []
        if dtype == "thinking_delta":
            text = str(delta.get("thinking") or "")
            block.thinking.append(text)
            return [StreamChunk.delta(None, text)] if text else []
        if dtype == "input_json_delta":
            block.parts.append(str(delta.get("partial_json") or ""))
        elif dtype == "signature_delta":
            block.signature += str(delta.get("signature") or "")
        return []

    def finish(self) -> List[StreamChunk]:
        """The final chunk: complete tool calls, finish reason, usage and metadata.

        A stream that ended before ``message_stop`` broke off: :class:`StreamError`.
        """
        if not self.done:
            raise StreamError(
                "cloud (anthropic): the stream ended before message_stop (the connection dropped)", engine_id="cloud"
            )
        calls: List[ToolCall] = []
        thinking_blocks: List[Dict[str, Any]] = []
        for index in sorted(self._blocks):
            block = self._blocks[index]
            if block.kind == "tool_use":
                calls.append(ToolCall(id=block.id, name=block.name, arguments="".join(block.parts) or "{}"))
            elif block.kind == "thinking":
                thinking_blocks.append({"type": "thinking", "thinking": "".join(block.thinking), "signature": block.signature})
            elif block.kind == "redacted_thinking":
                thinking_blocks.append({"type": "redacted_thinking", "data": "".join(block.parts)})
        meta = dict(self._meta)
        if self.model:
            meta["model"] = self.model
        if thinking_blocks:
            meta["thinking_blocks"] = thinking_blocks
        if self._usage:
            meta["usage_details"] = _usage_details(self._usage)
        return [
            StreamChunk(
                tool_calls=tuple(calls),
                finish_reason=_finish_reason(self._stop_reason, bool(calls)),
                usage=parse_usage(self._usage) if self._usage else None,
                metadata=meta,
            )
        ]
