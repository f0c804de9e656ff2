"""The values a worker hands out: request and worker states, status snapshots, results, signals.

All are frozen snapshots: reading one never races with the worker's threads.
"""

from __future__ import annotations

import enum
from typing import Any, Mapping, Optional, Tuple

import attrs

from jarvis_core.types import Usage

from ..server.supervised import ServerState

__all__ = [
    "NOT_READY",
    "NO_SLOT_AVAILABLE",
    "RequestHandle",
    "RequestResult",
    "RequestState",
    "RequestStatus",
    "Signal",
    "ToolTraceEntry",
    "WorkerState",
    "WorkerStatus",
]


class RequestState(str, enum.Enum):
    """Where a request is. ``COMPLETED``, ``FAILED`` and ``CANCELED`` are final."""

    RUNNING = "running"
    TOOL_RUNNING = "tool_running"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELED = "canceled"

    @property
    def final(self) -> bool:
        return self in (RequestState.COMPLETED, RequestState.FAILED, RequestState.CANCELED)

    def __str__(self) -> str:
        return self.value


#: The worker's state is its managed server's (``stopped``, ``starting``, ``healthy``, ``restarting``,
#: ``gave_up``: crash-loop protection tripped, see ``last_error``).
WorkerState = ServerState


class _Sentinel:
    """A named, falsy marker value (``if not handle: …`` reads naturally)."""

    __slots__ = ("_name",)

    def __init__(self, name: str) -> None:
        self._name = name

    def __bool__(self) -> bool:
        return False

    def __repr__(self) -> str:
        return self._name

    def __reduce__(self) -> str:
        return self._name


#: What :meth:`~.worker.LlamaCppWorker.submit` returns when every slot is busy (it never queues).
NO_SLOT_AVAILABLE = _Sentinel("NO_SLOT_AVAILABLE")
#: What :meth:`~.worker.LlamaCppWorker.get_result` returns while the request is still running.
NOT_READY = _Sentinel("NOT_READY")


@attrs.frozen
class RequestHandle:
    """A submitted request: its ``id`` (use it with the polling API) and the worker ``slot`` it holds."""

    id: str
    slot: int

    def __str__(self) -> str:
        return self.id


@attrs.frozen
class Signal:
    """A one-way message from the model to the orchestrator, sent by calling a control tool.

    ``kind`` is the control tool's name (``decision_request``, ``low_confidence``, …), ``arguments`` what
    the model passed, ``iteration`` the tool-loop turn it came in, ``at`` a ``time.time()`` stamp.
    """

    kind: str
    arguments: Mapping[str, Any] = attrs.field(factory=dict)
    tool_call_id: str = ""
    iteration: int = 0
    at: float = 0.0


@attrs.frozen
class ToolTraceEntry:
    """One tool call of the tool loop and what came of it.

    ``outcome`` is ``ok``, ``error``, ``timeout``, ``skipped`` (over the per-turn cap, or after a
    decision request) or ``signal`` (a control tool, intercepted). ``output_chars`` is the size of the
    output before the cap; ``truncated`` says the cap cut it.
    """

    iteration: int
    call_id: str
    name: str
    arguments: str
    outcome: str
    duration_s: float = 0.0
    output_chars: int = 0
    truncated: bool = False
    detail: str = ""


@attrs.frozen
class RequestStatus:
    """A request as seen by :meth:`~.worker.LlamaCppWorker.get_status`.

    Timestamps are ``time.time()`` values; ``last_progress_at`` is when the stream last delivered bytes.
    The partial output is bounded: its length and its last ``partial_tail_chars`` characters.
    ``reason`` and ``detail`` say why a request FAILED or was CANCELED (e.g. ``repeated_line_loop`` and the
    line; ``server_crashed`` and the exit code).
    """

    id: str
    state: RequestState
    slot: int
    created_at: float
    finished_at: Optional[float] = None
    headers_at: Optional[float] = None
    first_token_at: Optional[float] = None
    last_progress_at: Optional[float] = None
    partial_length: int = 0
    partial_tail: str = ""
    iteration: int = 0
    tool_calls_left: int = 0
    tool_trace: Tuple[ToolTraceEntry, ...] = ()
    signals: Tuple[Signal, ...] = ()
    reason: Optional[str] = None
    detail: str = ""


@attrs.frozen
class RequestResult:
    """The final outcome of a request.

    ``content`` is the model's last answer (for FAILED/CANCELED: what had been generated when it ended).
    ``stop_reason`` is ``stop``, ``length``, ``decision_request`` (a decision request ended it), or the
    failure/cancel reason. ``budget_exhausted`` says the tool loop used all its turns.
    """

    id: str
    state: RequestState
    content: str
    stop_reason: str
    usage: Usage = attrs.field(factory=Usage)
    signals: Tuple[Signal, ...] = ()
    tool_trace: Tuple[ToolTraceEntry, ...] = ()
    iterations: int = 0
    budget_exhausted: bool = False
    reason: Optional[str] = None
    detail: str = ""
    timings: Mapping[str, Any] = attrs.field(factory=dict)
    created_at: float = 0.0
    finished_at: float = 0.0

    @property
    def ok(self) -> bool:
        return self.state is RequestState.COMPLETED


@attrs.frozen
class WorkerStatus:
    """The worker as seen by :meth:`~.worker.LlamaCppWorker.status`.

    ``active`` means started and not stopped or given up; ``healthy`` that the server answers;
    ``restarting`` that it is being replaced. ``last_error`` says why the last restart (or the give-up)
    happened, with the server's last log lines when they help.
    """

    state: WorkerState
    active: bool
    healthy: bool
    restarting: bool
    slots_total: int
    slots_used: int
    active_requests: Tuple[str, ...] = ()
    restart_count: int = 0
    last_error: Optional[str] = None
    last_healthy_at: Optional[float] = None
    pid: Optional[int] = None
    url: Optional[str] = None
    started_at: Optional[float] = None
    next_restart_at: Optional[float] = None
