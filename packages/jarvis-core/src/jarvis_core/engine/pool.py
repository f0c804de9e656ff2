"""Connection limits of the engines' pooled clients, and an async pool that stays cheap at high concurrency.

:func:`pool_limits` turns an engine's ``max_connections`` / ``max_keepalive_connections`` settings into
``httpx.Limits``: by default 100 connections at most (httpx's own limit) and as many kept alive between
bursts, where httpx keeps only 20 (a burst of N streams then opens N - 20 connections again).

:func:`async_transport` builds the async transport of an engine's ``httpx.AsyncClient`` on
:class:`FairConnectionPool`. httpcore's own pool, on every request start and every response end, looks at
every pooled connection (asking whether its socket is readable, a system call) and every request, and
hands every queued request the *first* idle connection, even one already promised to another request that
has not started yet; each of those requests then finds it busy and queues again. A burst of N streams
thus costs work in N squared: at 256 streams most of the client's time (``benchmarks/bench_concurrency.py``).
:class:`FairConnectionPool` keeps httpcore's connections, limits and keep-alive expiry and changes only how
requests are matched to connections: a stack of idle connections and a queue of waiting requests, updated
from what changed since the last match.
"""

from __future__ import annotations

import collections
import contextlib
import ssl
import time
from typing import Any, Deque, List, Optional

import httpcore
import httpx
from httpcore import default_ssl_context as httpcore_ssl_context

from jarvis_core.engine.http11 import Http11Connection
from jarvis_core.engine.limits import check_count
from jarvis_core.engine.network import AsyncioBackend

__all__ = [
    "DEFAULT_MAX_CONNECTIONS",
    "FairConnectionPool",
    "KEEPALIVE_EXPIRY",
    "async_transport",
    "pool_limits",
]

#: Connections an engine opens to its server at most, unless configured (httpx's default).
DEFAULT_MAX_CONNECTIONS = 100
#: Seconds an idle pooled connection is kept (httpx's default).
KEEPALIVE_EXPIRY = 5.0
#: How often (seconds) idle connections are all checked for a server-side close; a connection is always
#: checked right before it is handed to a request.
_SWEEP_SECONDS = 1.0


def pool_limits(max_connections: Optional[int] = None, max_keepalive_connections: Optional[int] = None) -> httpx.Limits:
    """``httpx.Limits`` for an engine: ``max_connections`` (default :data:`DEFAULT_MAX_CONNECTIONS`) and
    ``max_keepalive_connections`` (default: as many as ``max_connections``, never more).

    :raises ValueError: a limit that is not a whole number of at least 1 (0 for keep-alive).
    """
    check_count("max_connections", max_connections)
    check_count("max_keepalive_connections", max_keepalive_connections, minimum=0)
    most = DEFAULT_MAX_CONNECTIONS if max_connections is None else max_connections
    keep = most if max_keepalive_connections is None else min(max_keepalive_connections, most)
    return httpx.Limits(max_connections=most, max_keepalive_connections=keep, keepalive_expiry=KEEPALIVE_EXPIRY)


class _TrackedRequests(List[Any]):
    """httpcore's list of the pool's requests, noting which were added and removed since the pool last
    matched requests to connections: what changed, without a look at every request and connection."""

    def __init__(self) -> None:
        super().__init__()
        self.added: List[Any] = []
        self.removed: List[Any] = []

    def append(self, item: Any) -> None:
        super().append(item)
        self.added.append(item)

    def remove(self, item: Any) -> None:
        super().remove(item)
        self.removed.append(item)


class FairConnectionPool(httpcore.AsyncConnectionPool):
    """httpcore's async pool with a request-to-connection matching whose cost does not grow with the
    streams in flight.

    HTTP/1.1 only (what the engines' clients speak): a connection serves one request at a time. The pool
    keeps its idle connections on a stack (the most recently used on top) and its waiting requests in a
    queue. A request that starts takes the top idle connection, checked then for a server-side close, or a
    new one below ``max_connections``, or waits; a request that ends puts its connection back (closing it
    beyond ``max_keepalive_connections``: httpcore compares that limit with *all* its connections, so a
    busy pool keeps none alive) and hands it to the first waiting request. Nothing else is looked at, except
    in a sweep at most once a second (keep-alive expiry, connections the server closed) and when httpcore
    retries a request whose connection was lost before it started.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._requests: Any = _TrackedRequests()
        self._idle: List[Any] = []  # unassigned live connections, least recently used first
        self._waiting: Deque[Any] = collections.deque()  # requests without a connection, oldest first
        self._swept = time.monotonic()

    def create_connection(self, origin: httpcore.Origin) -> httpcore.AsyncConnectionInterface:
        """A connection of our own HTTP/1.1 (:mod:`jarvis_core.engine.http11`) instead of httpcore's over h11."""
        return Http11Connection(origin, ssl_context=self._ssl_context or httpcore_ssl_context(),
                                keepalive_expiry=self._keepalive_expiry, network_backend=self._network_backend)

    def _assign_requests_to_connections(self) -> List[Any]:
        closing: List[Any] = []
        requests = self._requests
        added, removed = requests.added, requests.removed
        now = time.monotonic()
        if (not added and not removed) or now - self._swept > _SWEEP_SECONDS:
            # A retry (httpcore cleared a request's lost connection), or the periodic sweep: look at all.
            added.clear()
            removed.clear()
            self._swept = now
            self._rebuild(closing)
        else:
            for request in removed:
                self._release(request, closing)
            removed.clear()
            self._waiting.extend(added)
            added.clear()
        self._serve_waiting(closing)
        return closing

    def _release(self, request: Any, closing: List[Any]) -> None:
        """A request left the pool (its response closed, or it failed): its connection goes back."""
        conn = request.connection
        if conn is None:  # it never had one: it was waiting
            with contextlib.suppress(ValueError):
                self._waiting.remove(request)
            return
        if conn.is_closed():
            self._drop(conn)
        elif conn.is_idle():
            self._idle.append(conn)
            if len(self._idle) > self._max_keepalive_connections:
                extra = self._idle.pop(0)
                self._drop(extra)
                closing.append(extra)
        # else it is still busy (a failure before the request was sent): the next sweep looks at it again.

    def _drop(self, conn: Any) -> None:
        with contextlib.suppress(ValueError):
            self._connections.remove(conn)

    def _serve_waiting(self, closing: List[Any]) -> None:
        waiting = self._waiting
        while waiting:
            request = waiting[0]
            if not request.is_queued():  # assigned meanwhile (by a rebuild)
                waiting.popleft()
                continue
            conn = self._take_idle(request.request.url.origin, closing)
            if conn is None:
                if len(self._connections) >= self._max_connections:
                    if not self._idle:
                        return  # it waits for a connection to come back
                    other = self._idle.pop(0)  # idle, but for another origin
                    self._drop(other)
                    closing.append(other)
                conn = self.create_connection(request.request.url.origin)
                self._connections.append(conn)
            waiting.popleft()
            request.assign_to_connection(conn)

    def _take_idle(self, origin: Any, closing: List[Any]) -> Any:
        idle = self._idle
        for i in range(len(idle) - 1, -1, -1):  # the most recently used first: the others expire together
            conn = idle[i]
            if not conn.can_handle_request(origin):
                continue
            del idle[i]
            if conn.has_expired() or not conn.is_available():  # closed by the server while idle, or too old
                self._drop(conn)
                closing.append(conn)
                continue
            return conn
        return None

    def _rebuild(self, closing: List[Any]) -> None:
        """Every connection and request looked at: closed and expired connections dropped, the idle stack
        and the waiting queue made anew (in their previous order where they had one)."""
        busy = {id(r.connection) for r in self._requests if r.connection is not None}
        order = {id(c): i for i, c in enumerate(self._idle)}
        kept: List[Any] = []
        idle: List[Any] = []
        for conn in self._connections:
            if conn.is_closed():
                continue
            if id(conn) not in busy and conn.is_idle():
                if conn.has_expired():
                    closing.append(conn)
                    continue
                idle.append(conn)
            kept.append(conn)
        idle.sort(key=lambda c: order.get(id(c), len(order)))  # just released: the most recently used
        while len(idle) > self._max_keepalive_connections:
            extra = idle.pop(0)
            kept.remove(extra)
            closing.append(extra)
        self._connections = kept
        self._idle = idle
        queued = [r for r in self._requests if r.is_queued()]
        position = {id(r): i for i, r in enumerate(self._waiting)}
        queued.sort(key=lambda r: position.get(id(r), len(position)))
        self._waiting = collections.deque(queued)


#: Whether this httpcore has the pool internals :class:`FairConnectionPool` relies on.
_FITS = all(hasattr(httpcore.AsyncConnectionPool, name) for name in ("_assign_requests_to_connections", "create_connection")) \
    and all(hasattr(getattr(httpcore._async.connection_pool, "AsyncPoolRequest", None), name)
            for name in ("assign_to_connection", "is_queued"))


def async_transport(limits: httpx.Limits, verify: ssl.SSLContext) -> httpx.AsyncHTTPTransport:
    """The async transport of an engine's client: httpx's, with ``limits``, on a :class:`FairConnectionPool`
    (on httpx's own pool if this httpx/httpcore pair lacks the internals it relies on)."""
    transport = httpx.AsyncHTTPTransport(verify=verify, limits=limits)
    if _FITS and isinstance(getattr(transport, "_pool", None), httpcore.AsyncConnectionPool):
        transport._pool = FairConnectionPool(
            ssl_context=verify,
            max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry,
            http1=True,
            http2=False,
            network_backend=AsyncioBackend(),
        )
    return transport
