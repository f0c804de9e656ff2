"""The mutable, thread-safe record behind one request, and its frozen snapshots.

Three parties touch a record: its request thread (progress, output, tool trace), the supervisor (stall and
timeout checks, failing it on a restart) and callers (cancel, status). The final state is set exactly once:
whoever decides first (the request thread finishing, a cancel, the supervisor) wins, and later attempts
are ignored. Ending a record also shuts down its HTTP socket, which wakes a request thread blocked on a
silent server at once.
"""

from __future__ import annotations

import socket
import threading
import time
from typing import Any, Dict, List, Mapping, Optional

from jarvis_core.types import Usage

from .state import RequestResult, RequestState, RequestStatus, Signal, ToolTraceEntry

__all__ = ["RequestRecord"]


class RequestRecord:
    """One request's live state. Timestamps named ``*_mono`` use ``time.monotonic``; the others ``time.time``."""

    def __init__(self, request_id: str, slot: int, *, tool_budget: int, tail_chars: int) -> None:
        self.id = request_id
        self.slot = slot
        self.lock = threading.Lock()
        self.created_at = time.time()
        self.created_mono = time.monotonic()
        self.state = RequestState.RUNNING
        self.reason: Optional[str] = None
        self.detail = ""
        self.stop_reason = ""
        self.finished_at: Optional[float] = None
        self.done = threading.Event()
        # HTTP phase, read by the supervisor
        self.generation = 0
        self.sent_mono: Optional[float] = None
        self.awaiting_headers = False
        self.streaming = False
        #: the last stream was closed before the server finished it (the server slot may still be busy)
        self.closed_early = False
        self.headers_at: Optional[float] = None
        self.first_token_at: Optional[float] = None
        self.last_progress_at: Optional[float] = None
        self.last_progress_mono = self.created_mono
        self._sock: Optional[socket.socket] = None
        # output
        self._tail_chars = tail_chars
        self.turn_parts: List[str] = []
        self.partial_length = 0
        self._tail = ""
        self.content = ""
        # tool loop
        self.iteration = 0
        self.tool_calls_left = tool_budget
        self.budget_exhausted = False
        self.tool_trace: List[ToolTraceEntry] = []
        self.signals: List[Signal] = []
        self.usage = Usage()
        self.timings: Dict[str, Any] = {}

    # -- state ----------------------------------------------------------------------------------
    @property
    def final(self) -> bool:
        return self.state.final

    def set_state(self, state: RequestState) -> None:
        """Move between RUNNING and TOOL_RUNNING (ignored once final)."""
        with self.lock:
            if not self.state.final:
                self.state = state

    def finish(self, state: RequestState, reason: Optional[str] = None, detail: str = "", *, stop_reason: str = "",
               content: Optional[str] = None) -> bool:
        """Set the final state unless one is set already; returns True when this call set it.

        ``content`` is the answer; without it the text streamed in the current turn is kept."""
        with self.lock:
            if self.state.final:
                return False
            self.state = state
            self.reason = reason
            self.detail = detail or self.detail
            self.stop_reason = stop_reason or reason or ""
            self.finished_at = time.time()
            self.content = content if content is not None else "".join(self.turn_parts)
            sock = self._sock
        if sock is not None:
            _shutdown(sock)
        self.done.set()
        return True

    def fail(self, reason: str, detail: str) -> bool:
        """End the request as FAILED (the supervisor's verdicts: a restart, the absolute timeout)."""
        return self.finish(RequestState.FAILED, reason, detail)

    # -- HTTP phase -----------------------------------------------------------------------------
    def begin_http(self, generation: int) -> None:
        now = time.monotonic()
        with self.lock:
            self.generation = generation
            self.sent_mono = now
            self.last_progress_mono = now
            self.awaiting_headers = True
            self.streaming = False
            self.turn_parts = []

    def headers_arrived(self, sock: Optional[socket.socket]) -> bool:
        """Register the response's socket; returns False (and shuts it) when the request already ended."""
        with self.lock:
            self.awaiting_headers = False
            self.streaming = True
            self.headers_at = self.headers_at or time.time()
            self.last_progress_mono = time.monotonic()
            if self.state.final:
                if sock is not None:
                    _shutdown(sock)
                return False
            self._sock = sock
            return True

    def end_http(self) -> None:
        with self.lock:
            self.awaiting_headers = False
            self.streaming = False
            self.sent_mono = None
            self._sock = None

    def progress(self) -> None:
        """Bytes arrived on the stream (plain attribute writes: cheap on the hot path)."""
        self.last_progress_mono = time.monotonic()
        self.last_progress_at = time.time()

    def add_text(self, text: str) -> None:
        with self.lock:
            if self.first_token_at is None:
                self.first_token_at = time.time()
            self.turn_parts.append(text)
            self.partial_length += len(text)
            tail = self._tail + text
            cap = self._tail_chars
            self._tail = tail[-cap:] if cap and len(tail) > cap else (tail if cap else "")

    # -- snapshots ------------------------------------------------------------------------------
    def status(self) -> RequestStatus:
        with self.lock:
            return RequestStatus(
                id=self.id,
                state=self.state,
                slot=self.slot,
                created_at=self.created_at,
                finished_at=self.finished_at,
                headers_at=self.headers_at,
                first_token_at=self.first_token_at,
                last_progress_at=self.last_progress_at,
                partial_length=self.partial_length,
                partial_tail=self._tail,
                iteration=self.iteration,
                tool_calls_left=self.tool_calls_left,
                tool_trace=tuple(self.tool_trace),
                signals=tuple(self.signals),
                reason=self.reason,
                detail=self.detail,
            )

    def result(self) -> RequestResult:
        with self.lock:
            return RequestResult(
                id=self.id,
                state=self.state,
                content=self.content,
                stop_reason=self.stop_reason,
                usage=self.usage,
                signals=tuple(self.signals),
                tool_trace=tuple(self.tool_trace),
                iterations=self.iteration,
                budget_exhausted=self.budget_exhausted,
                reason=self.reason,
                detail=self.detail,
                timings=dict(self.timings),
                created_at=self.created_at,
                finished_at=self.finished_at or 0.0,
            )

    def event_data(self) -> Mapping[str, Any]:
        """What the WORKER_REQUEST_END event carries (ids, states, counts and timings only)."""
        with self.lock:
            return {
                "request_id": self.id,
                "slot": self.slot,
                "state": self.state.value,
                "reason": self.reason,
                "iterations": self.iteration,
                "signals": [s.kind for s in self.signals],
                "output_chars": self.partial_length,
                "duration_s": (self.finished_at or time.time()) - self.created_at,
            }


def _shutdown(sock: socket.socket) -> None:
    # shutdown (not close) wakes a thread blocked in recv() on this socket; httpx closes it afterwards
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
