"""Connection limits of the engines' pooled clients, and an async pool that stays cheap at high concurrency.

:func:`pool_limits` turns an engine's ``max_connections`` / ``max_keepalive_connections`` settings into
``httpx.Limits``: by default 100 connections at most (httpx's own limit) and as many kept alive between
bursts, where httpx keeps only 20 (a burst of N streams then opens N - 20 connections again).

:func:`async_transport` builds the async transport of an engine's ``httpx.AsyncClient`` on
:class:`FairConnectionPool`. httpcore's own pool, on every request start and every response end, asks
each pooled connection whether its socket is readable (a system call) and hands every queued request the
*first* idle connection, even one already promised to another request that has not started yet; each of
those requests then finds it busy and queues again. With hundreds of concurrent streams that is most of
the client's time (``benchmarks/bench_concurrency.py``). :class:`FairConnectionPool` keeps httpcore's
connections, limits and keep-alive expiry and changes only how requests are matched to connections.
"""

from __future__ import annotations

import ssl
import time
from typing import Any, List, Optional

import httpcore
import httpx

from jarvis_core.engine.limits import check_count

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


class FairConnectionPool(httpcore.AsyncConnectionPool):
    """httpcore's async pool with a request-to-connection matching that stays linear under concurrency.

    HTTP/1.1 only (what the engines' clients speak): a connection serves one request at a time, so a
    connection promised to a request that has not started yet is not offered to another one; idle
    connections are checked for a server-side close when handed out and in a sweep at most once a second,
    not on every request; idle connections beyond ``max_keepalive_connections`` are closed (httpcore
    compares that limit with *all* its connections, so a busy pool keeps none alive).
    """

    _swept = 0.0

    def _assign_requests_to_connections(self) -> List[Any]:
        closing: List[Any] = []
        now = time.monotonic()
        sweep = now - self._swept > _SWEEP_SECONDS
        if sweep:
            self._swept = now
        promised = {id(r.connection) for r in self._requests if r.connection is not None}
        kept: List[Any] = []
        idle = 0
        for conn in self._connections:
            if conn.is_closed():
                continue
            if id(conn) not in promised and conn.is_idle():
                if idle >= self._max_keepalive_connections or (sweep and conn.has_expired()):
                    closing.append(conn)
                    continue
                idle += 1
            kept.append(conn)
        self._connections = kept
        queued = [r for r in self._requests if r.is_queued()]
        if not queued:
            return closing
        free = [c for c in kept if id(c) not in promised and c.is_available()]
        for request in queued:
            origin = request.request.url.origin
            conn = self._take_free(free, origin, closing)
            if conn is None:
                if len(self._connections) >= self._max_connections:
                    idle_ones = [c for c in self._connections if c.is_idle() and id(c) not in promised]
                    if not idle_ones:
                        continue  # the request waits for a connection to come back
                    self._connections.remove(idle_ones[0])
                    closing.append(idle_ones[0])
                conn = self.create_connection(origin)
                self._connections.append(conn)
            promised.add(id(conn))
            request.assign_to_connection(conn)
        return closing

    def _take_free(self, free: List[Any], origin: Any, closing: List[Any]) -> Any:
        # The most recently used connection first: the others go idle and expire together.
        for i in range(len(free) - 1, -1, -1):
            conn = free[i]
            if not conn.can_handle_request(origin):
                continue
            del free[i]
            if conn.has_expired():  # closed by the server while idle, or past its keep-alive
                self._connections.remove(conn)
                closing.append(conn)
                continue
            return conn
        return None


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
        )
    return transport
