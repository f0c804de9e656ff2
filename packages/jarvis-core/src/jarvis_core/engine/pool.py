"""Connection limits of the engines' pooled clients, and the async transport they go by.

:func:`pool_limits` turns an engine's ``max_connections`` / ``max_keepalive_connections`` settings into
``httpx.Limits``: by default 100 connections at most (httpx's own limit) and as many kept alive between
bursts, where httpx keeps only 20 (a burst of N streams then opens N - 20 connections again).

:func:`async_transport` builds the transport of an engine's ``httpx.AsyncClient``: aiohttp under httpx's
public transport seam (:class:`~jarvis_core.engine.aiohttp_transport.AiohttpTransport`), whose pool and
parser stay cheap at hundreds of concurrent streams, where httpcore's pool looks at every connection and
every waiting request each time a request starts or ends.
"""

from __future__ import annotations

import ssl
from typing import TYPE_CHECKING, Optional

import httpx

from jarvis_core.engine.limits import check_count

if TYPE_CHECKING:
    from jarvis_core.engine.aiohttp_transport import AiohttpTransport

__all__ = ["DEFAULT_MAX_CONNECTIONS", "KEEPALIVE_EXPIRY", "async_transport", "pool_limits"]

#: Connections an engine opens to its server at most, unless configured (httpx's default).
DEFAULT_MAX_CONNECTIONS = 100
#: Seconds an idle pooled connection is kept (httpx's default).
KEEPALIVE_EXPIRY = 5.0


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


def async_transport(limits: httpx.Limits, verify: ssl.SSLContext, *, proxy: Optional[str] = None) -> AiohttpTransport:
    """The async transport of an engine's client, with ``limits``, ``verify`` for TLS and the HTTP
    ``proxy`` its requests go through (``None``: direct)."""
    # Imported here: aiohttp costs about as much to import as httpx, and a sync-only run never needs it.
    from jarvis_core.engine.aiohttp_transport import AiohttpTransport

    return AiohttpTransport(limits, verify, proxy=proxy)
