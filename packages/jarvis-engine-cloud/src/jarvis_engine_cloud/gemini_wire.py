"""Google's Gemini API: ``generateContent`` bodies, responses and ``streamGenerateContent?alt=sse`` chunks.

Requests: system messages become ``systemInstruction``; assistant turns are ``model`` contents whose tool
calls are ``functionCall`` parts; tool results are ``functionResponse`` parts of one user content
(consecutive results share it, as Gemini wants for parallel calls); sampling goes to ``generationConfig``.

Responses: non-thought text parts join into ``content``, ``thought: true`` parts into ``reasoning``;
``functionCall`` parts become tool calls with an id synthesized when Gemini gives none (unique even for
parallel calls of one function). A ``thoughtSignature`` Gemini attaches to a call is carried inside the
call id (``<id>__thought__<signature>``) so that it goes back with the call on the next turn, as
Gemini 3 requires. ``finishReason`` is ``STOP`` even for calls: calls make it ``tool_calls``.
Usage: completion tokens include thinking tokens (``thoughtsTokenCount``).
"""

from __future__ import annotations

import json
import logging
import re
from typing import Any, Dict, FrozenSet, Iterable, List, Mapping, Optional, Sequence, Tuple

from jarvis_core.embeddings import Embedding, EmbeddingResult
from jarvis_core.engine.http_errors import error_from_payload
from jarvis_core.engine.messages import arguments_object
from jarvis_core.engine.streams import decode_json
from jarvis_core.errors import ContentFilterError, InvalidOptionValueError, MalformedResponseError, StreamError
from jarvis_core.types import Completion, MessageLike, Role, StreamChunk, ToolCall, Usage, new_call_id
from jarvis_engine_cloud.images import gemini_user_parts
from jarvis_engine_cloud.wire_common import (
    as_stop_list,
    coerce_with_extras,
    openai_tool_choice,
    tool_specs,
)

__all__ = [
    "OPTIONS",
    "GeminiStreamDecoder",
    "build_payload",
    "parse_response",
    "parse_usage",
    "split_call_id",
]

log = logging.getLogger("jarvis_engine_cloud")

#: Options the Gemini route accepts beyond the named parameters.
OPTIONS: FrozenSet[str] = frozenset(
    {
        "top_p",
        "top_k",
        "stop",
        "seed",
        "presence_penalty",
        "frequency_penalty",
        "tool_choice",
        "response_format",
        "thinking",
        "thinking_budget",
        "include_thoughts",
        "safety_settings",
    }
)

_SIGNATURE_SEP = "__thought__"
_SYNTHETIC_ID = re.compile(r"^call_[0-9a-f]{24}$")
_FILTERED = {
    "SAFETY",
    "RECITATION",
    "BLOCKLIST",
    "PROHIBITED_CONTENT",
    "SPII",
    "IMAGE_SAFETY",
    "IMAGE_PROHIBITED_CONTENT",
    "IMAGE_RECITATION",
}
#: Finish reasons with no OpenAI equivalent: ``stop`` plus an error surfaced in the metadata.
_SURFACED = {
    "MALFORMED_FUNCTION_CALL": True,
    "UNEXPECTED_TOOL_CALL": True,
    "TOO_MANY_TOOL_CALLS": True,
    "MISSING_THOUGHT_SIGNATURE": False,
    "OTHER": True,
    "LANGUAGE": False,
    "IMAGE_OTHER": True,
    "NO_IMAGE": True,
}
# JSON-Schema keywords outside the OpenAPI subset that Gemini's ``parameters`` accepts.
_JSON_SCHEMA_ONLY = ("$ref", "$defs", "$schema", "definitions", "additionalProperties", "const", "oneOf", "allOf", "not")


def split_call_id(call_id: str) -> Tuple[Optional[str], Optional[str]]:
    """``(Gemini's own call id or None, thought signature or None)`` from a tool-call id made here."""
    base, _, signature = call_id.partition(_SIGNATURE_SEP)
    own = base if base and not _SYNTHETIC_ID.match(base) else None
    return own, signature or None


# -- requests -----------------------------------------------------------------------------------------
def _response_object(content: Optional[str]) -> Dict[str, Any]:
    # functionResponse.response must be an object: JSON objects pass, anything else is wrapped.
    if content:
        try:
            value = json.loads(content)
        except ValueError:
            return {"result": content}
        return value if isinstance(value, dict) else {"result": value}
    return {"result": ""}


def _call_part(call: ToolCall) -> Dict[str, Any]:
    own_id, signature = split_call_id(call.id)
    fc: Dict[str, Any] = {"name": call.name, "args": arguments_object(call, engine_id="cloud", server="Gemini")}
    if own_id:
        fc["id"] = own_id
    part: Dict[str, Any] = {"functionCall": fc}
    if signature:
        part["thoughtSignature"] = signature
    return part


def _convert_messages(messages: Sequence[MessageLike]) -> Tuple[List[str], List[Dict[str, Any]]]:
    system: List[str] = []
    contents: List[Dict[str, Any]] = []
    names: Dict[str, str] = {}  # call id -> function name, for results that do not repeat the name
    results_open = False
    for msg, _extras in coerce_with_extras(messages):
        if msg.role is Role.SYSTEM:
            if msg.text:
                system.append(msg.text)
            continue
        if msg.role is Role.TOOL:
            call_id = msg.tool_call_id or ""
            name = msg.name or names.get(call_id)
            if not name:
                raise InvalidOptionValueError(
                    "cloud (google)", "messages",
                    f"the tool result for call {call_id!r} names no function and follows no call with that id; "
                    "Gemini needs the function name",
                )
            fr: Dict[str, Any] = {"name": name, "response": _response_object(msg.text)}
            own_id, _ = split_call_id(call_id)
            if own_id:
                fr["id"] = own_id
            if results_open:
                contents[-1]["parts"].append({"functionResponse": fr})
            else:
                contents.append({"role": "user", "parts": [{"functionResponse": fr}]})
                results_open = True
            continue
        results_open = False
        if msg.role is Role.USER:
            contents.append({"role": "user", "parts": gemini_user_parts(msg)})
            continue
        parts: List[Dict[str, Any]] = [{"text": msg.content}] if msg.content else []
        for call in msg.tool_calls:
            names[call.id] = call.name
            parts.append(_call_part(call))
        if parts:
            contents.append({"role": "model", "parts": parts})
    return system, contents


def _declaration(spec: Any) -> Dict[str, Any]:
    decl: Dict[str, Any] = {"name": spec.name, "description": spec.description}
    params = dict(spec.parameters)
    if params.get("properties") or params.get("type") not in (None, "object"):
        text = json.dumps(params)
        # Gemini's ``parameters`` takes an OpenAPI subset; richer schemas go to ``parametersJsonSchema``.
        key = "parametersJsonSchema" if any(f'"{k}"' in text for k in _JSON_SCHEMA_ONLY) else "parameters"
        decl[key] = params
    return decl  # a function without parameters leaves them unset (an empty object schema is rejected)


def _tool_config(value: Any) -> Dict[str, Any]:
    mode, name = openai_tool_choice(value)
    config: Dict[str, Any] = {"mode": {"auto": "AUTO", "none": "NONE"}.get(mode, "ANY")}
    if name:
        config["allowedFunctionNames"] = [name]
    return {"functionCallingConfig": config}


def _response_format(value: Any, config: Dict[str, Any]) -> None:
    kind = value.get("type") if isinstance(value, Mapping) else None
    if kind == "text":
        return
    if kind == "json_object":
        config["responseMimeType"] = "application/json"
        return
    if kind == "json_schema" and isinstance(value.get("json_schema"), Mapping):
        config["responseMimeType"] = "application/json"
        config["responseJsonSchema"] = value["json_schema"].get("schema", {})
        return
    raise InvalidOptionValueError("cloud (google)", "response_format",
                                  "use {'type': 'json_object'} or {'type': 'json_schema', ...}")


def build_payload(
    messages: Sequence[MessageLike],
    *,
    max_tokens: Optional[int],
    temperature: Optional[float] = None,
    tools: Optional[Sequence[Any]] = None,
    options: Optional[Mapping[str, Any]] = None,
) -> Dict[str, Any]:
    """The JSON body of ``models/<model>:generateContent`` (the model goes in the URL)."""
    system, contents = _convert_messages(messages)
    body: Dict[str, Any] = {"contents": contents}
    if system:
        body["systemInstruction"] = {"parts": [{"text": "\n\n".join(system)}]}
    opts = {k: v for k, v in (options or {}).items() if v is not None}
    config: Dict[str, Any] = {}
    if temperature is not None:
        config["temperature"] = temperature
    if max_tokens is not None:
        config["maxOutputTokens"] = int(max_tokens)
    for src, dst in (("top_p", "topP"), ("top_k", "topK"), ("seed", "seed"),
                     ("presence_penalty", "presencePenalty"), ("frequency_penalty", "frequencyPenalty")):
        if src in opts:
            config[dst] = opts[src]
    if "stop" in opts:
        config["stopSequences"] = as_stop_list(opts["stop"])
    if "response_format" in opts:
        _response_format(opts["response_format"], config)
    thinking: Dict[str, Any] = dict(opts["thinking"]) if isinstance(opts.get("thinking"), Mapping) else {}
    if "thinking" in opts and not isinstance(opts["thinking"], Mapping):
        raise InvalidOptionValueError("cloud (google)", "thinking", "give Gemini's thinkingConfig object (or use "
                                      "thinking_budget)")
    if "thinking_budget" in opts:
        thinking["thinkingBudget"] = int(opts["thinking_budget"])
    if "include_thoughts" in opts:
        thinking["includeThoughts"] = bool(opts["include_thoughts"])
    if thinking:
        config["thinkingConfig"] = thinking
    if config:
        body["generationConfig"] = config
    specs = tool_specs(tools)
    if specs:
        body["tools"] = [{"functionDeclarations": [_declaration(s) for s in specs]}]
        if "tool_choice" in opts:
            body["toolConfig"] = _tool_config(opts["tool_choice"])
    if "safety_settings" in opts:
        body["safetySettings"] = list(opts["safety_settings"])
    return body


# -- responses ----------------------------------------------------------------------------------------
def parse_usage(raw: Any) -> Usage:
    """``usageMetadata`` as a :class:`Usage`; completion tokens include thinking tokens."""
    if not isinstance(raw, Mapping):
        return Usage()
    prompt = int(raw.get("promptTokenCount") or 0)
    completion = int(raw.get("candidatesTokenCount") or 0) + int(raw.get("thoughtsTokenCount") or 0)
    total = raw.get("totalTokenCount")
    return Usage(prompt, completion, int(total) if total is not None else prompt + completion)


def _blocked(payload: Mapping[str, Any]) -> ContentFilterError:
    feedback = payload.get("promptFeedback") or {}
    reason = feedback.get("blockReason") or "no candidates"
    return ContentFilterError(
        f"cloud (google): Gemini blocked the prompt ({reason}); rephrase it or adjust safety_settings",
        engine_id="cloud",
        status_code=200,
        body=str(reason),
    )


_NO_PARTS: Mapping[str, Any] = {}


class _Accumulator:
    """What the parts of one response (or of every chunk of a stream) add up to."""

    def __init__(self) -> None:
        self.calls: List[ToolCall] = []
        self.finish: Optional[str] = None
        self.raw_usage: Any = None
        self.meta: Dict[str, Any] = {"provider": "google"}
        self.model = ""

    def take(self, payload: Any) -> Tuple[str, str]:
        """Absorb one GenerateContentResponse; return the (content, reasoning) text it added."""
        if type(payload) is not dict and not isinstance(payload, Mapping):  # isinstance(Mapping) is slow
            raise StreamError(f"cloud (google): not a GenerateContentResponse: {str(payload)[:200]}", engine_id="cloud")
        if payload.get("usageMetadata"):
            self.raw_usage = payload["usageMetadata"]  # repeated on every chunk: the last one wins
        if payload.get("modelVersion"):
            self.model = str(payload["modelVersion"])
        if payload.get("responseId"):
            self.meta["id"] = payload["responseId"]
        candidates = payload.get("candidates")
        if not candidates:
            if (payload.get("promptFeedback") or {}).get("blockReason"):
                raise _blocked(payload)
            return "", ""
        candidate = candidates[0]
        if candidate.get("finishReason"):
            self.finish = str(candidate["finishReason"])
        parts = (candidate.get("content") or _NO_PARTS).get("parts") or ()
        if type(parts) is list and len(parts) == 1 and type(parts[0]) is dict and len(parts[0]) == 1:
            text = parts[0].get("text")  # the usual streamed chunk: one plain text part
            if type(text) is str:
                return text, ""
        texts: List[str] = []
        thoughts: List[str] = []
        for part in parts:
            if not isinstance(part, Mapping):
                continue
            if isinstance(part.get("functionCall"), Mapping):
                self.calls.append(self._call(part))
            elif isinstance(part.get("text"), str):
                (thoughts if part.get("thought") else texts).append(part["text"])
        return "".join(texts), "".join(thoughts)

    @staticmethod
    def _call(part: Mapping[str, Any]) -> ToolCall:
        fc = part["functionCall"]
        call_id = str(fc.get("id") or new_call_id())
        if part.get("thoughtSignature"):
            call_id = f"{call_id}{_SIGNATURE_SEP}{part['thoughtSignature']}"
        args = fc.get("args")
        return ToolCall(
            id=call_id,
            name=str(fc.get("name") or ""),
            arguments=json.dumps(args if isinstance(args, Mapping) else {}, ensure_ascii=False),
        )

    @property
    def usage(self) -> Optional[Usage]:
        return parse_usage(self.raw_usage) if self.raw_usage else None

    def finish_reason(self) -> str:
        raw = (self.finish or "STOP").upper()
        if raw in _FILTERED:
            return "content_filter"
        if raw == "MAX_TOKENS":
            return "length"
        if raw in _SURFACED:
            self.meta["error"] = {"status": 200, "type": raw.lower(), "message": raw, "retryable": _SURFACED[raw]}
            log.warning("cloud (google): the model stopped with %s; no usable answer was produced", raw)
            return "stop"
        return "tool_calls" if self.calls else "stop"


def parse_response(payload: Any, *, model: str = "") -> Completion:
    """A :class:`Completion` from a ``generateContent`` response."""
    if not isinstance(payload, Mapping):
        excerpt = str(payload)[:200]
        raise MalformedResponseError(f"cloud (google): not a GenerateContentResponse: {excerpt}", engine_id="cloud",
                                     excerpt=excerpt)
    if payload.get("error"):  # a proxy answering 200 with Google's error object
        raise error_from_payload(payload, engine_id="cloud")
    if "candidates" not in payload and "promptFeedback" not in payload:
        excerpt = json.dumps(payload)[:200]
        raise MalformedResponseError(f"cloud (google): not a GenerateContentResponse (no candidates): {excerpt}",
                                     engine_id="cloud", excerpt=excerpt)
    acc = _Accumulator()
    content, reasoning = acc.take(payload)
    finish = acc.finish_reason()
    return Completion(
        content=content or None,
        reasoning=reasoning or None,
        tool_calls=tuple(acc.calls),
        usage=acc.usage or Usage(),
        model=acc.model or model,
        finish_reason=finish,
        metadata=acc.meta,
    )


class GeminiStreamDecoder:
    """Turns the chunks of ``streamGenerateContent?alt=sse`` into :class:`StreamChunk` objects.

    Each chunk is a whole GenerateContentResponse holding only new parts; function calls arrive whole.
    There is no end marker: the chunk with a ``finishReason`` ends the stream, and a stream that ends
    without one broke off (:class:`StreamError`).
    """

    def __init__(self, *, model: str = "") -> None:
        self._acc = _Accumulator()
        self._model = model

    def feed_datas(self, datas: Iterable[str], out: Optional[List[StreamChunk]] = None) -> List[StreamChunk]:
        """Take the ``data`` texts of one network read (an error payload raises its typed error); return
        their text deltas (appended to ``out`` when given, so that those before an error are still there
        when it raises)."""
        out = [] if out is None else out
        take, delta = self._acc.take, StreamChunk.delta
        for data in datas:
            content, reasoning = take(decode_json(data, engine_id="cloud"))
            if content or reasoning:
                out.append(delta(content or None, reasoning or None))
        return out

    def finish(self) -> List[StreamChunk]:
        """The final chunk: tool calls, finish reason, usage and metadata."""
        if self._acc.finish is None:
            raise StreamError("cloud (google): the stream ended before a finishReason (the connection dropped)",
                              engine_id="cloud")
        finish = self._acc.finish_reason()
        meta = dict(self._acc.meta)
        meta["model"] = self._acc.model or self._model
        return [StreamChunk(tool_calls=tuple(self._acc.calls), finish_reason=finish, usage=self._acc.usage, metadata=meta)]


def embed_request(texts: Sequence[str], model: str, options: Mapping[str, Any]) -> Dict[str, Any]:
    """A ``batchEmbedContents`` body: one request per text."""
    extra: Dict[str, Any] = {}
    if options.get("dimensions") is not None:
        extra["outputDimensionality"] = options["dimensions"]
    if options.get("task_type") is not None:
        extra["taskType"] = options["task_type"]
    name = model if model.startswith(("models/", "tunedModels/")) else f"models/{model}"
    return {"requests": [{"model": name, "content": {"parts": [{"text": t}]}, **extra} for t in texts]}


def embed_result(payload: Any, model: str) -> EmbeddingResult:
    """A ``batchEmbedContents`` reply (``{embeddings: [{values}]}``) as an :class:`EmbeddingResult` (Gemini
    reports no token count for it).

    :raises MalformedResponseError: a reply of another shape.
    """
    items = payload.get("embeddings") if isinstance(payload, Mapping) else None
    try:
        if not isinstance(items, list):
            raise TypeError
        embeddings = tuple(Embedding(item["values"], i) for i, item in enumerate(items))
    except (TypeError, KeyError, ValueError):
        raise MalformedResponseError("cloud (google): batchEmbedContents answered without a list of embeddings "
                                     "of numbers", engine_id="cloud", excerpt=str(payload)[:300]) from None
    return EmbeddingResult(embeddings, model=model)

