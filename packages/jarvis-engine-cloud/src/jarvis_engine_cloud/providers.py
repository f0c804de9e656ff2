"""The three provider clients: OpenAI Chat Completions, Anthropic Messages, Google Gemini.

Each turns the engine call into its provider's request (codecs in :mod:`.anthropic_wire`,
:mod:`.gemini_wire` and the shared :mod:`jarvis_core.engine.openai_wire`), sends it with the pooled
clients of :class:`~.provider_base.ProviderClient`, and normalizes the answer.
"""

from __future__ import annotations

from typing import Any, AsyncGenerator, AsyncIterator, ClassVar, Dict, FrozenSet, List, Optional, Sequence, Tuple, Union
from urllib.parse import quote

import attrs

from jarvis_core.embeddings import EmbeddingResult, batches, check_inputs, join_results
from jarvis_core.engine.messages import coerce_messages
from jarvis_core.engine.openai_embeddings import aembed_openai, embed_openai
from jarvis_core.engine.openai_wire import ChatStreamDecoder, build_chat_payload, parse_chat_completion
from jarvis_core.engine.streams import SSEByteDecoder
from jarvis_core.errors import AuthenticationError, EngineHTTPError, InvalidOptionError, ModelNotFoundError
from jarvis_core.types import Completion, MessageLike, StreamChunk
from jarvis_engine_cloud import anthropic_wire, gemini_wire
from jarvis_engine_cloud.provider_base import ProviderClient
from jarvis_engine_cloud.routing import ANTHROPIC, GOOGLE, OPENAI

__all__ = ["PROVIDER_CLASSES", "AnthropicClient", "GeminiClient", "OpenAIClient"]

_PAGE_LIMIT = 50  # list_models follows at most this many pages


class AnthropicClient(ProviderClient):
    """``POST /v1/messages`` (plain and SSE) and ``GET /v1/models``."""

    provider = ANTHROPIC
    allowed_options = anthropic_wire.OPTIONS
    strip_suffix = "/v1"

    def __init__(self, settings: Any, *, anthropic_version: str = "2023-06-01", **kwargs: Any) -> None:
        self.anthropic_version = anthropic_version
        super().__init__(settings, **kwargs)

    def auth_headers(self) -> Dict[str, str]:
        headers = {"anthropic-version": self.anthropic_version}
        if self._key:
            headers["x-api-key"] = self._key.reveal()
        return headers

    def completion_request(
        self, messages: Sequence[MessageLike], model: str, temperature: Optional[float], max_tokens: int,
        tools: Optional[Sequence[Any]], options: Dict[str, Any],
    ) -> Tuple[str, Any]:
        return "/v1/messages", anthropic_wire.build_payload(
            messages, model=model, max_tokens=max_tokens, temperature=temperature, tools=tools, options=options
        )

    def completion_from(self, payload: Any, model: str) -> Completion:
        completion = anthropic_wire.parse_message(payload)
        return completion if completion.model else attrs.evolve(completion, model=model)

    async def stream_batches(
        self, messages: Sequence[MessageLike], *, model: str, temperature: Optional[float] = None,
        max_tokens: int = 1024, tools: Optional[Sequence[Any]] = None, **options: Any,
    ) -> AsyncGenerator[List[StreamChunk], None]:
        self.check_options(options)
        body = anthropic_wire.build_payload(
            messages, model=model, max_tokens=max_tokens, temperature=temperature, tools=tools, options=options,
            stream=True,
        )

        def once() -> AsyncIterator[List[StreamChunk]]:
            return self.decoded_stream("/v1/messages", body, anthropic_wire.AnthropicStreamDecoder(), model=model,
                                       max_tokens=max_tokens)

        async for batch in self.retrying_stream(once, model=model):
            yield batch

    def models_request(self) -> tuple[Any, ...]:
        return "/v1/models", {"limit": 1}

    def list_models(self) -> List[str]:
        names: List[str] = []
        params: Dict[str, Any] = {"limit": 1000}
        for _ in range(_PAGE_LIMIT):
            page = self.get_json("/v1/models", params=params)
            data = page.get("data") if isinstance(page, dict) else None
            names += [str(m["id"]) for m in data or () if isinstance(m, dict) and m.get("id")]
            if not (isinstance(page, dict) and page.get("has_more") and page.get("last_id")):
                break
            params = {"limit": 1000, "after_id": page["last_id"]}
        return names


class GeminiClient(ProviderClient):
    """``models/<m>:generateContent``, ``:streamGenerateContent?alt=sse`` and ``GET models``.

    The key travels in the ``x-goog-api-key`` header, never in the URL (URLs end up in logs).
    """

    provider = GOOGLE
    allowed_options = gemini_wire.OPTIONS

    def __init__(self, settings: Any, **kwargs: Any) -> None:
        super().__init__(settings, **kwargs)
        # A base URL that already names an API version is used as is; otherwise v1beta is added.
        last = self.base_url.rsplit("/", 1)[-1]
        self.api_root = "" if last in ("v1", "v1beta", "v1alpha") else "/v1beta"

    def auth_headers(self) -> Dict[str, str]:
        return {"x-goog-api-key": self._key.reveal()} if self._key else {}

    def _model_path(self, model: str, method: str) -> str:
        resource = model if model.startswith("tunedModels/") else f"models/{quote(model, safe='-._~')}"
        return f"{self.api_root}/{resource}:{method}"

    #: ``batchEmbedContents`` takes at most 100 requests.
    embed_batch_size = 100
    embed_options: ClassVar[FrozenSet[str]] = frozenset({"dimensions", "task_type"})

    def _embed_calls(self, inputs: Union[str, Sequence[str]], model: str,
                     options: Dict[str, Any]) -> List[Tuple[int, str, Dict[str, Any]]]:
        unknown = [k for k in options if k not in self.embed_options]
        if unknown:
            raise InvalidOptionError(self.engine_id, unknown, self.embed_options)
        path = self._model_path(model, "batchEmbedContents")
        texts = check_inputs(inputs, engine_id=self.engine_id)
        return [(offset, path, gemini_wire.embed_request(batch, model, options))
                for offset, batch in batches(texts, self.embed_batch_size)]

    def embed(self, inputs: Union[str, Sequence[str]], *, model: str, **options: Any) -> EmbeddingResult:
        """Embeddings from ``models/<m>:batchEmbedContents`` (e.g. ``gemini-embedding-001``), 100 per request;
        options ``dimensions`` (``outputDimensionality``) and ``task_type`` (``taskType``)."""
        parts = [(offset, gemini_wire.embed_result(self.request_json("POST", path, json_body=body, model=model), model))
                 for offset, path, body in self._embed_calls(inputs, model, options)]
        return join_results(parts)

    async def aembed(self, inputs: Union[str, Sequence[str]], *, model: str, **options: Any) -> EmbeddingResult:
        parts = []
        for offset, path, body in self._embed_calls(inputs, model, options):
            payload = await self.arequest_json("POST", path, json_body=body, model=model)
            parts.append((offset, gemini_wire.embed_result(payload, model)))
        return join_results(parts)

    def retry_after(self, response: Any, body: Any) -> Optional[float]:
        header = super().retry_after(response, body)
        if header is not None:
            return header
        # Gemini puts its hint in the error details: {"@type": "...RetryInfo", "retryDelay": "13s"}.
        error = body.get("error") if isinstance(body, dict) else None
        details = error.get("details") if isinstance(error, dict) else None  # a proxy may send {"error": "text"}
        for detail in details if isinstance(details, list) else ():
            delay = detail.get("retryDelay") if isinstance(detail, dict) else None
            if isinstance(delay, str) and delay.endswith("s"):
                try:
                    return max(0.0, float(delay[:-1]))
                except ValueError:
                    return None
        return None

    def refine_error(self, error: EngineHTTPError, status: int, body: Any) -> EngineHTTPError:
        text = str(body).lower()
        if status == 400 and ("api_key_invalid" in text or "api key not valid" in text or "api key expired" in text):
            return AuthenticationError(
                f"cloud (google): Gemini rejected the API key (HTTP 400); check GEMINI_API_KEY / GOOGLE_API_KEY: "
                f"{error.body}",
                engine_id="cloud", status_code=status, body=error.body,
            )
        if status == 404 and not isinstance(error, ModelNotFoundError):
            return ModelNotFoundError(str(error), engine_id="cloud", status_code=status, body=error.body)
        return error

    def completion_request(
        self, messages: Sequence[MessageLike], model: str, temperature: Optional[float], max_tokens: int,
        tools: Optional[Sequence[Any]], options: Dict[str, Any],
    ) -> Tuple[str, Any]:
        body = gemini_wire.build_payload(messages, max_tokens=max_tokens, temperature=temperature, tools=tools, options=options)
        return self._model_path(model, "generateContent"), body

    def completion_from(self, payload: Any, model: str) -> Completion:
        return gemini_wire.parse_response(payload, model=model)

    async def stream_batches(
        self, messages: Sequence[MessageLike], *, model: str, temperature: Optional[float] = None,
        max_tokens: int = 1024, tools: Optional[Sequence[Any]] = None, **options: Any,
    ) -> AsyncGenerator[List[StreamChunk], None]:
        self.check_options(options)
        body = gemini_wire.build_payload(messages, max_tokens=max_tokens, temperature=temperature, tools=tools, options=options)
        path = self._model_path(model, "streamGenerateContent") + "?alt=sse"

        def once() -> AsyncIterator[List[StreamChunk]]:
            # Gemini sends no [DONE]; some proxies add one.
            return self.decoded_stream(path, body, gemini_wire.GeminiStreamDecoder(model=model), model=model,
                                       max_tokens=max_tokens, sse=SSEByteDecoder(until_done=True))

        async for batch in self.retrying_stream(once, model=model):
            yield batch

    def models_request(self) -> tuple[Any, ...]:
        return f"{self.api_root}/models", {"pageSize": 1}

    def list_models(self) -> List[str]:
        names: List[str] = []
        params: Dict[str, Any] = {"pageSize": 1000}
        for _ in range(_PAGE_LIMIT):
            page = self.get_json(f"{self.api_root}/models", params=params)
            for m in (page.get("models") if isinstance(page, dict) else None) or ():
                methods = m.get("supportedGenerationMethods") if isinstance(m, dict) else None
                if isinstance(m, dict) and m.get("name") and (methods is None or "generateContent" in methods):
                    name = str(m["name"])
                    names.append(name[len("models/"):] if name.startswith("models/") else name)
            token = page.get("nextPageToken") if isinstance(page, dict) else None
            if not token:
                break
            params = {"pageSize": 1000, "pageToken": token}
        return names


class _OpenAIStream:
    """The OpenAI provider's stream decoder in the shape :meth:`ProviderClient.decoded_stream` takes: the
    shared chat-chunk decoder, and the final chunk labelled with the provider and the model."""

    __slots__ = ("_decoder", "_model", "_sse")

    def __init__(self, sse: SSEByteDecoder, model: str) -> None:
        self._decoder = ChatStreamDecoder(engine_id="cloud")
        self._sse = sse
        self._model = model

    def feed_datas(self, datas: List[str], out: List[StreamChunk]) -> List[StreamChunk]:
        decode = self._decoder.decode
        for data in datas:
            chunk = decode(data)  # an error payload raises its error
            if chunk is not None:
                out.append(chunk)
        return out

    def finish(self) -> List[StreamChunk]:
        decoder = self._decoder
        return [chunk.replace(metadata={**chunk.metadata, "provider": OPENAI, "model": decoder.model or self._model})
                for chunk in decoder.finish(done=self._sse.done)]


class OpenAIClient(ProviderClient):
    """``POST /chat/completions`` (plain and SSE) and ``GET /models`` under the base URL (``…/v1``)."""

    provider = OPENAI
    allowed_options: ClassVar[FrozenSet[str]] = frozenset(
        {"top_p", "stop", "seed", "presence_penalty", "frequency_penalty", "tool_choice", "response_format",
         "reasoning_effort", "parallel_tool_calls", "user", "logit_bias"}
    )

    def __init__(self, settings: Any, *, max_tokens_field: Optional[str] = None, **kwargs: Any) -> None:
        super().__init__(settings, **kwargs)
        if max_tokens_field is None:
            # OpenAI's reasoning models refuse max_tokens; many OpenAI-compatible proxies know only it.
            max_tokens_field = "max_completion_tokens" if "api.openai.com" in self.base_url else "max_tokens"
        self.max_tokens_field = max_tokens_field

    def auth_headers(self) -> Dict[str, str]:
        return {"Authorization": f"Bearer {self._key.reveal()}"} if self._key else {}

    def _payload(self, messages: Sequence[MessageLike], model: str, temperature: Optional[float], max_tokens: int,
                 tools: Optional[Sequence[Any]], options: Dict[str, Any], stream: bool) -> Dict[str, Any]:
        # Coercing first turns flat {id, name, arguments} calls (LiteLLM) into OpenAI's nested shape.
        return build_chat_payload(
            coerce_messages(messages), model=model, temperature=temperature, max_tokens=max_tokens, tools=tools,
            stream=stream, options=options, max_tokens_field=self.max_tokens_field,
        )

    def completion_request(
        self, messages: Sequence[MessageLike], model: str, temperature: Optional[float], max_tokens: int,
        tools: Optional[Sequence[Any]], options: Dict[str, Any],
    ) -> Tuple[str, Any]:
        return "/chat/completions", self._payload(messages, model, temperature, max_tokens, tools, options, False)

    embed_options: ClassVar[FrozenSet[str]] = frozenset({"dimensions", "encoding_format"})

    def embed(self, inputs: Union[str, Sequence[str]], *, model: str, **options: Any) -> EmbeddingResult:
        """Embeddings from OpenAI's ``/embeddings`` (e.g. ``text-embedding-3-small``), batched."""
        return embed_openai(self, "/embeddings", inputs, model=model, options=options)

    async def aembed(self, inputs: Union[str, Sequence[str]], *, model: str, **options: Any) -> EmbeddingResult:
        return await aembed_openai(self, "/embeddings", inputs, model=model, options=options)

    def completion_from(self, payload: Any, model: str) -> Completion:
        completion = parse_chat_completion(payload, engine_id="cloud")
        return attrs.evolve(
            completion, model=completion.model or model, metadata={**completion.metadata, "provider": OPENAI}
        )

    async def stream_batches(
        self, messages: Sequence[MessageLike], *, model: str, temperature: Optional[float] = None,
        max_tokens: int = 1024, tools: Optional[Sequence[Any]] = None, **options: Any,
    ) -> AsyncGenerator[List[StreamChunk], None]:
        self.check_options(options)
        body = self._payload(messages, model, temperature, max_tokens, tools, options, True)

        def once() -> AsyncIterator[List[StreamChunk]]:
            sse = SSEByteDecoder(until_done=True)  # after [DONE] the body is read to its end, ignored
            return self.decoded_stream("/chat/completions", body, _OpenAIStream(sse, model), model=model,
                                       max_tokens=max_tokens, sse=sse)

        async for batch in self.retrying_stream(once, model=model):
            yield batch

    def models_request(self) -> tuple[Any, ...]:
        return "/models", None

    def list_models(self) -> List[str]:
        page = self.get_json("/models")
        data = page.get("data") if isinstance(page, dict) else None
        return [str(m["id"]) for m in data or () if isinstance(m, dict) and m.get("id")]


#: provider name → client class
PROVIDER_CLASSES = {OPENAI: OpenAIClient, ANTHROPIC: AnthropicClient, GOOGLE: GeminiClient}
