"""Connection limits uvicorn has no setting for: a deadline for each request head, and bounds on open
connections (in all and per client address).

uvicorn closes an idle keep-alive connection (``timeout_keep_alive``) and bounds the size of a head
(``h11_max_incomplete_event_size``), but a client that sends a head one byte at a time, or opens hundreds
of connections and sends nothing, holds them (and a file descriptor each) for as long as it likes; at the
process's file limit, ``accept`` fails and every client is refused. :func:`guarded_protocol` makes uvicorn's
own HTTP protocol class (httptools or h11, whichever it picked) close:

* a connection whose request head is not complete within ``head_timeout`` seconds of connecting, or of the
  end of the previous response;
* a new connection past ``max_connections`` open ones, or past ``max_connections_per_client`` from its
  address, right after ``accept`` (so its descriptor is free again at once).
"""

from __future__ import annotations

import asyncio
import collections
from typing import Any, Counter, Optional, Type

from uvicorn.protocols.http.auto import AutoHTTPProtocol

from jarvis_server.settings import ServerSettings

__all__ = ["ConnectionGuard", "guarded_protocol"]


class ConnectionGuard:
    """Counts the open connections, in all and per client address."""

    def __init__(self, total: int, per_client: int) -> None:
        self.total = total
        self.per_client = per_client
        self.open = 0
        self.by_client: Counter[str] = collections.Counter()

    def admit(self, client: str) -> bool:
        """Count a new connection from ``client``; False (not counted) when it is one too many."""
        if self.open >= self.total or (self.per_client and self.by_client[client] >= self.per_client):
            return False
        self.open += 1
        self.by_client[client] += 1
        return True

    def release(self, client: str) -> None:
        """Forget a connection :meth:`admit` counted."""
        self.open -= 1
        self.by_client[client] -= 1
        if self.by_client[client] <= 0:
            del self.by_client[client]


def guarded_protocol(settings: ServerSettings, base: Type[asyncio.Protocol] = AutoHTTPProtocol) -> Type[asyncio.Protocol]:
    """uvicorn's HTTP protocol class ``base`` with the head deadline and connection bounds of ``settings``
    (pass it as ``uvicorn.Config(http=...)``); each call has its own counts."""
    guard = ConnectionGuard(settings.connection_limit(), settings.max_connections_per_client)
    head_timeout = settings.head_timeout

    # uvicorn chooses its protocol class at import time (httptools or h11), so the base is a variable, which mypy
    # cannot check a class against.
    class GuardedHTTPProtocol(base):  # type: ignore[valid-type,misc]
        jarvis_client: Optional[str] = None
        jarvis_head: Optional[asyncio.TimerHandle] = None

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            peer = transport.get_extra_info("peername")
            client = str(peer[0]) if isinstance(peer, (tuple, list)) and peer else ""
            if not guard.admit(client):
                transport.abort()
                return
            self.jarvis_client = client
            self._jarvis_arm()

        def connection_lost(self, exc: Optional[Exception]) -> None:
            if self.jarvis_client is not None:
                guard.release(self.jarvis_client)
                self.jarvis_client = None
            if self.jarvis_head is not None:
                self.jarvis_head.cancel()
            super().connection_lost(exc)

        def on_response_complete(self) -> None:
            super().on_response_complete()
            self._jarvis_arm()

        def _jarvis_arm(self) -> None:
            if self.jarvis_head is not None:
                self.jarvis_head.cancel()
            self.jarvis_head = self.loop.call_later(head_timeout, self._jarvis_head_due)

        def _jarvis_head_due(self) -> None:
            self.jarvis_head = None
            cycle = self.cycle
            if (cycle is None or cycle.response_complete) and not self.transport.is_closing():
                self.transport.close()  # no request started since the deadline was set: its head never came

    return GuardedHTTPProtocol
