"""The ``ollama`` engine: Ollama's native HTTP API (``/api/chat`` with NDJSON streaming, ``/api/tags``,
``/api/show``, ``/api/ps``, ``/api/version``).

Every response is normalized: ``thinking`` becomes ``reasoning``, tool-call arguments become JSON strings
with a unique id per call, ``finish_reason`` is derived (Ollama says ``stop`` even when it called tools),
usage comes from ``prompt_eval_count``/``eval_count`` and the durations land in ``metadata``. Family
defaults (sampling, and parsers for models that write ``<think>`` or tool calls as plain text) are applied
through :class:`jarvis_core.defaults.ModelAdapter`.
"""

from __future__ import annotations

import json
from typing import Any, AsyncIterator, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import httpx

from jarvis_core.embeddings import EmbeddingResult, batches, check_inputs, join_results
from jarvis_core.engine.base import SAMPLING_FIELDS
from jarvis_core.engine.http import HTTPEngine
from jarvis_core.engine.http_errors import error_from_payload, error_message_of
from jarvis_core.engine.streams import NDJSONByteDecoder
from jarvis_core.errors import (
    BadRequestError,
    EngineError,
    EngineHTTPError,
    InvalidOptionError,
    InvalidOptionValueError,
    MalformedResponseError,
    ModelNotFoundError,
    ToolsNotSupportedError,
    VisionNotSupportedError,
)
from jarvis_core.events import EventBus, default_bus
from jarvis_core.types import Completion, MessageLike, StreamChunk, Usage
from jarvis_engine_ollama.answers import answer_metadata, checked_line, finish_reason, incomplete_stream
from jarvis_engine_ollama.host import DEFAULT_HOST, host_from_environment, resolve_host
from jarvis_engine_ollama.model_info import ModelDetails, RunningModel
from jarvis_engine_ollama.options import (
    ALLOWED_OPTIONS,
    DEFAULT_NUM_CTX,
    check_format,
    check_keep_alive,
    check_num_ctx,
    check_think,
    wire_options,
)
from jarvis_engine_ollama.request import ChatRequest, default_options
from jarvis_engine_ollama.truncation import check_truncation, report_truncation
from jarvis_engine_ollama.verbs import EMBED_OPTIONS, embed_body, format_option, mentions_images, result_from_embed
from jarvis_engine_ollama.wire import messages_to_ollama, tool_calls_from_ollama, tools_to_ollama

__all__ = ["OllamaEngine"]

_CHAT = "/api/chat"


class OllamaEngine(HTTPEngine):
    """Ollama's native API.

    :param host: the server, in any form ``OLLAMA_HOST`` takes (``http://h:p``, ``h:p``, ``h``,
        ``0.0.0.0:11434``, ``https://h/prefix``). When neither ``host`` nor ``base_url`` is given,
        ``OLLAMA_HOST`` from the environment is used, then ``http://localhost:11434``.
    :param num_ctx: the context window asked for on every request (default :data:`DEFAULT_NUM_CTX`,
        8192); ``0`` sends none and lets the server decide. A request's own ``num_ctx=`` option wins.
    :param keep_alive: how long the server keeps the model loaded after a request (seconds, or a
        duration such as ``"10m"``; ``-1`` forever); ``None`` leaves Ollama's default (5 minutes).
    :param think: default for the ``think`` option (``None``: the server decides).
    :param model_defaults: the user's ``[model_defaults]`` rules (``config.model_defaults``), ranked above
        plugin family defaults and below explicit arguments.
    :param bus: where ``PROMPT_TRUNCATED`` events go (default: :func:`jarvis_core.events.default_bus`).
    :param timeout: read timeout in seconds (for a stream: between two lines), default 300 because a
        non-streamed answer from a large local model can take minutes.

    The other parameters are those of :class:`~jarvis_core.engine.http.HTTPEngine`.
    """

    engine_id = "ollama"
    allowed_options = ALLOWED_OPTIONS
    default_host = DEFAULT_HOST
    health_path = "/api/version"

    def __init__(
        self,
        *,
        host: Optional[str] = None,
        base_url: Optional[str] = None,
        api_key: Optional[str] = None,
        timeout: Optional[float] = None,
        connect_timeout: Optional[float] = None,
        health_timeout: Optional[float] = None,
        headers: Optional[Mapping[str, str]] = None,
        num_ctx: Optional[int] = None,
        keep_alive: Any = None,
        think: Any = None,
        model_defaults: Optional[Mapping[str, Any]] = None,
        bus: Optional[EventBus] = None,
        transport: Optional[httpx.BaseTransport] = None,
        async_transport: Optional[httpx.AsyncBaseTransport] = None,
        deadline: Optional[float] = None,
        max_output_bytes: Optional[int] = None,
        max_line_bytes: Optional[int] = None,
        max_connections: Optional[int] = None,
        max_keepalive_connections: Optional[int] = None,
    ) -> None:
        given = base_url or host
        url = resolve_host(given, source="host") if given else (host_from_environment() or DEFAULT_HOST)
        super().__init__(
            host=url,
            api_key=api_key,
            timeout=300.0 if timeout is None else timeout,
            connect_timeout=5.0 if connect_timeout is None else connect_timeout,
            health_timeout=2.0 if health_timeout is None else health_timeout,
            headers=headers,
            transport=transport,
            async_transport=async_transport,
            deadline=deadline, max_output_bytes=max_output_bytes, max_line_bytes=max_line_bytes,
            max_connections=max_connections, max_keepalive_connections=max_keepalive_connections,
        )
        checked = check_num_ctx(num_ctx)
        self.num_ctx: Optional[int] = DEFAULT_NUM_CTX if checked is None else (checked or None)
        self.keep_alive = check_keep_alive(keep_alive)
        self.think = check_think(think)
        self.model_defaults = model_defaults
        self.bus = bus
        self._vision: Dict[str, bool] = {}

    # -- request building -----------------------------------------------------------------------------
    def _adapter(self, model: str) -> Any:
        from jarvis_core.defaults import ModelAdapter

        return ModelAdapter.for_model(model, self.engine_id, user_rules=self.model_defaults)

    def _ndjson(self, req: Any) -> Any:
        """The streamed chat request: batches of decoded NDJSON lines, one batch per network read."""
        return self.astream_batches(
            "POST", _CHAT, NDJSONByteDecoder(), json_body=req.body, model=req.model,
            headers={"accept": "application/x-ndjson"}, max_tokens=(req.body.get("options") or {}).get("num_predict"),
        )

    def _request(
        self,
        messages: Sequence[MessageLike],
        model: str,
        temperature: Optional[float],
        max_tokens: Optional[int],
        tools: Any,
        options: Dict[str, Any],
        stream: bool,
    ) -> ChatRequest:
        if not isinstance(model, str) or not model.strip():
            raise InvalidOptionValueError("ollama", "model", "expected a model name such as 'llama3.2' (see `ollama list`)",
                                          value=model)
        adapter = self._adapter(model)
        body: Dict[str, Any] = {"model": model, "messages": messages_to_ollama(messages), "stream": stream}
        wire_tools = tools_to_ollama(tools)
        if wire_tools:
            body["tools"] = wire_tools
        if options or temperature is not None:
            self.check_options(options)
            explicit = {"temperature": temperature}
            for key in SAMPLING_FIELDS[1:]:  # temperature is a named parameter
                if key in options:
                    explicit[key] = options[key]
            num_ctx = check_num_ctx(options["num_ctx"]) if "num_ctx" in options else self.num_ctx
            opts = wire_options(adapter.sampling(explicit), options, max_tokens=max_tokens, num_ctx=num_ctx)
        else:  # the common call: the model's defaults, checked once per model
            num_ctx = self.num_ctx
            defaults = adapter.derived(default_options, default_options)
            opts = wire_options(defaults, options, max_tokens=max_tokens, num_ctx=num_ctx, checked=True)
        if opts:
            body["options"] = opts
        think = check_think(options["think"]) if "think" in options else self.think
        if think is not None:
            body["think"] = think
        fmt = check_format(format_option(options))
        if fmt is not None:
            body["format"] = fmt
        keep_alive = check_keep_alive(options["keep_alive"]) if "keep_alive" in options else self.keep_alive
        if keep_alive is not None:
            body["keep_alive"] = keep_alive
        req_tools = tools if wire_tools else None
        return ChatRequest(body, model, adapter, req_tools, num_ctx or None, not adapter.needs_postprocessing(req_tools))

    # -- reading answers ------------------------------------------------------------------------------
    def _truncation(self, req: ChatRequest, final: Mapping[str, Any], meta: Dict[str, Any]) -> None:
        if not req.num_ctx:
            return
        facts = check_truncation(
            num_ctx=req.num_ctx,
            prompt_eval_count=final.get("prompt_eval_count"),
            eval_count=final.get("eval_count"),
            chars=req.prompt_chars(),
        )
        if facts is not None:
            meta["prompt_truncated"] = facts
            report_truncation(facts, model=req.model, bus=self.bus or default_bus(), stacklevel=4)

    def _completion(self, req: ChatRequest, obj: Any) -> Completion:
        if not isinstance(obj, dict):
            raise MalformedResponseError(f"ollama: {_CHAT} answered with {type(obj).__name__}, not a JSON object",
                                         engine_id="ollama", excerpt=self.redact(json.dumps(obj)[:200]))
        if obj.get("error"):
            raise self.scrub(error_from_payload(self.redact(obj), engine_id=self.engine_id))
        if "message" not in obj and "done" not in obj:
            excerpt = self.redact(json.dumps(obj)[:200])
            raise MalformedResponseError(f"ollama: {_CHAT} answered with JSON that is not a chat reply (no message, "
                                         f"no done): {excerpt}", engine_id="ollama", excerpt=excerpt)
        msg = obj.get("message") or {}
        calls = tool_calls_from_ollama(msg.get("tool_calls"), set())
        meta = answer_metadata(obj)
        self._truncation(req, obj, meta)
        completion = Completion(
            content=msg.get("content") or None,
            reasoning=msg.get("thinking") or None,
            tool_calls=calls,
            usage=Usage(obj.get("prompt_eval_count") or 0, obj.get("eval_count") or 0),
            model=obj.get("model") or req.model,
            finish_reason=finish_reason(bool(calls), obj.get("done_reason")),
            metadata=meta,
        )
        return completion if req.passthrough else req.adapter.postprocess(completion, tools=req.tools)

    # -- generation -----------------------------------------------------------------------------------
    def generate(
        self,
        messages: Sequence[MessageLike],
        *,
        model: str,
        temperature: Optional[float] = None,
        max_tokens: Optional[int] = 1024,
        tools: Optional[Sequence[Any]] = None,
        **options: Any,
    ) -> Completion:
        """One ``POST /api/chat`` with ``stream: false``; the whole answer as a :class:`Completion`."""
        if mentions_images(messages):
            self._check_vision(model)
        req = self._request(messages, model, temperature, max_tokens, tools, options, stream=False)
        obj = self.request_json("POST", _CHAT, json_body=req.body, model=model)
        return self._completion(req, obj)

    async def agenerate(
        self,
        messages: Sequence[MessageLike],
        *,
        model: str,
        temperature: Optional[float] = None,
        max_tokens: Optional[int] = 1024,
        tools: Optional[Sequence[Any]] = None,
        **options: Any,
    ) -> Completion:
        """Async twin of :meth:`generate`, on the engine's async client (no worker thread)."""
        if mentions_images(messages):
            await self._acheck_vision(model)
        req = self._request(messages, model, temperature, max_tokens, tools, options, stream=False)
        obj = await self.arequest_json("POST", _CHAT, json_body=req.body, model=model)
        return self._completion(req, obj)

    async def stream_full(
        self,
        messages: Sequence[MessageLike],
        *,
        model: str,
        temperature: Optional[float] = None,
        max_tokens: Optional[int] = 1024,
        tools: Optional[Sequence[Any]] = None,
        **options: Any,
    ) -> AsyncIterator[StreamChunk]:
        """``POST /api/chat`` streamed as NDJSON: content and reasoning deltas as they come, then one final
        chunk with the complete tool calls, usage, finish reason and metadata."""
        if mentions_images(messages):
            await self._acheck_vision(model)
        req = self._request(messages, model, temperature, max_tokens, tools, options, stream=True)
        passthrough = req.passthrough
        proc = None if passthrough else req.adapter.stream_processor(tools=req.tools)
        seen: set[Any] = set()
        calls: List[Any] = []
        final: Optional[Dict[str, Any]] = None
        delta = StreamChunk.delta
        async with self._ndjson(req) as batches:
            async for batch in batches:
                for obj in batch:
                    if type(obj) is not dict or "error" in obj:
                        obj = checked_line(obj)
                    if final is not None:
                        continue  # after the done line: drain, so the connection goes back to the pool
                    msg = obj.get("message")
                    content = thinking = None
                    if msg:
                        content = msg.get("content") or None
                        thinking = msg.get("thinking") or None
                        if msg.get("tool_calls"):
                            calls.extend(tool_calls_from_ollama(msg["tool_calls"], seen))
                    if obj.get("done"):
                        final = obj
                        meta = answer_metadata(obj)
                        self._truncation(req, obj, meta)
                        chunk = StreamChunk(
                            content=content,
                            reasoning=thinking,
                            tool_calls=tuple(calls),
                            finish_reason=finish_reason(bool(calls), obj.get("done_reason")),
                            usage=Usage(obj.get("prompt_eval_count") or 0, obj.get("eval_count") or 0),
                            metadata=meta,
                        )
                    elif content is not None or thinking is not None:
                        chunk = delta(content, thinking)
                    else:
                        continue
                    if proc is None:
                        yield chunk
                    else:
                        for out in proc.feed(chunk):
                            yield out
        if final is None:
            raise incomplete_stream()
        if proc is not None:
            for out in proc.finish():
                yield out

    async def stream(
        self,
        messages: Sequence[MessageLike],
        *,
        model: str,
        temperature: Optional[float] = None,
        max_tokens: Optional[int] = 1024,
        tools: Optional[Sequence[Any]] = None,
        **options: Any,
    ) -> AsyncIterator[str]:
        """The answer's text deltas (reasoning and tool calls are left out; see :meth:`stream_full`)."""
        if mentions_images(messages):
            await self._acheck_vision(model)
        req = self._request(messages, model, temperature, max_tokens, tools, options, stream=True)
        if not req.passthrough:
            async for chunk in self.stream_full(
                messages, model=model, temperature=temperature, max_tokens=max_tokens, tools=tools, **options
            ):
                if chunk.content:
                    yield chunk.content
            return
        # The text-only hot path: no chunk objects, one generator step per line.
        final = None
        async with self._ndjson(req) as batches:
            async for batch in batches:
                for obj in batch:
                    if type(obj) is not dict or "error" in obj:
                        obj = checked_line(obj)
                    if final is not None:
                        continue
                    msg = obj.get("message")
                    if msg:
                        content = msg.get("content")
                        if content:
                            yield content
                    if obj.get("done"):
                        final = obj
                        self._truncation(req, obj, {})
        if final is None:
            raise incomplete_stream()

    # -- models ---------------------------------------------------------------------------------------
    def list_models(self) -> List[str]:
        """Names (``name:tag``) of the models the server has (``GET /api/tags``)."""
        body = self.request_json("GET", "/api/tags")
        return [str(m.get("name") or m.get("model")) for m in (body or {}).get("models") or () if isinstance(m, dict)]

    def show(self, model: str) -> ModelDetails:
        """What the server says about ``model`` (``POST /api/show``): capabilities, parameters, context."""
        body = self.request_json("POST", "/api/show", json_body={"model": model}, model=model)
        return ModelDetails.from_show(model, body or {})

    def capabilities(self, model: str) -> tuple[Any, ...]:
        """The model's capabilities as the server reports them (``tools``, ``thinking``, ``vision``, …)."""
        return self.show(model).capabilities

    # -- images and embeddings ------------------------------------------------------------------------
    def _check_vision(self, model: str) -> None:
        """Raise :class:`VisionNotSupportedError` unless the server reports ``vision`` for ``model`` (asked once
        per model)."""
        seen = self._vision.get(model)
        if seen is None:
            seen = self._vision[model] = "vision" in self.capabilities(model)
        if not seen:
            raise VisionNotSupportedError(engine_id=self.engine_id, model=model)

    async def _acheck_vision(self, model: str) -> None:
        if model not in self._vision:
            body = await self.arequest_json("POST", "/api/show", json_body={"model": model}, model=model)
            self._vision[model] = "vision" in ModelDetails.from_show(model, body or {}).capabilities
        self._check_vision(model)

    embed_options = EMBED_OPTIONS

    def embed(self, inputs: Union[str, Sequence[str]], *, model: str, **options: Any) -> EmbeddingResult:
        """Embeddings from ``POST /api/embed`` (an embedding model such as ``nomic-embed-text``), in batches of
        :attr:`embed_batch_size`; options ``dimensions``, ``truncate``, ``keep_alive``."""
        parts = []
        for offset, batch in self._embed_batches(inputs, options):
            payload = self.request_json("POST", "/api/embed", json_body=embed_body(batch, model, options), model=model)
            parts.append((offset, result_from_embed(payload, model=model, redact=self.redact)))
        return join_results(parts)

    async def aembed(self, inputs: Union[str, Sequence[str]], *, model: str, **options: Any) -> EmbeddingResult:
        """Async twin of :meth:`embed`, on the engine's async client."""
        parts = []
        for offset, batch in self._embed_batches(inputs, options):
            payload = await self.arequest_json("POST", "/api/embed", json_body=embed_body(batch, model, options),
                                               model=model)
            parts.append((offset, result_from_embed(payload, model=model, redact=self.redact)))
        return join_results(parts)

    def _embed_batches(self, inputs: Union[str, Sequence[str]], options: Mapping[str, Any]) -> List[Tuple[int, Sequence[str]]]:
        unknown = [k for k in options if k not in self.embed_options]
        if unknown:
            raise InvalidOptionError(self.engine_id, unknown, self.embed_options)
        return list(batches(check_inputs(inputs, engine_id=self.engine_id), self.embed_batch_size))

    def running_models(self) -> List[RunningModel]:
        """Models loaded in memory right now (``GET /api/ps``)."""
        body = self.request_json("GET", "/api/ps")
        return [RunningModel.from_ps(m) for m in (body or {}).get("models") or () if isinstance(m, dict)]

    def version(self) -> str:
        """The server's version (``GET /api/version``)."""
        body = self.request_json("GET", "/api/version", timeout=self.health_timeout)
        return str((body or {}).get("version", ""))

    def prepare(self, model: str) -> None:
        """Load ``model`` into memory without generating (an empty ``/api/chat``), honouring ``keep_alive``."""
        body: Dict[str, Any] = {"model": model, "messages": [], "stream": False}
        if self.keep_alive is not None:
            body["keep_alive"] = self.keep_alive
        answer = self.request_json("POST", _CHAT, json_body=body, model=model)
        if isinstance(answer, dict) and answer.get("error"):
            raise self.scrub(error_from_payload(self.redact(answer), engine_id=self.engine_id))

    def unload(self, model: str) -> None:
        """Free the memory ``model`` holds now (an empty ``/api/chat`` with ``keep_alive: 0``)."""
        self.request_json("POST", _CHAT, json_body={"model": model, "messages": [], "keep_alive": 0, "stream": False}, model=model)

    # -- errors ---------------------------------------------------------------------------------------
    def classify_error(self, response: httpx.Response, body: Any, *, model: Optional[str] = None) -> EngineError:
        """Ollama's error answers, with what to do about each."""
        status = response.status_code
        text = error_message_of(body)
        low = text.lower()
        kw: Dict[str, Any] = {"engine_id": self.engine_id, "status_code": status, "body": text[:300]}
        name = model or "the model"
        if status == 404 and "model" in low:
            return ModelNotFoundError(
                f"ollama: model {name!r} is not on the server at {self.base_url} ({text[:200]}); "
                f"download it with `ollama pull {name}`, or pick one from `ollama list`",
                **kw,
            )
        if status == 404:
            return EngineHTTPError(
                f"ollama: {response.request.url.path} does not exist on {self.base_url} (HTTP 404); is this an "
                f"Ollama server, and a recent one?",
                **kw,
            )
        if "does not support tools" in low:
            return ToolsNotSupportedError(
                f"ollama: model {name!r} does not support tool calling ({text[:200]}). The request was not retried "
                f"without tools: use a model whose capabilities include 'tools' (`ollama show {name}`), or call "
                f"without tools=",
                **kw,
            )
        if "does not support thinking" in low:
            return BadRequestError(
                f"ollama: model {name!r} does not support thinking ({text[:200]}); leave think= unset or use a model "
                f"whose capabilities include 'thinking'",
                **kw,
            )
        return super().classify_error(response, body, model=model)
