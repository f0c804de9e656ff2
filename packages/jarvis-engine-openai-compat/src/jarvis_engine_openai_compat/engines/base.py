"""The shared base of every engine that speaks OpenAI's ``/v1/chat/completions``.

:class:`OpenAICompatEngine` turns a request into a wire payload (backend defaults filled through
:class:`jarvis_core.defaults.ModelAdapter`, options allow-listed and renamed for the server), sends it on
the engine's pooled client and decodes the reply with :mod:`jarvis_core.engine.openai_wire`. Subclasses
(the sibling modules of this package) only set class attributes: default host, health path, allowed options, renames.

Tools go out in OpenAI's format, or, in ``json_schema`` tool mode, as a constrained response
(:mod:`jarvis_core.tools.json_mode`). When the server answers a request with tools by saying it does not support them
(vLLM started without ``--enable-auto-tool-choice``), the request is repeated without tools, with a
warning and a ``TOOLS_DROPPED`` event; no other 400 is ever retried.
"""

from __future__ import annotations

import contextlib
import json
import warnings
from typing import Any, AsyncIterator, ClassVar, Dict, FrozenSet, List, Mapping, Optional, Sequence, Union

import attrs
import httpx

from jarvis_core.content import any_images
from jarvis_core.embeddings import EmbeddingResult
from jarvis_core.engine.base import SAMPLING_OPTIONS, ToolLike
from jarvis_core.engine.http import HTTPEngine
from jarvis_core.engine.messages import messages_to_dicts, tools_to_openai
from jarvis_core.engine.openai_embeddings import aembed_openai, embed_openai
from jarvis_core.engine.openai_wire import ChatStreamDecoder, build_chat_payload, parse_chat_completion
from jarvis_core.engine.streams import SSEByteDecoder
from jarvis_core.errors import (
    BadRequestError,
    ConfigError,
    ConflictingOptionsError,
    ContextLengthError,
    EngineError,
    EngineHTTPError,
    InvalidOptionValueError,
    MalformedResponseError,
    ModelNotFoundError,
    ToolsNotSupportedError,
)
from jarvis_core.events import EventType
from jarvis_core.tools import json_mode
from jarvis_core.types import Completion, MessageLike, StreamChunk

__all__ = ["COMMON_OPTIONS", "LOCAL_OPTIONS", "LOCAL_SAMPLING", "OPENAI_SAMPLING", "TOOL_MODES", "OpenAICompatEngine"]

#: The ``tool_mode`` values: ``native`` sends OpenAI ``tools``; ``json_schema`` sends the tools as a
#: JSON-schema constrained response instead, for models whose chat template knows no tools (the one
#: implementation is :mod:`jarvis_core.tools.json_mode`); ``auto`` lets the engine decide (llama.cpp asks
#: the server's ``/props``; elsewhere it means ``native``).
TOOL_MODES = ("auto", "native", "json_schema")
#: The ``adapter.derived`` key of an engine class's wire form of a model's default sampling values.
_DEFAULT_SAMPLING = "openai-compat default sampling"

#: The core's sampling fields (:data:`~jarvis_core.engine.base.SAMPLING_FIELDS`) that OpenAI's own API takes:
#: what backend defaults may fill on any OpenAI-compatible server.
OPENAI_SAMPLING: FrozenSet[str] = frozenset({"temperature", "top_p", "presence_penalty"})
#: The rest of the core's sampling fields, which local servers add (vLLM, SGLang, llama.cpp; LM Studio lacks min_p).
LOCAL_SAMPLING: FrozenSet[str] = SAMPLING_OPTIONS - OPENAI_SAMPLING
#: Options every OpenAI-compatible server takes (OpenAI's own request fields; ``temperature`` is a parameter of
#: its own), plus ``tool_mode`` (ours).
COMMON_OPTIONS: FrozenSet[str] = (OPENAI_SAMPLING - {"temperature"}) | frozenset({
    "frequency_penalty", "seed", "stop", "response_format", "tool_choice", "parallel_tool_calls", "logit_bias",
    "logprobs", "top_logprobs", "tool_mode",
})
#: What vLLM, SGLang and llama.cpp take: the common options, the local samplers and per-request template
#: switches (``chat_template_kwargs``, e.g. Qwen3's ``enable_thinking``).
LOCAL_OPTIONS: FrozenSet[str] = COMMON_OPTIONS | LOCAL_SAMPLING | {"chat_template_kwargs"}

# Words servers use to say "no tools here" beyond the core's list (llama.cpp without --jinja, SGLang).
_EXTRA_TOOLS_WORDS = ("requires --jinja", "tools param requires", "tool_call_parser", "tool call parser")
# llama.cpp phrases an overlong prompt as "exceeds the available context size" (type exceed_context_size_error).
_EXTRA_CONTEXT_WORDS = ("context size", "exceed_context_size", "context_length_exceeded")


class _Call:
    """One prepared request: its payload and how to read the reply."""

    __slots__ = ("adapter", "dropped", "mode", "model", "payload", "tool_names", "tools")

    def __init__(self, model: str, payload: Dict[str, Any], mode: str, tools: Optional[List[Dict[str, Any]]],
                 adapter: Any) -> None:
        self.model = model
        self.payload = payload
        self.mode = mode
        self.tools = tools
        self.tool_names = [t["function"]["name"] for t in tools] if tools else []
        self.adapter = adapter
        self.dropped = False


class OpenAICompatEngine(HTTPEngine):
    """Any server with an OpenAI-compatible chat API. ``host`` (or ``base_url``) is required.

    :param host: base URL; a trailing ``/v1`` is accepted. ``<KEY>_HOST`` overrides it through the config.
    :param api_key: sent as a bearer token; never shown in errors, logs, events or ``repr``.
    :param tool_mode: ``native``, ``json_schema`` or ``auto`` (see :data:`TOOL_MODES`).
    :param model_defaults: the user's ``[model_defaults]`` rules (config), passed to the defaults resolver.
    :param bus: event bus for ``TOOLS_DROPPED`` (default: the process-wide bus).
    """

    engine_id: ClassVar[str] = "openai-compat"
    strip_suffix = "/v1"
    health_path = "/v1/models"
    chat_path: ClassVar[str] = "/v1/chat/completions"
    models_path: ClassVar[str] = "/v1/models"
    allowed_options: ClassVar[FrozenSet[str]] = COMMON_OPTIONS | LOCAL_SAMPLING
    #: Sampling fields backend defaults may fill (explicit options are governed by ``allowed_options``).
    default_sampling: ClassVar[FrozenSet[str]] = OPENAI_SAMPLING
    #: Our option name -> the server's field name.
    option_renames: ClassVar[Mapping[str, str]] = {}
    #: What ``top_k <= 0`` ("disabled") becomes on the wire; ``None`` leaves the field out.
    top_k_disabled: ClassVar[Optional[int]] = None
    #: The ``tool_mode`` used when none is configured.
    default_tool_mode: ClassVar[str] = "native"
    #: Where an assistant message's reasoning is replayed in the history (llama.cpp, vLLM and SGLang read
    #: ``reasoning_content``; a thinking model's template may need its earlier thinking); ``None``: left out.
    reasoning_field: ClassVar[Optional[str]] = "reasoning_content"
    #: The local file of the model the server serves, when known (the embedded engine's GGUF): backend
    #: defaults computed from the file (its metadata) then apply.
    model_file: Optional[str] = None

    def __init__(
        self,
        *,
        host: Optional[str] = None,
        base_url: Optional[str] = None,
        api_key: Optional[str] = None,
        timeout: float = 120.0,
        connect_timeout: float = 5.0,
        health_timeout: float = 2.0,
        headers: Optional[Mapping[str, str]] = None,
        tool_mode: Optional[str] = None,
        model_defaults: Any = None,
        bus: Any = None,
        transport: Optional[httpx.BaseTransport] = None,
        async_transport: Optional[httpx.AsyncBaseTransport] = None,
        deadline: Optional[float] = None,
        max_output_bytes: Optional[int] = None,
        max_line_bytes: Optional[int] = None,
        max_connections: Optional[int] = None,
        max_keepalive_connections: Optional[int] = None,
    ) -> None:
        super().__init__(
            host=host, base_url=base_url, api_key=api_key, timeout=timeout, connect_timeout=connect_timeout,
            health_timeout=health_timeout, headers=headers, transport=transport, async_transport=async_transport,
            deadline=deadline, max_output_bytes=max_output_bytes, max_line_bytes=max_line_bytes,
            max_connections=max_connections, max_keepalive_connections=max_keepalive_connections,
        )
        mode = tool_mode or self.default_tool_mode
        if mode not in TOOL_MODES:
            raise ConfigError(f"tool_mode must be one of {', '.join(TOOL_MODES)}, got {mode!r}", key="tool_mode")
        self.tool_mode = mode
        self._model_defaults = model_defaults
        self._bus = bus
        self._no_tools_models: set[Any] = set()

    # -- errors -------------------------------------------------------------------------------------
    def classify_error(self, response: httpx.Response, body: Any, *, model: Optional[str] = None) -> EngineError:
        err = super().classify_error(response, body, model=model)
        if isinstance(err, EngineHTTPError) and type(err) in (BadRequestError, EngineHTTPError) and 400 <= response.status_code < 500:
            text = json.dumps(body).lower() if not isinstance(body, str) else body.lower()
            status, excerpt = err.status_code, err.body
            if any(w in text for w in _EXTRA_CONTEXT_WORDS):
                return ContextLengthError(
                    f"{self.engine_id}: the prompt does not fit the model's context (HTTP {status}); "
                    f"shorten the conversation or lower max_tokens: {excerpt}",
                    engine_id=self.engine_id, status_code=status, body=excerpt)
            if any(w in text for w in _EXTRA_TOOLS_WORDS):
                return ToolsNotSupportedError(
                    f"{self.engine_id}: the server does not support tool calling (HTTP {status}): {excerpt}",
                    engine_id=self.engine_id, status_code=status, body=excerpt)
        return err

    # -- request building -----------------------------------------------------------------------------
    def _adapter(self, model: str) -> Any:
        """The model's adapter, asked for on every request (:meth:`ModelAdapter.for_model` is the one cache)."""
        from jarvis_core.defaults import ModelAdapter

        return ModelAdapter.for_model(model, self.engine_id, user_rules=self._model_defaults, path=self.model_file)

    def _checked_mode(self, messages: Sequence[MessageLike], tools: Any, options: Mapping[str, Any]) -> str:
        """:meth:`check_options`, then the requested tool mode (``"auto"`` still to be resolved)."""
        self.check_options(options)
        if not tools and not json_mode.has_tool_history(messages):
            return "native"
        mode = options.get("tool_mode") or self.tool_mode
        if mode not in TOOL_MODES:
            raise InvalidOptionValueError(self.engine_id, "tool_mode", f"expected one of {', '.join(TOOL_MODES)}",
                                          value=mode)
        return mode

    def _auto_mode(self) -> str:
        """The mode ``auto`` means here (an engine that must ask its server overrides this and :meth:`_aauto_mode`)."""
        return "native"

    async def _aauto_mode(self) -> str:
        """Async twin of :meth:`_auto_mode`."""
        return self._auto_mode()

    def _wire_sampling(self, adapter: Any, explicit: Dict[str, Any]) -> Dict[str, Any]:
        """The sampling fields sent for ``explicit`` values (``None``: unset) over the model's defaults."""
        wire: Dict[str, Any] = {}
        for key, value in adapter.sampling(explicit).items():
            if value is None or (key not in self.default_sampling and explicit.get(key) is None):
                continue  # a family default this server cannot take
            if key == "top_k" and value <= 0:
                if self.top_k_disabled is None:
                    continue
                value = self.top_k_disabled
            wire[self.option_renames.get(key, key)] = value
        return wire

    def _build(self, messages: Sequence[MessageLike], model: str, temperature: Optional[float],
               max_tokens: Optional[int], tools: Optional[Sequence[ToolLike]], options: Dict[str, Any],
               mode: str, stream: bool) -> _Call:
        wire_tools = tools_to_openai(tools)
        dropped = False
        if wire_tools and model in self._no_tools_models and mode == "native":
            self._report_dropped(model, wire_tools, "the server said earlier that it does not support tools")
            wire_tools, dropped = None, True
        adapter = self._adapter(model)
        explicit: Dict[str, Any] = {"temperature": temperature}
        extra: Dict[str, Any] = {}
        for key, value in options.items():
            if key in SAMPLING_OPTIONS:
                explicit[key] = value
            elif key != "tool_mode":
                extra[key] = value
        if any(value is not None for value in explicit.values()):
            wire = self._wire_sampling(adapter, explicit)
        else:  # the common call: the model's defaults, worked out once per model and engine class
            wire = dict(adapter.derived((_DEFAULT_SAMPLING, type(self)), lambda a: self._wire_sampling(a, {"temperature": None})))
        temp = wire.pop("temperature", None)
        wire_messages: Any = messages
        if wire_tools and mode == "json_schema":
            if extra.get("response_format") is not None:
                raise ConflictingOptionsError(
                    self.engine_id, ["response_format", "tool_mode"],
                    "the json_schema tool mode sends the tools as a response format of its own; drop "
                    "response_format, or use tool_mode='native' with a server that supports tools")
            choice = extra.pop("tool_choice", None)
            extra.pop("parallel_tool_calls", None)
            forced = json_mode.forced_tool_name(choice)
            answer = choice in (None, "auto") and not forced
            # tool_choice="none" is still constrained (only {"content": ...}), without the tool note; strings are
            # bounded so that a small model cannot run into max_tokens inside the JSON.
            note_tools = [] if choice == "none" else wire_tools
            wire_messages = json_mode.rewrite_messages(messages_to_dicts(messages, reasoning_field=self.reasoning_field),
                                                       note_tools, answer=answer)
            try:
                extra["response_format"] = json_mode.response_format_for_choice(
                    wire_tools, choice, max_content_length=json_mode.content_limit(max_tokens))
            except ValueError as exc:
                raise ConflictingOptionsError(self.engine_id, ["tool_choice", "tools"], str(exc)) from None
            payload_tools = None
        else:
            payload_tools = wire_tools
            if mode == "json_schema" and not wire_tools:
                # A template without tool support cannot render earlier calls and results either, even on a
                # request that offers no tools (an agent's answer turn): they go as text.
                wire_messages = json_mode.rewrite_messages(
                    messages_to_dicts(messages, reasoning_field=self.reasoning_field), [])
        wire.update(extra)
        payload = build_chat_payload(wire_messages, model=model, temperature=temp, max_tokens=max_tokens,
                                     tools=payload_tools, stream=stream, options=wire,
                                     reasoning_field=self.reasoning_field)
        post = adapter if adapter.needs_postprocessing(wire_tools) else None
        call = _Call(model, payload, mode if wire_tools else "native", wire_tools, post)
        call.dropped = dropped
        return call

    # -- tools dropped --------------------------------------------------------------------------------
    def _report_dropped(self, model: str, tools: Sequence[Mapping[str, Any]], reason: str) -> None:
        names = [t["function"]["name"] for t in tools]
        warnings.warn(
            f"{self.engine_id}: sending the request for {model!r} without its {len(names)} tool(s): {reason}. "
            "Start the server with tool calling enabled (vLLM: --enable-auto-tool-choice --tool-call-parser …) "
            "or use tool_mode='json_schema'.",
            RuntimeWarning, stacklevel=4,
        )
        bus = self._bus
        if bus is None:
            from jarvis_core.events import default_bus

            bus = default_bus()
        bus.publish(EventType.TOOLS_DROPPED, engine=self.engine_id, model=model, tools=names, reason=reason[:300])

    def supports_tools(self, model: str) -> Optional[bool]:
        """False once the server has refused tools for ``model`` (this engine then sends it none); None
        otherwise: an OpenAI-compatible server does not say per model."""
        return False if model in self._no_tools_models else None

    def _drop_tools(self, call: _Call, exc: ToolsNotSupportedError) -> bool:
        """Strip the tools from ``call`` after the server refused them; False when there were none to drop."""
        if "tools" not in call.payload:
            return False
        self._no_tools_models.add(call.model)
        self._report_dropped(call.model, call.payload["tools"], str(exc))
        payload = dict(call.payload)
        for key in ("tools", "tool_choice", "parallel_tool_calls"):
            payload.pop(key, None)
        call.payload = payload
        call.dropped = True
        return True

    # -- replies --------------------------------------------------------------------------------------
    def _finish(self, call: _Call, payload: Any) -> Completion:
        """The :class:`Completion` of a non-streamed reply, post-processed for ``call``."""
        with self.scrubbed():
            completion = parse_chat_completion(payload, engine_id=self.engine_id)
        if call.mode == "json_schema":
            action = json_mode.parse_action(completion.content, call.tool_names)
            meta = {**completion.metadata, "tool_mode": "json_schema"}
            if action.problem:
                meta["parser_diagnostics"] = [action.problem]
            finish = "tool_calls" if action.tool_calls else completion.finish_reason
            return attrs.evolve(completion, content=action.content, tool_calls=action.tool_calls, finish_reason=finish,
                                metadata=meta)
        if call.adapter is not None:
            completion = call.adapter.postprocess(completion, call.tools)
        if call.dropped:
            completion = attrs.evolve(completion, metadata={**completion.metadata, "tools_dropped": True})
        return completion

    # -- generation -----------------------------------------------------------------------------------
    def generate(
        self,
        messages: Sequence[MessageLike],
        *,
        model: str,
        temperature: Optional[float] = None,
        max_tokens: int = 1024,
        tools: Optional[Sequence[ToolLike]] = None,
        **options: Any,
    ) -> Completion:
        """One non-streamed chat completion."""
        mode = self._checked_mode(messages, tools, options)
        if any_images(messages):
            self.check_vision(model)
        if mode == "auto":
            mode = self._auto_mode()
        call = self._build(messages, model, temperature, max_tokens, tools, options, mode, stream=False)
        try:
            payload = self.request_json("POST", self.chat_path, json_body=call.payload, model=model)
        except ToolsNotSupportedError as exc:
            if not self._drop_tools(call, exc):
                raise
            payload = self.request_json("POST", self.chat_path, json_body=call.payload, model=model)
        return self._finish(call, payload)

    async def agenerate(
        self,
        messages: Sequence[MessageLike],
        *,
        model: str,
        temperature: Optional[float] = None,
        max_tokens: int = 1024,
        tools: Optional[Sequence[ToolLike]] = None,
        **options: Any,
    ) -> Completion:
        """Async twin of :meth:`generate`, on the engine's async client (no worker thread)."""
        mode = self._checked_mode(messages, tools, options)
        if any_images(messages):
            await self.acheck_vision(model)
        if mode == "auto":
            mode = await self._aauto_mode()
        call = self._build(messages, model, temperature, max_tokens, tools, options, mode, stream=False)
        try:
            payload = await self.arequest_json("POST", self.chat_path, json_body=call.payload, model=model)
        except ToolsNotSupportedError as exc:
            if not self._drop_tools(call, exc):
                raise
            payload = await self.arequest_json("POST", self.chat_path, json_body=call.payload, model=model)
        return self._finish(call, payload)

    def stream_full(
        self,
        messages: Sequence[MessageLike],
        *,
        model: str,
        temperature: Optional[float] = None,
        max_tokens: int = 1024,
        tools: Optional[Sequence[ToolLike]] = None,
        **options: Any,
    ) -> AsyncIterator[StreamChunk]:
        """Stream content and reasoning deltas, then one final chunk with tool calls, usage and finish reason.

        Nothing is sent (and options are not checked) until iteration starts, as with any async generator.
        """
        return self._run_stream(messages, model, temperature, max_tokens, tools, options, False)

    def stream(
        self,
        messages: Sequence[MessageLike],
        *,
        model: str,
        temperature: Optional[float] = None,
        max_tokens: int = 1024,
        tools: Optional[Sequence[ToolLike]] = None,
        **options: Any,
    ) -> AsyncIterator[str]:
        """Stream the response text (the content deltas of :meth:`stream_full`)."""
        return self._run_stream(messages, model, temperature, max_tokens, tools, options, True)

    async def _run_stream(self, messages: Sequence[MessageLike], model: str, temperature: Optional[float],
                          max_tokens: Optional[int], tools: Optional[Sequence[ToolLike]], options: Dict[str, Any],
                          text_only: bool) -> AsyncIterator[Any]:
        mode = self._checked_mode(messages, tools, options)
        if any_images(messages):
            await self.acheck_vision(model)
        if mode == "auto":
            mode = await self._aauto_mode()
        call = self._build(messages, model, temperature, max_tokens, tools, options, mode, stream=True)
        decoder = self._chat_decoder()
        constrained = call.mode == "json_schema"
        buffered: List[str] = []
        proc = call.adapter.stream_processor(call.tools) if call.adapter is not None and not constrained else None
        # The hot path: no post-processing, so each payload becomes at most one yield.
        fast = decoder.decode_text if text_only else decoder.decode
        decode = decoder.decode
        plain = proc is None and not constrained
        async with contextlib.AsyncExitStack() as stack:
            sse = self._event_decoder()
            try:
                batches = await stack.enter_async_context(self.astream_batches(
                    "POST", self.chat_path, sse, json_body=call.payload, model=model, max_tokens=max_tokens))
            except ToolsNotSupportedError as exc:
                if not self._drop_tools(call, exc):
                    raise
                sse = self._event_decoder()
                batches = await stack.enter_async_context(self.astream_batches(
                    "POST", self.chat_path, sse, json_body=call.payload, model=model, max_tokens=max_tokens))
            # One network read holds many events; they are handled in this plain loop (no per-line async
            # hop). The decoder ends the events at [DONE] and reads on, so the connection returns to the pool.
            async for payloads in batches:
                for raw in payloads:
                    if plain:
                        out = fast(raw)
                        if out is not None:
                            yield out
                        continue
                    chunk = decode(raw)
                    if chunk is None:
                        continue
                    if constrained:
                        if chunk.content:
                            buffered.append(chunk.content)
                        if chunk.reasoning and not text_only:
                            yield StreamChunk(reasoning=chunk.reasoning)
                    elif proc is not None:
                        for out in proc.feed(chunk):
                            if not text_only:
                                yield out
                            elif out.content:
                                yield out.content
        final = decoder.finish(done=sse.done or decoder.finish_reason is not None)
        for chunk in self._final_chunks(call, final, "".join(buffered) if constrained else None, proc):
            if not text_only:
                yield chunk
            elif chunk.content:
                yield chunk.content

    def _event_decoder(self) -> SSEByteDecoder:
        """The SSE decoder of one streamed request, ending the events at ``[DONE]`` (an engine that watches
        its streams returns its own)."""
        return SSEByteDecoder(until_done=True)

    def _chat_decoder(self) -> ChatStreamDecoder:
        """The chat-chunk decoder of one streamed request (an engine that watches its streams returns its own)."""
        return ChatStreamDecoder(engine_id=self.engine_id)

    def _final_chunks(self, call: _Call, final: List[StreamChunk], text: Optional[str], proc: Any) -> List[StreamChunk]:
        last = final[-1]
        meta = dict(last.metadata)
        if call.dropped:
            meta["tools_dropped"] = True
        if text is not None:
            action = json_mode.parse_action(text, call.tool_names)
            meta["tool_mode"] = "json_schema"
            if action.problem:
                meta["parser_diagnostics"] = [action.problem]
            finish = "tool_calls" if action.tool_calls else last.finish_reason
            out = [StreamChunk(content=action.content)] if action.content else []
            return [*out, last.replace(tool_calls=action.tool_calls, finish_reason=finish, metadata=meta)]
        last = last.replace(metadata=meta) if meta != last.metadata else last
        if proc is None:
            return [*final[:-1], last]
        return [*(c for chunk in [*final[:-1], last] for c in proc.feed(chunk)), *proc.finish()]

    # -- images ---------------------------------------------------------------------------------------
    def check_vision(self, model: str) -> None:
        """Raise :class:`VisionNotSupportedError` when the server says the model cannot take images. Default:
        nothing to ask (the server answers a text-only model's request with its own error)."""

    async def acheck_vision(self, model: str) -> None:
        """Async twin of :meth:`check_vision`."""
        self.check_vision(model)

    # -- embeddings -----------------------------------------------------------------------------------
    #: Where ``embed`` posts (OpenAI's ``/v1/embeddings``).
    embed_path: ClassVar[str] = "/v1/embeddings"
    embed_options: ClassVar[FrozenSet[str]] = frozenset({"dimensions", "encoding_format"})

    def embed(self, inputs: Union[str, Sequence[str]], *, model: str, **options: Any) -> EmbeddingResult:
        """Embeddings from the server's ``/v1/embeddings`` (llama.cpp needs ``--embeddings``; vLLM and SGLang an
        embedding model), in batches of :attr:`embed_batch_size`."""
        return embed_openai(self, self.embed_path, inputs, model=model, options=options)

    async def aembed(self, inputs: Union[str, Sequence[str]], *, model: str, **options: Any) -> EmbeddingResult:
        """Async twin of :meth:`embed`, on the engine's async client."""
        return await aembed_openai(self, self.embed_path, inputs, model=model, options=options)

    # -- management -----------------------------------------------------------------------------------
    def list_models(self) -> List[str]:
        """Model ids from ``GET /v1/models``."""
        payload = self.request_json("GET", self.models_path, timeout=self.health_timeout * 5)
        data = payload.get("data") if isinstance(payload, Mapping) else None
        if not isinstance(data, list):
            excerpt = self.redact(str(payload)[:200])
            raise MalformedResponseError(f"{self.engine_id}: {self.models_path} answered without a model list: {excerpt}",
                                         engine_id=self.engine_id, excerpt=excerpt)
        return [str(m["id"]) for m in data if isinstance(m, Mapping) and m.get("id")]

    def prepare(self, model: str) -> None:
        """Check that the server offers ``model``; raises :class:`ModelNotFoundError` naming the ones it has."""
        available = self.list_models()
        if model not in available:
            listing = ", ".join(available) or "none"
            raise ModelNotFoundError(
                f"{self.engine_id}: the server at {self.base_url} does not serve {model!r}; it has: {listing}",
                engine_id=self.engine_id, status_code=404,
            )
