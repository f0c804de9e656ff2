"""The engines' async HTTP: aiohttp under httpx's public transport seam (``httpx.AsyncBaseTransport``).

Stock httpx (httpcore's pool, h11, anyio) costs several times more client CPU per stream than aiohttp, and
the gap grows with the streams in flight; aiohttp's pool keeps idle connections in a queue per host and its
parser (llhttp) hands out what one network read brought. The engines keep speaking httpx (requests,
responses, timeouts, errors); only what carries the bytes changes.

Every aiohttp failure leaves as an httpx transport error (:func:`httpx_error`), which the engines turn into
their typed errors as they do for the sync client. A body that stops before its declared end is always an
error, never a short success.
"""

from __future__ import annotations

import asyncio
import ssl
from typing import Any, AsyncGenerator, AsyncIterator, Dict, Optional, Tuple, Type

import aiohttp
import httpx

__all__ = ["AiohttpTransport", "httpx_error"]

#: aiohttp's failures and the httpx error each becomes, the most specific first (the first match wins).
_ERRORS: Tuple[Tuple[Type[BaseException], Type[httpx.TransportError]], ...] = (
    (aiohttp.ConnectionTimeoutError, httpx.ConnectTimeout),
    (aiohttp.ServerTimeoutError, httpx.ReadTimeout),  # SocketTimeoutError: no byte within the read timeout
    (asyncio.TimeoutError, httpx.ReadTimeout),
    (aiohttp.ClientHttpProxyError, httpx.ProxyError),
    (aiohttp.ClientProxyConnectionError, httpx.ProxyError),
    (aiohttp.ClientConnectorError, httpx.ConnectError),  # refused, DNS, TLS verification
    (aiohttp.ClientPayloadError, httpx.RemoteProtocolError),  # a body cut short or badly framed
    (aiohttp.ServerDisconnectedError, httpx.RemoteProtocolError),  # closed before a whole response head
    (aiohttp.ClientResponseError, httpx.RemoteProtocolError),  # a response head aiohttp could not parse
    (aiohttp.ClientOSError, httpx.ReadError),  # a reset, a broken pipe
    (aiohttp.ClientConnectionError, httpx.ReadError),
    (aiohttp.InvalidURL, httpx.UnsupportedProtocol),
    (aiohttp.NonHttpUrlClientError, httpx.UnsupportedProtocol),
    (aiohttp.ClientError, httpx.RemoteProtocolError),
)


def httpx_error(exc: BaseException, request: httpx.Request) -> httpx.TransportError:
    """The httpx error for an aiohttp failure (anything else is not ours to map: the caller re-raises it)."""
    # aiohttp's parser errors span lines and quote the bytes they stopped at: one line, cut short.
    message = " ".join(str(exc).split())[:300] or type(exc).__name__
    for source, target in _ERRORS:
        if isinstance(exc, source):
            return target(message, request=request)
    raise TypeError(f"not an aiohttp failure: {exc!r}")


_MAPPED = (aiohttp.ClientError, asyncio.TimeoutError)


async def _closing(session: aiohttp.ClientSession) -> AsyncGenerator[None, None]:
    """Suspended at its ``yield`` for the session's life. Closing it closes the session on its own loop:
    :meth:`AiohttpTransport.aclose`, the loop's ``shutdown_asyncgens()`` (the end of ``asyncio.run``), or
    the loop's finalizer hook once the transport is collected. A task could do the same, but one still
    pending when its loop is closed is reported as destroyed; an async generator is not."""
    try:
        yield
    finally:
        await session.close()


class _Body(httpx.AsyncByteStream):
    """A response body as aiohttp's reads bring it (one piece per network read, however many chunks)."""

    def __init__(self, response: aiohttp.ClientResponse, request: httpx.Request) -> None:
        self._response = response
        self._request = request

    async def __aiter__(self) -> AsyncIterator[bytes]:
        read = self._response.content.readany
        try:
            while True:
                data = await read()
                if not data:
                    return
                yield data
        except _MAPPED as exc:
            raise httpx_error(exc, self._request) from exc

    async def aclose(self) -> None:
        response = self._response
        if response.content.is_eof():
            response.release()  # read to its end: the connection goes back to the pool
        else:
            response.close()  # left early (a cancelled generation): the server sees the connection close


class _NetworkStream:
    """httpx's ``network_stream`` response extension: the connection's ``get_extra_info`` (``socket``,
    ``ssl_object``, ``client_addr``, ``server_addr``), read when the response head arrived."""

    _NAMES = {"client_addr": "sockname", "server_addr": "peername"}

    def __init__(self, transport: Optional[asyncio.BaseTransport]) -> None:
        self._transport = transport

    def get_extra_info(self, info: str) -> Any:
        if self._transport is None:
            return None
        return self._transport.get_extra_info(self._NAMES.get(info, info))


class AiohttpTransport(httpx.AsyncBaseTransport):
    """An httpx async transport on an ``aiohttp.ClientSession`` (HTTP/1.1), created on first use on the
    running loop.

    :param limits: ``max_connections`` becomes the connector's ``limit`` (and ``limit_per_host``: an
        engine talks to one server), ``keepalive_expiry`` its ``keepalive_timeout``, and
        ``max_keepalive_connections=0`` closes every connection after its response (``force_close``).
        aiohttp has no separate cap on idle connections: otherwise every connection is kept for the next
        request until it expires.
    :param verify: the SSL context of ``https`` servers.
    :param proxy: the HTTP proxy every request goes through (the engines pass the environment's).
    """

    def __init__(self, limits: httpx.Limits, verify: ssl.SSLContext, *, proxy: Optional[str] = None) -> None:
        self._limits = limits
        self._verify = verify
        self._proxy = proxy
        self._session: Optional[aiohttp.ClientSession] = None
        self._guard: Optional[AsyncGenerator[None, None]] = None
        self._timeouts: Dict[Tuple[Optional[float], Optional[float], Optional[float]], aiohttp.ClientTimeout] = {}

    async def _open(self) -> aiohttp.ClientSession:
        limits = self._limits
        most = limits.max_connections or 0  # aiohttp: 0 is no limit
        connector = aiohttp.TCPConnector(
            limit=most, limit_per_host=most, ssl=self._verify,
            force_close=limits.max_keepalive_connections == 0,
            keepalive_timeout=None if limits.max_keepalive_connections == 0 else limits.keepalive_expiry,
        )
        # No cookie jar and no decompression: httpx's client does both, as it does for its own transports.
        session = aiohttp.ClientSession(connector=connector, cookie_jar=aiohttp.DummyCookieJar(),
                                        auto_decompress=False, trust_env=False)
        guard = _closing(session)
        await guard.__anext__()
        self._session, self._guard = session, guard
        return session

    def _timeout(self, request: httpx.Request) -> aiohttp.ClientTimeout:
        given = request.extensions.get("timeout", {})
        key = (_seconds(given.get("pool")), _seconds(given.get("connect")), _seconds(given.get("read")))
        timeout = self._timeouts.get(key)
        if timeout is None:
            if len(self._timeouts) > 64:
                self._timeouts.clear()
            # aiohttp's connect covers the wait for a pooled connection and opening one; sock_connect the latter.
            timeout = self._timeouts[key] = aiohttp.ClientTimeout(
                total=None, connect=key[0], sock_connect=key[1], sock_read=key[2])
        return timeout

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        session = self._session or await self._open()
        headers = request.headers
        data: Any
        try:
            data = request.content or None
        except httpx.RequestNotRead:  # a streamed upload: aiohttp frames it itself
            data = request.stream
            headers = headers.copy()
            headers.pop("transfer-encoding", None)
        try:
            response = await session.request(
                request.method, str(request.url), headers=headers.multi_items(), data=data,
                allow_redirects=False, timeout=self._timeout(request), proxy=self._proxy,
                server_hostname=request.extensions.get("sni_hostname"),
            )
        except _MAPPED as exc:
            raise httpx_error(exc, request) from exc
        except ValueError as exc:  # a header value holding a line break, refused before it was sent
            raise httpx.LocalProtocolError(str(exc), request=request) from exc
        connection = response.connection
        return httpx.Response(
            status_code=response.status,
            headers=response.raw_headers,
            stream=_Body(response, request),
            request=request,
            extensions={"http_version": b"HTTP/1.1", "reason_phrase": (response.reason or "").encode("latin-1"),
                        "network_stream": _NetworkStream(connection.transport if connection is not None else None)},
        )

    async def aclose(self) -> None:
        guard = self._guard
        self._guard = None
        self._session = None
        if guard is not None:
            await guard.aclose()


def _seconds(value: Any) -> Optional[float]:
    """A timeout for aiohttp: an infinite one is none (aiohttp cannot schedule a timer that far)."""
    return None if value is None or value == float("inf") else float(value)
