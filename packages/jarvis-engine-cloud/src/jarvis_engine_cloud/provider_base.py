"""What the three provider clients share: pooled httpx clients, retries, typed and secret-free errors.

Each provider is a small :class:`~jarvis_core.engine.http.HTTPEngine` (one pooled ``httpx.Client`` and
one ``httpx.AsyncClient``, created on first use). :class:`ProviderClient` adds:

- :meth:`post_json` / :meth:`get_json`: one request, retried by the :class:`~.retry.RetryPolicy` on 429
  and 5xx (:meth:`apost_json`, the async twin, waits with ``asyncio.sleep``);
- :meth:`generate` / :meth:`agenerate`: a provider's :meth:`completion_request` sent, its reply turned
  into a :class:`Completion` by its :meth:`completion_from`;
- :meth:`open_sse`: a streamed request as an async iterator of event batches (one per network read);
- :meth:`stream_batches` (each provider's): the stream as batches of chunks, one per network read, which
  :meth:`stream_full` and :class:`~.engine.CloudEngine` flatten in one loop (one async step per chunk);
- :meth:`retrying_stream`: runs a provider's stream and retries it only while nothing has been yielded,
  so an error status, or an error event before the first batch (Anthropic's ``overloaded_error``), is
  retried like a failed request, and a stream that already produced output never is;
- error classification with the provider's own cases, ``Retry-After`` from headers or body, and every
  known key scrubbed from whatever the server said.
"""

from __future__ import annotations

from typing import (
    Any,
    AsyncGenerator,
    AsyncIterator,
    Awaitable,
    Callable,
    ClassVar,
    Dict,
    FrozenSet,
    List,
    Mapping,
    Optional,
    Sequence,
    Tuple,
)

import httpx

from jarvis_core.engine.http import HTTPEngine
from jarvis_core.engine.http_errors import classify_http_error, parse_retry_after, timeout_error
from jarvis_core.engine.streams import SSEByteDecoder
from jarvis_core.errors import (
    EngineConnectionError,
    EngineError,
    EngineHTTPError,
    InvalidOptionError,
    StreamError,
)
from jarvis_core.types import Completion, MessageLike, StreamChunk
from jarvis_engine_cloud.credentials import URL_VARS, ProviderSettings, Secret
from jarvis_engine_cloud.retry import RetryPolicy

__all__ = ["ProviderClient"]


class ProviderClient(HTTPEngine):
    """Base of the OpenAI, Anthropic and Gemini clients (each is a usable engine on its own)."""

    engine_id = "cloud"
    #: ``openai``, ``anthropic`` or ``google``.
    provider: ClassVar[str] = ""
    #: Options this provider accepts beyond the named parameters.
    allowed_options: ClassVar[FrozenSet[str]] = frozenset()

    def __init__(
        self,
        settings: ProviderSettings,
        *,
        retry: Optional[RetryPolicy] = None,
        secrets: Sequence[Secret] = (),
        timeout: float = 120.0,
        connect_timeout: float = 10.0,
        health_timeout: float = 3.0,
        transport: Optional[httpx.BaseTransport] = None,
        async_transport: Optional[httpx.AsyncBaseTransport] = None,
        deadline: Optional[float] = None,
        max_output_bytes: Optional[int] = None,
        max_line_bytes: Optional[int] = None,
        max_connections: Optional[int] = None,
        max_keepalive_connections: Optional[int] = None,
    ) -> None:
        self._key = settings.key
        self.settings = settings
        self.retry = retry or RetryPolicy()
        self._secrets = tuple(secrets) or ((settings.key,) if settings.key else ())
        super().__init__(
            base_url=settings.base_url,
            timeout=timeout,
            connect_timeout=connect_timeout,
            health_timeout=health_timeout,
            transport=transport,
            async_transport=async_transport,
            deadline=deadline, max_output_bytes=max_output_bytes, max_line_bytes=max_line_bytes,
            max_connections=max_connections, max_keepalive_connections=max_keepalive_connections,
        )

    @property
    def who(self) -> str:
        """``cloud (<provider>)``: how messages name this client."""
        return f"cloud ({self.provider})"

    def check_options(self, options: Mapping[str, Any]) -> None:
        unknown = [k for k in options if k not in self.allowed_options]
        if unknown:
            raise InvalidOptionError(self.who, unknown, self.allowed_options)

    # -- errors -------------------------------------------------------------------------------------
    def retry_after(self, response: httpx.Response, body: Any) -> Optional[float]:
        """Seconds the server asked us to wait (``retry-after-ms`` or ``Retry-After``), if it said."""
        ms = parse_retry_after(response.headers.get("retry-after-ms"))
        if ms is not None:
            return ms / 1000.0
        return parse_retry_after(response.headers.get("retry-after"))

    def refine_error(self, error: EngineHTTPError, status: int, body: Any) -> EngineHTTPError:
        """Provider-specific corrections of the generic classification (default: none)."""
        return error

    def classify_error(self, response: httpx.Response, body: Any, *, model: Optional[str] = None) -> EngineError:
        retry_after = self.retry_after(response, body)
        error = classify_http_error(response.status_code, body, engine_id=self.who, model=model, retry_after=retry_after)
        error = self.refine_error(error, response.status_code, body)
        error.engine_id = "cloud"
        if error.retry_after is None:
            error.retry_after = retry_after  # a refined error keeps the hint too (a 503's is honoured like a 429's)
        return error

    def transport_error(self, exc: Exception, path: str) -> EngineError:
        """The jarvis error for an httpx transport failure (names the URL variable to check)."""
        url = self.base_url + path.split("?", 1)[0]
        if isinstance(exc, httpx.TimeoutException):
            return timeout_error(exc, engine_id="cloud", url=url, who=self.who)
        if isinstance(exc, (httpx.RemoteProtocolError, httpx.ReadError)):
            return StreamError(f"{self.who}: the connection to {url} broke off ({type(exc).__name__})", engine_id="cloud")
        return EngineConnectionError(
            f"{self.who}: cannot reach {url} ({type(exc).__name__}); check the network, or "
            f"{URL_VARS[self.provider]} if it points at a proxy",
            engine_id="cloud",
        )

    # -- requests -----------------------------------------------------------------------------------
    def _backoff(self, exc: EngineError, attempt: int, model: str) -> Optional[float]:
        """The wait before retrying after ``exc`` (announced), or ``None``: give up and raise it."""
        delay = self.retry.delay_for(exc, attempt)
        if delay is not None:
            self.retry.announce(exc, attempt=attempt, delay=delay, provider=self.provider, model=model)
        return delay

    def _with_retries(self, attempt_fn: Callable[[], Any], model: str) -> Any:
        attempt = 0
        while True:
            try:
                return attempt_fn()
            except EngineError as exc:
                delay = self._backoff(exc, attempt, model)
                if delay is None:
                    raise
                self.retry.sleep(delay)
                attempt += 1

    async def _awith_retries(self, attempt_fn: Callable[[], Awaitable[Any]], model: str) -> Any:
        attempt = 0
        while True:
            try:
                return await attempt_fn()
            except EngineError as exc:
                delay = self._backoff(exc, attempt, model)
                if delay is None:
                    raise
                await self.retry.async_sleep(delay)
                attempt += 1

    def secret_values(self) -> Sequence[Any]:
        """Every secret this client knows (all providers' keys), not only its own, is masked."""
        return self._secrets

    def _request_once(self, method: str, path: str, body: Any, model: str, params: Optional[Dict[str, Any]]) -> Any:
        return self.request_json(method, path, json_body=body, model=model or None, params=params)

    def post_json(self, path: str, body: Any, *, model: str = "") -> Any:
        """POST ``body`` and return the decoded reply, retrying rate limits and server errors."""
        return self._with_retries(lambda: self._request_once("POST", path, body, model, None), model)

    async def apost_json(self, path: str, body: Any, *, model: str = "") -> Any:
        """Async twin of :meth:`post_json` (the same retries, waited out without blocking the loop)."""
        return await self._awith_retries(
            lambda: self.arequest_json("POST", path, json_body=body, model=model or None), model)

    def get_json(self, path: str, *, params: Optional[Dict[str, Any]] = None) -> Any:
        """GET ``path`` and return the decoded reply, retrying rate limits and server errors."""
        return self._with_retries(lambda: self._request_once("GET", path, None, "", params), "")

    def open_sse(
        self, path: str, body: Any, *, model: str = "", decoder: Optional[SSEByteDecoder] = None,
        max_tokens: Optional[int] = None,
    ) -> Any:
        """POST ``body`` as a streamed request; an async context manager yielding batches of server-sent
        events' ``data`` strings, one batch per network read. ``decoder``: one of the caller's own, e.g.
        ``SSEByteDecoder(until_done=True)`` for an OpenAI-style stream, whose ``done`` then says whether the
        ``[DONE]`` marker came.

        An error status raises its typed error first; a connection that breaks mid-way raises
        :class:`StreamError`; leaving the block closes the response (which cancels the generation).
        """
        return self.astream_batches(
            "POST", path, decoder or SSEByteDecoder(), json_body=body, model=model or None,
            headers={"accept": "text/event-stream"}, max_tokens=max_tokens,
        )

    async def decoded_stream(
        self, path: str, body: Any, decoder: Any, *, model: str, max_tokens: Optional[int],
        sse: Optional[SSEByteDecoder] = None,
    ) -> AsyncGenerator[List[StreamChunk], None]:
        """One streamed request through a provider's stream ``decoder`` (``feed_datas(datas, out)`` appends
        chunks to ``out``, ``finish()`` → the final chunks): non-empty batches of chunks, one per network read,
        then the final batch. ``sse``: the SSE decoder, when the provider needs its own (see :meth:`open_sse`).

        A read may hold output and then an error event: the output is yielded before the error is raised,
        so the caller has it, and :meth:`retrying_stream` knows the stream had started (and never retries it).
        """
        async with self.open_sse(path, body, model=model, decoder=sse, max_tokens=max_tokens) as batches:
            async for datas in batches:
                out: List[StreamChunk] = []
                try:
                    decoder.feed_datas(datas, out)
                except Exception:
                    if out:
                        yield out
                    raise
                if out:
                    yield out
        yield decoder.finish()

    async def retrying_stream(
        self, make_stream: Callable[[], AsyncIterator[List[StreamChunk]]], *, model: str
    ) -> AsyncGenerator[List[StreamChunk], None]:
        """Run ``make_stream()`` (non-empty batches of chunks, one per network read); retry it (with backoff)
        on a retryable error before its first batch."""
        attempt = 0
        while True:
            started = False
            try:
                async for batch in make_stream():
                    started = True
                    yield batch
                return
            except EngineError as exc:
                delay = None if started else self._backoff(exc, attempt, model)
                if delay is None:
                    raise
                await self.retry.async_sleep(delay)
                attempt += 1

    # -- engine surface -----------------------------------------------------------------------------
    def completion_request(
        self, messages: Sequence[MessageLike], model: str, temperature: Optional[float], max_tokens: int,
        tools: Optional[Sequence[Any]], options: Dict[str, Any],
    ) -> Tuple[str, Any]:
        """The path and body of a non-streamed request (each provider's own)."""
        raise NotImplementedError

    def completion_from(self, payload: Any, model: str) -> Completion:
        """The normalized :class:`Completion` of a non-streamed reply (each provider's own)."""
        raise NotImplementedError

    def generate(
        self, messages: Sequence[MessageLike], *, model: str, temperature: Optional[float] = None,
        max_tokens: int = 1024, tools: Optional[Sequence[Any]] = None, **options: Any,
    ) -> Completion:
        """One request, retried like :meth:`post_json`; the normalized answer."""
        self.check_options(options)
        path, body = self.completion_request(messages, model, temperature, max_tokens, tools, options)
        return self.completion_from(self.post_json(path, body, model=model), model)

    async def agenerate(
        self, messages: Sequence[MessageLike], *, model: str, temperature: Optional[float] = None,
        max_tokens: int = 1024, tools: Optional[Sequence[Any]] = None, **options: Any,
    ) -> Completion:
        """Async twin of :meth:`generate`, on the async client (no worker thread)."""
        self.check_options(options)
        path, body = self.completion_request(messages, model, temperature, max_tokens, tools, options)
        return self.completion_from(await self.apost_json(path, body, model=model), model)

    def stream_batches(
        self, messages: Sequence[MessageLike], *, model: str, temperature: Optional[float] = None,
        max_tokens: int = 1024, tools: Optional[Sequence[Any]] = None, **options: Any,
    ) -> AsyncGenerator[List[StreamChunk], None]:
        """The stream as batches of chunks, one per network read (the engines' hot path: one async step
        per read, not per chunk); retried like a request until its first batch."""
        raise NotImplementedError

    async def stream_full(
        self, messages: Sequence[MessageLike], *, model: str, temperature: Optional[float] = None,
        max_tokens: int = 1024, tools: Optional[Sequence[Any]] = None, **options: Any,
    ) -> AsyncIterator[StreamChunk]:
        """Text and reasoning deltas, then one final chunk with the tool calls, finish reason and usage."""
        batches = self.stream_batches(messages, model=model, temperature=temperature, max_tokens=max_tokens,
                                      tools=tools, **options)
        async for batch in batches:
            for chunk in batch:
                yield chunk

    def models_request(self) -> tuple[Any, ...]:
        """``(path, params)`` of the cheapest models-endpoint request (used by :meth:`health`)."""
        raise NotImplementedError

    def health(self) -> bool:
        """True when this provider has a key and its models endpoint accepts it within ``health_timeout``
        (a 429 counts as up). Never raises."""
        if not self._key:
            return False
        path, params = self.models_request()
        try:
            response = self.client.get(path, params=params, timeout=self.health_timeout)
        except (httpx.HTTPError, OSError):
            return False
        return response.status_code < 300 or response.status_code == 429

    def auth_headers(self) -> Dict[str, str]:  # pragma: no cover - every provider overrides it
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.provider} {self.base_url} key={'set' if self._key else 'missing'}>"
