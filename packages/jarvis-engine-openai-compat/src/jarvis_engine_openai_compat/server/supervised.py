"""What the managed server reports and what it watches: its state and status, and the narrow protocol
through which the component whose requests run on it (the worker) hands them over.

:class:`Supervised` is all the supervisor knows of the worker; :class:`WatchedRequest` all it knows of a
request. The ``embedded`` engine runs a managed server with no requests (:data:`NO_REQUESTS`).
"""

from __future__ import annotations

import enum
from typing import Optional, Protocol, Sequence, Tuple

import attrs

__all__ = ["NO_REQUESTS", "ServerState", "ServerStatus", "Supervised", "WatchedRequest"]


class ServerState(str, enum.Enum):
    """Where the managed server is: ``GAVE_UP`` means crash-loop protection tripped (see ``last_error``)."""

    STOPPED = "stopped"
    STARTING = "starting"
    HEALTHY = "healthy"
    RESTARTING = "restarting"
    GAVE_UP = "gave_up"

    def __str__(self) -> str:
        return self.value


@attrs.frozen
class ServerStatus:
    """A snapshot of the managed server. ``last_error`` says why the last restart (or the give-up)
    happened, with the server's last log lines when they help; the URL changes at every restart."""

    state: ServerState
    restart_count: int = 0
    last_error: Optional[str] = None
    last_healthy_at: Optional[float] = None
    pid: Optional[int] = None
    url: Optional[str] = None
    started_at: Optional[float] = None
    next_restart_at: Optional[float] = None

    @property
    def healthy(self) -> bool:
        return self.state is ServerState.HEALTHY

    @property
    def active(self) -> bool:
        """Started, and neither stopped nor given up."""
        return self.state in (ServerState.STARTING, ServerState.HEALTHY, ServerState.RESTARTING)


class WatchedRequest(Protocol):
    """A request running on the server, as the supervisor judges it (``*_mono``: ``time.monotonic``).

    ``awaiting_headers`` and ``streaming`` are both false while the request is not talking to the server
    (a tool runs): it is then only held to the absolute timeout.
    """

    created_mono: float
    sent_mono: Optional[float]
    awaiting_headers: bool
    streaming: bool
    last_progress_mono: float

    def fail(self, reason: str, detail: str) -> bool:
        """End the request as failed (and close its stream); False when it had ended already."""
        ...  # pragma: no cover


class Supervised(Protocol):
    """What the managed server needs from the component whose requests run on it (the worker)."""

    def in_flight(self) -> Sequence[WatchedRequest]:
        """The requests not ended yet."""
        ...  # pragma: no cover

    def draining_slots(self) -> Sequence[Tuple[int, float]]:
        """``(slot, since)`` of the slots whose stream was closed before the server finished it."""
        ...  # pragma: no cover

    def release_slot(self, slot: int) -> None:
        """The server says that slot is idle now: it may take a new request."""
        ...  # pragma: no cover

    def server_ready(self) -> None:
        """A (new) server answers: slots draining on an earlier one are free."""
        ...  # pragma: no cover


class _NoRequests:
    """The :class:`Supervised` of a server whose requests nobody hands over (the ``embedded`` engine)."""

    def in_flight(self) -> Sequence[WatchedRequest]:
        return ()

    def draining_slots(self) -> Sequence[Tuple[int, float]]:
        return ()

    def release_slot(self, slot: int) -> None:
        pass

    def server_ready(self) -> None:
        pass


#: The :class:`Supervised` of a server whose requests nobody hands over.
NO_REQUESTS: Supervised = _NoRequests()
