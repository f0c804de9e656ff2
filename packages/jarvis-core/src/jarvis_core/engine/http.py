"""HTTP plumbing shared by engines: one pooled client per engine, typed errors, streaming done right.

:class:`HTTPEngine` holds one ``httpx.Client`` and one ``httpx.AsyncClient`` (each created on first use
and reused for every call, streamed or not), maps transport failures to
:class:`~jarvis_core.errors.EngineConnectionError` (:class:`~jarvis_core.errors.EngineTimeoutError` for a
timeout), error statuses to the typed errors of :mod:`jarvis_core.engine.http_errors`, and a whole reply
that is not JSON to :class:`~jarvis_core.errors.MalformedResponseError`. Tests inject ``transport=`` /
``async_transport=`` (``httpx.MockTransport``) to drive the real parsing code without a server.
"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import json
import sys
import time
from typing import (
    Any,
    AsyncGenerator,
    AsyncIterator,
    Callable,
    Dict,
    List,
    Mapping,
    Optional,
    Set,
    Tuple,
    Union,
    cast,
)

import httpx

from jarvis_core.engine.base import InferenceEngine
from jarvis_core.engine.compat import DeprecatedHTTPEngineMethods
from jarvis_core.engine.http_errors import classify_http_error, error_from_payload, parse_retry_after
from jarvis_core.engine.limits import ReplyLimits, check_count, check_seconds, request_deadline
from jarvis_core.engine.pool import async_transport, pool_limits
from jarvis_core.engine.redaction import protect_logs
from jarvis_core.engine.streams import DEFAULT_MAX_LINE, SSEByteDecoder, _TextLines
from jarvis_core.engine.transport import (
    AsyncClient,
    Client,
    environment_proxy,
    json_bytes,
    normalize_base_url,
    shared_ssl_context,
    translate_transport_error,
)
from jarvis_core.errors import (
    ConfigError,
    EngineConnectionError,
    EngineError,
    JarvisError,
    LimitExceededError,
    MalformedResponseError,
    StreamError,
)

# anyio's TaskGroup raises an exception group when a connect fails inside it (Python 3.11+, or the
# exceptiongroup backport anyio installs on 3.10).
_GROUP = getattr(builtins, "ExceptionGroup", None) or getattr(sys.modules.get("exceptiongroup"), "ExceptionGroup", None)
_GROUPS: tuple[Any, ...] = (_GROUP,) if _GROUP is not None else ()

__all__ = ["HTTPEngine", "normalize_base_url", "translate_transport_error"]


# Failures that, before any response byte, mean "the pooled connection was already closed by the server".
_STALE = (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError)

#: Bytes kept from the start of an SSE body until its first event (what :meth:`HTTPEngine.not_sse` shows).
_HEAD_BYTES = 4096
#: How an SSE body starts: a field or a comment (after any blank lines).
_SSE_FIELDS = (b"data:", b"event:", b"id:", b"retry:", b":")

#: How long (seconds) and how many reads a finished stream's leftovers may take to read before the
#: connection is dropped instead of being reused.
_DRAIN_SECONDS = 0.5
#: Request URLs kept parsed per engine (paths may hold a model name, so they are not a fixed few).
_KNOWN_URLS = 256
_DRAIN_LINES = 64


#: Pool closings :meth:`HTTPEngine.close` scheduled on a running loop. The loop keeps only weak references
#: to its tasks, so an unreferenced one may be collected before it ran; each is dropped here when done.
_closing: Set[Any] = set()


def _buffered(response: httpx.Response, parts: List[bytes]) -> httpx.Response:
    """A response like ``response`` with ``parts`` (its body, decoded) as its content: httpx keeps a body it
    reads itself in a private attribute. The content coding is dropped, as the parts are decoded already."""
    headers = [(k, v) for k, v in response.headers.multi_items() if k != "content-encoding"]
    return httpx.Response(response.status_code, headers=headers, content=b"".join(parts), request=response.request,
                          extensions=response.extensions)


async def _adrain(batches: AsyncIterator[Any]) -> None:
    n = 0
    async for _ in batches:
        n += 1
        if n > _DRAIN_LINES:
            return


async def _drain(batches: AsyncIterator[Any], seconds: float) -> None:
    """Read what is left of a stream, for ``seconds`` at most (:class:`TimeoutError` past that).

    Usually the rest is already received and this takes no wait at all; ``asyncio.timeout`` (Python 3.11+)
    keeps it that way, where ``wait_for`` ran the drain as a task of its own and so cost every stream's
    end a few turns of the event loop.
    """
    timeout = getattr(asyncio, "timeout", None)
    if timeout is None:
        await asyncio.wait_for(_adrain(batches), timeout=seconds)
        return
    async with timeout(seconds):
        await _adrain(batches)


class HTTPEngine(InferenceEngine, DeprecatedHTTPEngineMethods):
    """An engine that talks HTTP to one base URL.

    :param host: base URL (``http://host:port``; a bare ``host:port`` is accepted). ``base_url`` is an alias.
    :param api_key: sent by :meth:`auth_headers`; never shown in ``repr``, errors or logs (it is the default
        :meth:`~jarvis_core.engine.base.InferenceEngine.secret_values`, masked by ``redact`` and ``scrub``).
    :param timeout: read timeout in seconds for a request (streams: between two chunks).
    :param connect_timeout: seconds to establish a connection.
    :param health_timeout: seconds for :meth:`health`.
    :param deadline: seconds for a whole request, streamed or not (``None``: 600, the default of
        :func:`~jarvis_core.engine.limits.request_deadline`; ``inf``: none, each silence is still bounded by
        ``timeout``).
    :param max_output_bytes: wire bytes of one reply; a stream is also cut once it clearly exceeds the
        ``max_tokens`` it was asked for (see :class:`~jarvis_core.engine.limits.ReplyLimits`).
    :param max_line_bytes: the longest line, SSE event or non-streamed body accepted (16 MiB).
    :param max_connections: connections to the server at most, per client (default 100): set it to the
        number of concurrent requests you run, so a burst does not wait for connections.
    :param max_keepalive_connections: idle connections kept for the next requests, up to 5 s (default: as
        many as ``max_connections``); see :mod:`jarvis_core.engine.pool`.
    :param transport: / :param async_transport: httpx transports, for tests (``httpx.MockTransport``).
    """

    #: Default base URL when neither ``host`` nor ``base_url`` is given.
    default_host: str = ""
    #: A path suffix users often include that the engine adds itself (``"/v1"``).
    strip_suffix: str = ""

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
        transport: Optional[httpx.BaseTransport] = None,
        async_transport: Optional[httpx.AsyncBaseTransport] = None,
        deadline: Optional[float] = None,
        max_output_bytes: Optional[int] = None,
        max_line_bytes: Optional[int] = None,
        max_connections: Optional[int] = None,
        max_keepalive_connections: Optional[int] = None,
    ) -> None:
        url = base_url or host or self.default_host
        if not url:
            raise ConfigError(f"{self.engine_id}: no host given; pass host= or set [engine.{self.engine_id}] host in the "
                              "config", key="host")
        if not isinstance(url, str):
            raise ConfigError(f"{self.engine_id}: host must be a string such as http://host:port, got {url!r}",
                              key="host")
        self.base_url = normalize_base_url(url, strip_suffix=self.strip_suffix)
        self._api_key = api_key
        self._urls: Dict[str, Tuple[str, httpx.URL]] = {}  # path -> (the base URL it was joined to, the URL)
        try:
            self.timeout: float = check_seconds("timeout", timeout, allow_none=False) or 0.0
            self.connect_timeout: float = check_seconds("connect_timeout", connect_timeout, allow_none=False) or 0.0
            self.health_timeout: float = check_seconds("health_timeout", health_timeout, allow_none=False) or 0.0
            self.limits = ReplyLimits(
                deadline=request_deadline(deadline),
                max_output_bytes=check_count("max_output_bytes", max_output_bytes),
                max_line=check_count("max_line_bytes", max_line_bytes) or DEFAULT_MAX_LINE,
            )
            #: The pools' connection limits (``httpx.Limits``).
            self.pool_limits = pool_limits(max_connections, max_keepalive_connections)
        except ValueError as exc:
            raise ConfigError(f"{self.engine_id}: {exc}", key=str(exc).split(" ", 1)[0]) from None
        protect_logs(self.secret_values())
        self._extra_headers = dict(headers or {})
        self._transport = transport
        self._async_transport = async_transport
        self._client: Optional[httpx.Client] = None
        self._aclient: Optional[httpx.AsyncClient] = None
        self._aclient_loop: Optional[asyncio.AbstractEventLoop] = None

    # -- clients ------------------------------------------------------------------------------------
    def auth_headers(self) -> Dict[str, str]:
        """Headers that carry the key. Default: ``Authorization: Bearer <key>`` when a key is set."""
        return {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}

    def _timeout(self, read: Optional[float] = None) -> httpx.Timeout:
        return httpx.Timeout(read if read is not None else self.timeout, connect=self.connect_timeout)

    @property
    def client(self) -> httpx.Client:
        """The engine's pooled synchronous client (created on first use)."""
        if self._client is None:
            self._client = Client(
                base_url=self.base_url,
                verify=shared_ssl_context(),
                timeout=self._timeout(),
                headers={**self._extra_headers, **self.auth_headers()},
                transport=self._transport,
                limits=self.pool_limits,
            )
        return self._client

    @property
    def aclient(self) -> httpx.AsyncClient:
        """The engine's pooled async client, bound to the running event loop (recreated for a new loop)."""
        try:
            loop: Optional[asyncio.AbstractEventLoop] = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        if self._aclient is None or (loop is not None and loop is not self._aclient_loop) or self._aclient.is_closed:
            # A pool's connections belong to the loop that opened them; a new loop needs a new pool.
            transport = self._async_transport
            proxy = environment_proxy(self.base_url)
            if transport is None and (proxy is None or proxy.startswith(("http://", "https://"))):
                transport = async_transport(self.pool_limits, shared_ssl_context(), proxy=proxy)
            # Otherwise (a SOCKS proxy, which aiohttp does not speak) httpx builds its own, as for the sync client.
            self._aclient = AsyncClient(
                base_url=self.base_url,
                verify=shared_ssl_context(),
                timeout=self._timeout(),
                headers={**self._extra_headers, **self.auth_headers()},
                transport=transport,
                limits=self.pool_limits,
            )
            self._aclient_loop = loop
        return self._aclient

    def close(self) -> None:
        """Close both pools. The async one is closed on its own loop: scheduled there when that loop is
        running (the task is kept referenced until it is done), nothing to do when it has ended."""
        if self._client is not None:
            self._client.close()
            self._client = None
        aclient, self._aclient = self._aclient, None
        loop = self._aclient_loop
        # An async pool can only be closed on its own loop; if that loop is gone, so are its sockets.
        if aclient is None or aclient.is_closed or loop is None or not loop.is_running():
            return
        try:
            running: Optional[asyncio.AbstractEventLoop] = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            pending: Any = loop.create_task(aclient.aclose())
        else:  # another thread: the loop's own thread must create the task
            pending = asyncio.run_coroutine_threadsafe(aclient.aclose(), loop)
        _closing.add(pending)
        pending.add_done_callback(_closing.discard)

    async def aclose(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None
        aclient, self._aclient = self._aclient, None
        loop, self._aclient_loop = self._aclient_loop, None
        if aclient is None or aclient.is_closed:
            return
        if loop is None or loop is asyncio.get_running_loop():
            await aclient.aclose()
        elif loop.is_running():
            asyncio.run_coroutine_threadsafe(aclient.aclose(), loop)
        # Otherwise the pool's loop has ended (asyncio.run returned): its connections cannot be closed from
        # this loop, and trying raises "Event loop is closed"; they go when the client is collected.

    # -- requests -----------------------------------------------------------------------------------
    def _raise_for_status(self, response: httpx.Response, *, model: Optional[str] = None) -> None:
        if response.status_code < 400:
            return
        try:
            body: Any = response.json()
        except ValueError:
            body = response.text
        raise self.classify_error(response, self.redact(body), model=model)

    def classify_error(self, response: httpx.Response, body: Any, *, model: Optional[str] = None) -> EngineError:
        """The typed error for an error response; engines override to add their own cases."""
        return classify_http_error(
            response.status_code,
            body,
            engine_id=self.engine_id,
            model=model,
            retry_after=parse_retry_after(response.headers.get("retry-after")),
        )

    def build_request(
        self,
        client: Union[httpx.Client, httpx.AsyncClient],
        method: str,
        path: str,
        *,
        json_body: Any = None,
        params: Optional[Mapping[str, Any]] = None,
        headers: Optional[Mapping[str, str]] = None,
        timeout: Optional[float] = None,
    ) -> httpx.Request:
        """A request for ``client`` (:attr:`client` or :attr:`aclient`); ``timeout`` overrides the read timeout."""
        hdrs = {"content-type": "application/json"} if json_body is not None else {}
        if headers:
            hdrs.update(headers)
        try:
            content = json_bytes(json_body) if json_body is not None else None
        except ValueError:
            raise ConfigError(
                f"{self.engine_id}: the request holds a number that is not finite (NaN or infinity); check "
                "temperature, top_p and the other numeric options", key="options") from None
        known = self._urls.get(path)
        if known is None or known[0] is not self.base_url:
            # Joining a path to the base URL parses both; a parsed URL given back costs a third as much.
            if len(self._urls) >= _KNOWN_URLS:
                self._urls.clear()
            known = self._urls[path] = (self.base_url, client.build_request("GET", path).url)
        return client.build_request(
            method, known[1], params=params, headers=hdrs,
            content=content,
            timeout=self._timeout(timeout) if timeout is not None else httpx.USE_CLIENT_DEFAULT,
            extensions={"jarvis_path": path},
        )

    def transport_error(self, exc: Exception, path: str) -> EngineError:
        """The jarvis error for a transport failure on ``path``; engines override it to change the hint."""
        return translate_transport_error(exc, engine_id=self.engine_id, url=self.base_url + path)

    def send(self, request: httpx.Request) -> httpx.Response:
        """Send ``request`` on the pooled client (streamed: the caller reads and closes the response).

        Servers such as llama.cpp close keep-alive connections after a streamed reply or after a short
        idle time, so a pooled connection can be dead when it is reused. When sending fails that way,
        before any byte of a response, the request goes once more on a fresh connection: inference
        requests have no side effects, and a server that is really gone fails the second attempt too.
        """
        try:
            try:
                return self.client.send(request, stream=True)
            except _STALE:
                return self.client.send(request, stream=True)
        except httpx.TransportError as exc:
            raise self.transport_error(exc, request.extensions.get("jarvis_path", request.url.path)) from None
        except (OSError, OverflowError) as exc:
            raise self._unreachable(exc, request) from None

    def _unreachable(self, exc: BaseException, request: httpx.Request) -> EngineError:
        """An error from below httpx (a socket refusing the address, an exception group from anyio)."""
        while _GROUPS and isinstance(exc, _GROUPS) and exc.exceptions:
            exc = exc.exceptions[0]
        path = request.extensions.get("jarvis_path", request.url.path)
        return EngineConnectionError(
            f"{self.engine_id}: cannot reach {self.base_url}{path} ({type(exc).__name__}: {exc})",
            engine_id=self.engine_id, url=f"{self.base_url}{path}",
        )

    async def asend(self, request: httpx.Request) -> httpx.Response:
        """Async twin of :meth:`send`."""
        client = self.aclient
        try:
            try:
                return await client.send(request, stream=True)
            except _STALE:
                return await client.send(request, stream=True)
        except httpx.TransportError as exc:
            raise self.transport_error(exc, request.extensions.get("jarvis_path", request.url.path)) from None
        except (OSError, OverflowError, *_GROUPS) as exc:
            raise self._unreachable(exc, request) from None

    def broken(self, exc: Exception, path: str) -> StreamError:
        """The error for a transport failure after the response started: always a :class:`StreamError`."""
        err = self.transport_error(exc, path)
        if isinstance(err, StreamError):
            return err
        return StreamError(f"{self.engine_id}: the reply from {self.base_url}{path} broke off: {err}", engine_id=self.engine_id)

    def _too_big(self, path: str) -> LimitExceededError:
        return LimitExceededError(
            f"{self.engine_id}: the reply from {self.base_url}{path} is longer than {self.limits.max_line} "
            "bytes; it is not a normal reply (raise max_line_bytes in the engine's config if it is)",
            engine_id=self.engine_id, limit="line")

    def _request_timeout(self, timeout: Optional[float]) -> Optional[float]:
        """The read timeout of a request under the total deadline: no single silence outlasts the deadline."""
        deadline = self.limits.deadline
        if deadline is None:
            return timeout
        return min(deadline, self.timeout if timeout is None else timeout)

    def _body_reader(
        self, path: str, started: Optional[float],
    ) -> Tuple[Callable[[int], None], Callable[[httpx.TransportError], EngineError]]:
        """For a non-streamed body: a check run on each part's size (line cap, ``max_output_bytes``, the
        deadline counted from ``started``, default now), and the error for a transport failure while reading."""
        limits = self.limits
        out_cap = float("inf") if limits.max_output_bytes is None else limits.max_output_bytes
        deadline = limits.deadline
        ends = float("inf") if deadline is None else (time.monotonic() if started is None else started) + deadline
        size = 0

        def check(part: int) -> None:
            nonlocal size
            size += part
            if size > out_cap:
                raise self._past(path, "output", limits.max_output_bytes, setting=True, streamed=False)
            if size > limits.max_line:
                raise self._too_big(path)
            if time.monotonic() > ends:
                raise self._past(path, "deadline", deadline, streamed=False)

        def failed(exc: httpx.TransportError) -> EngineError:
            if time.monotonic() > ends:
                return self._past(path, "deadline", deadline, streamed=False)
            return self.broken(exc, path)

        return check, failed

    def _read_capped(self, response: httpx.Response, path: str, started: Optional[float] = None) -> httpx.Response:
        """``response`` read whole, stopping at the limits (line cap, ``max_output_bytes``, deadline) instead
        of buffering whatever the server sends for as long as it sends it: the response with its body."""
        check, failed = self._body_reader(path, started)
        parts = []
        try:
            for part in response.iter_bytes():
                check(len(part))
                parts.append(part)
        except httpx.TransportError as exc:
            raise failed(exc) from None
        return _buffered(response, parts)

    async def _aread_capped(
        self, response: httpx.Response, path: str, started: Optional[float] = None,
    ) -> httpx.Response:
        """Async twin of :meth:`_read_capped`."""
        check, failed = self._body_reader(path, started)
        parts = []
        try:
            async for part in response.aiter_bytes():
                check(len(part))
                parts.append(part)
        except httpx.TransportError as exc:
            raise failed(exc) from None
        return _buffered(response, parts)

    def _decode_json(self, response: httpx.Response, path: str, model: Optional[str]) -> Any:
        self._raise_for_status(response, model=model)
        try:
            return response.json()
        except ValueError:
            excerpt = self.redact(response.text[:200])
            raise MalformedResponseError(
                f"{self.engine_id}: {path} answered with invalid JSON (HTTP {response.status_code}); is "
                f"{self.base_url} the server's address? {excerpt!r}",
                engine_id=self.engine_id, excerpt=excerpt,
            ) from None

    def request_json(
        self,
        method: str,
        path: str,
        *,
        json_body: Any = None,
        timeout: Optional[float] = None,
        model: Optional[str] = None,
        params: Optional[Mapping[str, Any]] = None,
    ) -> Any:
        """Send a request with the pooled client and return the decoded JSON body, or raise a typed error."""
        with self.scrubbed():
            started = time.monotonic()
            response = self.send(self.build_request(
                self.client, method, path, json_body=json_body, params=params, timeout=self._request_timeout(timeout)))
            try:
                whole = self._read_capped(response, path, started)
            finally:
                response.close()
            return self._decode_json(whole, path, model)

    async def arequest_json(
        self, method: str, path: str, *, json_body: Any = None, timeout: Optional[float] = None,
        model: Optional[str] = None, params: Optional[Mapping[str, Any]] = None,
    ) -> Any:
        """Async twin of :meth:`request_json`."""
        with self.scrubbed():
            started = time.monotonic()
            response = await self.asend(self.build_request(
                self.aclient, method, path, json_body=json_body, params=params, timeout=self._request_timeout(timeout)))
            try:
                whole = await self._aread_capped(response, path, started)
            finally:
                await response.aclose()
            return self._decode_json(whole, path, model)

    @contextlib.asynccontextmanager
    async def astream_response(
        self, method: str, path: str, *, json_body: Any = None, params: Optional[Mapping[str, Any]] = None,
        headers: Optional[Mapping[str, str]] = None, model: Optional[str] = None, timeout: Optional[float] = None,
    ) -> AsyncIterator[httpx.Response]:
        """Open a streamed request and yield the ``httpx.Response``, for hot loops that read whole network
        chunks (``aiter_bytes``); wrap a ``httpx.TransportError`` raised while reading with :meth:`broken`.

        Error statuses raise before anything is yielded; leaving the block closes the response, which is how
        a caller cancels a generation on most servers.
        """
        hdrs = {"accept": "text/event-stream, application/x-ndjson", **(headers or {})}
        request = self.build_request(
            self.aclient, method, path, json_body=json_body, params=params, headers=hdrs, timeout=timeout
        )
        response = await self.asend(request)
        try:
            if response.status_code >= 400:
                self._raise_for_status(await self._aread_capped(response, path), model=model)
            elif response.headers.get("content-type", "").startswith("text/html"):
                raise self.not_a_stream(await self._aread_capped(response, path), path)
            yield response
        finally:
            await response.aclose()

    def not_a_stream(self, response: httpx.Response, path: str) -> MalformedResponseError:
        """The error for a 2xx reply that is a web page, not the API's answer (a wrong address or a proxy)."""
        excerpt = " ".join(self.redact(response.text[:200]).split())
        return MalformedResponseError(
            f"{self.engine_id}: {self.base_url}{path} answered with a web page (HTTP {response.status_code}, "
            f"text/html), not the server's API; check the address: {excerpt!r}", engine_id=self.engine_id,
            excerpt=excerpt)

    @contextlib.asynccontextmanager
    async def astream_batches(
        self, method: str, path: str, decoder: Any, *, json_body: Any = None,
        params: Optional[Mapping[str, Any]] = None, headers: Optional[Mapping[str, str]] = None,
        model: Optional[str] = None, timeout: Optional[float] = None, max_tokens: Optional[int] = None,
    ) -> AsyncIterator[AsyncIterator[List[Any]]]:
        """Open a streamed request and yield an async iterator of decoded batches: for each network read,
        the non-empty list ``decoder.feed(bytes)`` returned, and at the end ``decoder.flush()``.

        ``decoder`` is a :class:`~jarvis_core.engine.streams.SSEByteDecoder` or
        :class:`~jarvis_core.engine.streams.LineByteDecoder` (or anything with ``feed``/``flush``). This is
        the hot path of streaming engines: one async hop per network read instead of one per line.
        Error statuses raise before anything is yielded; a connection that breaks mid-stream raises
        :class:`~jarvis_core.errors.StreamError`. When the caller stops at its end marker (``[DONE]``,
        ``done: true``), the rest of the body is read (briefly, boundedly) so the connection goes back to
        the pool; leaving the block closes the response.

        Limits (:attr:`limits`): a line longer than the cap, a reply past the output budget (``max_tokens``
        tells it what was asked for) or past the total deadline raises
        :class:`~jarvis_core.errors.LimitExceededError`; each costs one comparison per network read. Every
        jarvis error leaving the block has the engine's secrets masked (:meth:`scrub`).
        """
        limits = self.limits
        if isinstance(decoder, _TextLines):
            decoder.max_line = limits.max_line
            decoder.engine_id = self.engine_id
        timeout = self._request_timeout(timeout)
        try:
            started = time.monotonic()
            async with self.astream_response(
                method, path, json_body=json_body, params=params, headers=headers, model=model, timeout=timeout
            ) as response:
                batches = self._batches(response, decoder, path, started, limits.output_budget(max_tokens))
                try:
                    yield batches
                    with contextlib.suppress(Exception):
                        await _drain(batches, min(self.timeout, _DRAIN_SECONDS))
                finally:
                    await batches.aclose()
        except JarvisError as exc:
            self.scrub(exc)
            raise

    async def _batches(
        self, response: httpx.Response, decoder: Any, path: str, started: float, budget: Optional[int],
    ) -> AsyncGenerator[List[Any], None]:
        # httpx types aiter_bytes() as an iterator; it is an async generator, and closing it releases the body.
        body = cast(AsyncGenerator[bytes, None], response.aiter_bytes())
        feed = decoder.feed
        deadline = self.limits.deadline
        ends = float("inf") if deadline is None else started + deadline
        budget_left = float("inf") if budget is None else budget
        clock = time.monotonic
        # Until the first SSE event, the start of the body is kept: a body that ends without any event was
        # no stream at all (a JSON error, a page served as text/plain), and the error should say what it was.
        seen = not isinstance(decoder, SSEByteDecoder)
        head = b""
        try:
            while True:
                try:
                    data = await body.__anext__()
                except StopAsyncIteration:
                    break
                except httpx.TransportError as exc:
                    if clock() > ends:
                        raise self._past(path, "deadline", deadline) from None
                    raise self.broken(exc, path) from None
                out = feed(data)  # first: a line past the cap is named as such, whatever the read's size
                budget_left -= len(data)
                if budget_left < 0:
                    raise self._past(path, "output", budget, setting=budget == self.limits.max_output_bytes)
                if deadline is not None and clock() > ends:
                    raise self._past(path, "deadline", deadline)
                if out:
                    seen = True
                    yield out
                elif not seen and len(head) < _HEAD_BYTES:
                    head += data[: _HEAD_BYTES - len(head)]
            out = decoder.flush()
            if out:
                yield out
            elif not seen and head.strip() and not head.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(_SSE_FIELDS):
                raise self.not_sse(response, path, head)
        finally:
            await body.aclose()

    def not_sse(self, response: httpx.Response, path: str, head: bytes) -> EngineError:
        """The error for a 2xx body, asked for as a stream of server-sent events, that ended without any
        event: an error object's own typed error, else :class:`MalformedResponseError` with an excerpt."""
        text = head.decode("utf-8", "replace")
        try:
            payload = json.loads(text)
        except ValueError:
            payload = None
        if isinstance(payload, dict) and (payload.get("error") or payload.get("object") == "error"):
            return error_from_payload(self.redact(payload), engine_id=self.engine_id)
        excerpt = " ".join(self.redact(text[:200]).split())
        kind = response.headers.get("content-type") or "no content type"
        return MalformedResponseError(
            f"{self.engine_id}: {self.base_url}{path} answered with a body that is not a stream of server-sent "
            f"events (HTTP {response.status_code}, {kind}); check the address: {excerpt!r}",
            engine_id=self.engine_id, excerpt=excerpt)

    def _past(self, path: str, limit: str, value: Any, *, setting: bool = False,
              streamed: bool = True) -> LimitExceededError:
        """The error for a reply past the deadline or the output budget (``setting``: the budget is the
        ``max_output_bytes`` setting, not one derived from ``max_tokens``)."""
        kept = "; the text so far was kept" if streamed else ""
        if limit == "deadline":
            what = f"did not finish within the request deadline of {value:g}s (the deadline setting){kept}"
        elif setting:
            what = f"sent more than {value} bytes (the max_output_bytes setting); stopped reading{kept}"
        else:
            what = f"sent more than {value} bytes, far more than the max_tokens asked for; stopped reading{kept}"
        return LimitExceededError(f"{self.engine_id}: the reply from {self.base_url}{path} {what}",
                                  engine_id=self.engine_id, limit=limit)

    def health(self) -> bool:
        """GET :attr:`health_path` within ``health_timeout``; True on a 2xx. Never raises."""
        try:
            response = self.send(self.build_request(self.client, "GET", self.health_path, timeout=self.health_timeout))
        except EngineError:
            return False
        try:
            response.read()
        except (httpx.HTTPError, OSError):
            return False
        finally:
            response.close()
        return response.status_code < 300

    #: The path :meth:`health` probes.
    health_path: str = "/"

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.engine_id!r} {self.base_url}>"
