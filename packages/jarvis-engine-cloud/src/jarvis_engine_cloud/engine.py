"""``CloudEngine``: OpenAI, Anthropic and Google Gemini behind one engine, routed by model name.

The model name picks the provider (:mod:`.routing`); each provider has its own client with its own
connection pool, created on first use. Keys and base URLs come from the keyword arguments (the
``[engine.cloud]`` config table) or the environment (:mod:`.credentials`). Keys never appear in
errors, logs, events or ``repr``: every error leaving the engine is scrubbed of them.

Sampling arguments left unset are not sent, so each provider applies its own defaults; this matters
because OpenAI's reasoning models and Anthropic's extended thinking reject any temperature but their own.
"""

from __future__ import annotations

import threading
from typing import Any, AsyncIterator, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import httpx

from jarvis_core.embeddings import EmbeddingResult
from jarvis_core.engine.base import InferenceEngine, supports_embeddings
from jarvis_core.engine.limits import check_count, check_seconds
from jarvis_core.engine.redaction import protect_logs
from jarvis_core.errors import (
    AuthenticationError,
    ConfigError,
    EmbeddingsNotSupportedError,
    InvalidOptionValueError,
    StructuredOutputNotSupportedError,
)
from jarvis_core.types import Completion, MessageLike, StreamChunk
from jarvis_engine_cloud.anthropic_wire import answer_from_tool, answer_tool
from jarvis_engine_cloud.credentials import (
    KEY_VARS,
    ProviderSettings,
    missing_key_error,
    resolve_settings,
)
from jarvis_engine_cloud.provider_base import ProviderClient
from jarvis_engine_cloud.providers import PROVIDER_CLASSES
from jarvis_engine_cloud.retry import RetryPolicy
from jarvis_engine_cloud.routing import ANTHROPIC, GOOGLE, OPENAI, PROVIDERS, Route, display_name, route_model

__all__ = ["CloudEngine"]


class CloudEngine(InferenceEngine):
    """One engine for the OpenAI, Anthropic and Gemini REST APIs.

    :param openai_api_key: / :param anthropic_api_key: / :param gemini_api_key: keys; default to
        ``OPENAI_API_KEY``, ``ANTHROPIC_API_KEY``, ``GEMINI_API_KEY`` or ``GOOGLE_API_KEY``.
    :param openai_base_url: / :param anthropic_base_url: / :param gemini_base_url: endpoints (proxies,
        tests); default to ``OPENAI_BASE_URL``, ``ANTHROPIC_BASE_URL``, ``GEMINI_BASE_URL``, then the
        public APIs.
    :param timeout: read timeout in seconds (for streams: between two chunks).
    :param connect_timeout: seconds to establish a connection.
    :param health_timeout: seconds :meth:`health` waits for each provider's models endpoint.
    :param max_retries: retries on 429 and 5xx (exponential backoff with jitter, ``Retry-After`` honoured).
    :param anthropic_version: the ``anthropic-version`` header.
    :param openai_max_tokens_field: ``max_completion_tokens`` or ``max_tokens``; by default the former for
        api.openai.com and the latter for any other base URL.
    :param max_connections: / :param max_keepalive_connections: each provider's connection limits (default
        100, and as many kept alive; see :mod:`jarvis_core.engine.pool`).
    :param environ: where to read the variables (default ``os.environ``).
    :param transport: / :param async_transport: httpx transports for tests.
    :param sleep: / :param async_sleep: how to wait between retries (tests inject recorders).
    """

    engine_id = "cloud"
    #: Retries happen inside the provider clients (jarvis_engine_cloud.retry: Anthropic's 529 included), so
    #: the shared RetryingEngine (``[retry]``) only adds the fallbacks and does not multiply the attempts.
    retries_itself = True
    allowed_options = frozenset().union(*(cls.allowed_options for cls in PROVIDER_CLASSES.values()))

    def __init__(
        self,
        *,
        openai_api_key: Optional[str] = None,
        anthropic_api_key: Optional[str] = None,
        gemini_api_key: Optional[str] = None,
        openai_base_url: Optional[str] = None,
        anthropic_base_url: Optional[str] = None,
        gemini_base_url: Optional[str] = None,
        timeout: float = 120.0,
        connect_timeout: float = 10.0,
        health_timeout: float = 3.0,
        max_retries: int = 3,
        anthropic_version: str = "2023-06-01",
        openai_max_tokens_field: Optional[str] = None,
        environ: Optional[Mapping[str, str]] = None,
        transport: Optional[httpx.BaseTransport] = None,
        async_transport: Optional[httpx.AsyncBaseTransport] = None,
        sleep: Any = None,
        async_sleep: Any = None,
        deadline: Optional[float] = None,
        max_output_bytes: Optional[int] = None,
        max_line_bytes: Optional[int] = None,
        max_connections: Optional[int] = None,
        max_keepalive_connections: Optional[int] = None,
    ) -> None:
        self._settings: Dict[str, ProviderSettings] = {
            OPENAI: resolve_settings(OPENAI, api_key=openai_api_key, base_url=openai_base_url, environ=environ),
            ANTHROPIC: resolve_settings(ANTHROPIC, api_key=anthropic_api_key, base_url=anthropic_base_url, environ=environ),
            GOOGLE: resolve_settings(GOOGLE, api_key=gemini_api_key, base_url=gemini_base_url, environ=environ),
        }
        try:  # provider clients are built on first use; bad numbers are config errors now
            for name, value in (("timeout", timeout), ("connect_timeout", connect_timeout),
                                ("health_timeout", health_timeout), ("deadline", deadline)):
                check_seconds(name, value, allow_none=name == "deadline")
            for name, count in (("max_output_bytes", max_output_bytes), ("max_line_bytes", max_line_bytes),
                                ("max_connections", max_connections)):
                check_count(name, count)
            check_count("max_keepalive_connections", max_keepalive_connections, minimum=0)
        except ValueError as exc:
            raise ConfigError(f"cloud: {exc}", key=str(exc).split(" ", 1)[0]) from None
        self._secrets = tuple(s.key for s in self._settings.values() if s.key)
        protect_logs(self._secrets)
        self.retry = RetryPolicy(max_retries=max_retries, sleep=sleep, async_sleep=async_sleep)
        self._client_options: Dict[str, Any] = {
            "timeout": timeout,
            "connect_timeout": connect_timeout,
            "health_timeout": health_timeout,
            "transport": transport,
            "async_transport": async_transport,
            "deadline": deadline,
            "max_output_bytes": max_output_bytes,
            "max_line_bytes": max_line_bytes,
            "max_connections": max_connections,
            "max_keepalive_connections": max_keepalive_connections,
        }
        self._extra: Dict[str, Dict[str, Any]] = {
            ANTHROPIC: {"anthropic_version": anthropic_version}, OPENAI: {"max_tokens_field": openai_max_tokens_field}}
        self._clients: Dict[str, ProviderClient] = {}
        self._lock = threading.Lock()

    # -- providers ----------------------------------------------------------------------------------
    def providers(self) -> List[str]:
        """The providers that have a key, in routing order."""
        return [p for p in PROVIDERS if self._settings[p].has_key]

    def client(self, provider: str) -> ProviderClient:
        """The client of ``provider`` (created on first use); raises :class:`AuthenticationError` without a key."""
        if provider not in self._settings:
            raise InvalidOptionValueError("cloud", "provider", f"unknown provider; known: {', '.join(PROVIDERS)}",
                                          value=provider)
        existing = self._clients.get(provider)
        if existing is not None:
            return existing
        settings = self._settings[provider]
        if not settings.has_key:
            raise missing_key_error(provider)
        with self._lock:  # discovery probes health from several threads
            client = self._clients.get(provider)
            if client is None:
                client = self._clients[provider] = PROVIDER_CLASSES[provider](
                    settings, retry=self.retry, secrets=self._secrets, **self._client_options,
                    **self._extra.get(provider, {}),
                )
        return client

    def route(self, model: str) -> Route:
        """Where ``model`` goes (see :mod:`jarvis_engine_cloud.routing`)."""
        return route_model(model)

    def secret_values(self) -> Sequence[Any]:
        """Every provider's key: each is masked in whatever any provider's server says."""
        return self._secrets

    def _prepare_call(self, model: str, temperature: Optional[float], max_tokens: int, tools: Optional[Sequence[Any]],
                      options: Dict[str, Any]) -> Tuple[ProviderClient, Route, Dict[str, Any]]:
        """The client ``model`` routes to, the route, and the client call's keyword arguments (options checked)."""
        options = {k: v for k, v in options.items() if v is not None}  # None means "unset"
        self.check_options(options)
        route = route_model(model)
        client = self.client(route.provider)
        if "response_format" in options and "response_format" not in client.allowed_options:
            raise StructuredOutputNotSupportedError(engine_id=f"cloud ({route.provider})", model=route.model)
        client.check_options(options)
        return client, route, dict(model=route.model, temperature=temperature, max_tokens=max_tokens, tools=tools,
                                   **options)

    # -- generation ---------------------------------------------------------------------------------
    def generate(
        self,
        messages: Sequence[MessageLike],
        *,
        model: str,
        temperature: Optional[float] = None,
        max_tokens: int = 1024,
        tools: Optional[Sequence[Any]] = None,
        **options: Any,
    ) -> Completion:
        """One request to the provider ``model`` routes to; the normalized :class:`Completion`."""
        with self.scrubbed():
            client, route, kwargs = self._prepare_call(model, temperature, max_tokens, tools, options)
            return self._answer(route, kwargs, client.generate(messages, **kwargs))

    async def agenerate(
        self,
        messages: Sequence[MessageLike],
        *,
        model: str,
        temperature: Optional[float] = None,
        max_tokens: int = 1024,
        tools: Optional[Sequence[Any]] = None,
        **options: Any,
    ) -> Completion:
        """Async twin of :meth:`generate`, on the provider's async client (retries wait without blocking)."""
        with self.scrubbed():
            client, route, kwargs = self._prepare_call(model, temperature, max_tokens, tools, options)
            return self._answer(route, kwargs, await client.agenerate(messages, **kwargs))

    async def stream_full(
        self,
        messages: Sequence[MessageLike],
        *,
        model: str,
        temperature: Optional[float] = None,
        max_tokens: int = 1024,
        tools: Optional[Sequence[Any]] = None,
        **options: Any,
    ) -> AsyncIterator[StreamChunk]:
        """Stream from the provider ``model`` routes to: text and reasoning deltas, then one final chunk
        with the complete tool calls, the finish reason and the usage."""
        with self.scrubbed():
            client, route, kwargs = self._prepare_call(model, temperature, max_tokens, tools, options)
            stream = client.stream_batches(messages, **kwargs)
            forced = self._forced_tool(route, kwargs)
            try:
                async for batch in stream:  # one network read's chunks: one async step per chunk, here
                    for chunk in batch:
                        yield chunk if forced is None or not chunk.tool_calls else answer_from_tool(chunk, forced)
            finally:
                await stream.aclose()

    @staticmethod
    def _forced_tool(route: Route, options: Mapping[str, Any]) -> Optional[str]:
        """The name of Anthropic's forced answer tool for a structured-output request (``None`` otherwise)."""
        if route.provider != ANTHROPIC or not options.get("response_format"):
            return None
        tool = answer_tool(options["response_format"])
        return None if tool is None else str(tool["name"])

    def _answer(self, route: Route, options: Mapping[str, Any], completion: Completion) -> Completion:
        forced = self._forced_tool(route, options)
        return completion if forced is None else answer_from_tool(completion, forced)

    # -- embeddings ---------------------------------------------------------------------------------
    def embed(self, inputs: Union[str, Sequence[str]], *, model: str, **options: Any) -> EmbeddingResult:
        """Embeddings from the provider ``model`` routes to (OpenAI's ``/embeddings``, Gemini's
        ``batchEmbedContents``); Anthropic has none: ``EmbeddingsNotSupportedError`` naming it."""
        with self.scrubbed():
            route, client = self._embedder(model)
            return client.embed(inputs, model=route.model, **options)

    async def aembed(self, inputs: Union[str, Sequence[str]], *, model: str, **options: Any) -> EmbeddingResult:
        """Async twin of :meth:`embed`."""
        with self.scrubbed():
            route, client = self._embedder(model)
            return await client.aembed(inputs, model=route.model, **options)

    def _embedder(self, model: str) -> tuple[Route, ProviderClient]:
        route = route_model(model)
        client = self.client(route.provider)
        if not supports_embeddings(client):
            raise EmbeddingsNotSupportedError(engine_id=f"cloud ({route.provider})", model=route.model)
        return route, client

    # -- management ---------------------------------------------------------------------------------
    def list_models(self, provider: Optional[str] = None) -> List[str]:
        """Model ids from each provider's models endpoint (only providers with a key; or just ``provider``).

        Names are listed so that passing one back routes to the same provider (``google/gemma-3-27b-it``).
        """
        with self.scrubbed():
            targets = [provider] if provider else self.providers()
            if not targets:
                names = ", ".join(v for p in PROVIDERS for v in KEY_VARS[p])
                raise AuthenticationError(f"cloud: no provider has an API key; set one of {names}", engine_id="cloud")
            models: List[str] = []
            for name in targets:
                models += [display_name(name, m) for m in self.client(name).list_models()]
            return models

    def health(self, provider: Optional[str] = None) -> bool:
        """True when a provider with a key (or ``provider``) answers its models endpoint within the health
        timeout. Providers without a key are not asked; with no key at all this is False at once. Never raises."""
        targets = [provider] if provider else self.providers()
        for name in targets:
            settings = self._settings.get(name)
            if settings is not None and settings.has_key and self.client(name).health():
                return True
        return False

    def prepare(self, model: str) -> None:
        """Check that ``model`` routes to a provider with a key (no request is made)."""
        self.client(route_model(model).provider)

    def close(self) -> None:
        for client in self._clients.values():
            client.close()

    async def aclose(self) -> None:
        for client in self._clients.values():
            await client.aclose()

    def __repr__(self) -> str:
        keys = " ".join(f"{p}={'key' if self._settings[p].has_key else 'no-key'}" for p in PROVIDERS)
        return f"<CloudEngine 'cloud' {keys}>"
