"""``LlamaCppWorker``: one llama.cpp server process, N slots, a polling API.

::

    worker = LlamaCppWorker(WorkerConfig(model_path="model.gguf", slots=2)).start()
    handle = worker.submit("You are terse.", "Name three rivers.")
    if handle is NO_SLOT_AVAILABLE: ...          # every slot busy: the worker never queues
    while (result := worker.get_result(handle.id)) is NOT_READY:
        print(worker.get_status(handle.id).partial_tail); time.sleep(0.5)
    worker.stop()

Admission is the worker's own: llama-server would queue an extra request silently, so the worker counts
its slots and pins request slot *i* to server slot *i* (``id_slot``), which makes the server's ``/slots``
report attributable. See ``docs/worker.md`` for the design.
"""

from __future__ import annotations

import collections
import datetime as _dt
import itertools
import os
import threading
import time
import uuid
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import httpx

from jarvis_core.errors import EngineConnectionError, UnknownNameError
from jarvis_core.events import EventBus, EventType, default_bus
from jarvis_core.types import MessageLike, ToolSpec

from ..server.launch import MissingModelError, ServerProcess
from ..server.supervisor import Supervisor
from .config import WorkerConfig
from .prompts import resolve_timezone
from .record import RequestRecord
from .request import RequestSpec, build_spec, run_request
from .state import (
    NO_SLOT_AVAILABLE,
    NOT_READY,
    RequestHandle,
    RequestResult,
    RequestState,
    RequestStatus,
    WorkerState,
    WorkerStatus,
)
from .tools import ToolRunner

__all__ = ["LlamaCppWorker"]

_FREE, _BUSY, _DRAINING = "free", "busy", "draining"


class LlamaCppWorker:
    """Owns one llama.cpp server subprocess (one model) and runs up to ``config.slots`` requests at once.

    :param config: the immutable :class:`WorkerConfig`.
    :param tool_runner: runs the tools requests may call (``None``: only control tools).
    :param bus: where ``WORKER_*`` events go (default: :func:`jarvis_core.events.default_bus`).
    :param clock: returns the timezone-aware "now" shown in the BIOS layer (default: the real time in
        ``config.timezone``); pass a fixed one to make prompts byte-for-byte reproducible.
    """

    def __init__(self, config: WorkerConfig, *, tool_runner: Optional[ToolRunner] = None,
                 bus: Optional[EventBus] = None, clock: Optional[Callable[[], _dt.datetime]] = None) -> None:
        self.config = config
        self.runner = tool_runner
        self._bus = bus or default_bus()
        zone = resolve_timezone(config.timezone)
        self._clock = clock or (lambda: _dt.datetime.now(zone))
        self._lock = threading.RLock()
        self._state = WorkerState.STOPPED
        self._server: Optional[ServerProcess] = None
        self._url: Optional[str] = None
        self._generation = 0
        self._tool_mode: Optional[str] = None
        self._restart_count = 0
        self._last_error: Optional[str] = None
        self._last_healthy_at: Optional[float] = None
        self._started_at: Optional[float] = None
        self._next_restart_at: Optional[float] = None
        self._slots: List[Tuple[str, Optional[RequestRecord], float]] = [(_FREE, None, 0.0)] * config.slots
        self._records: collections.OrderedDict[str, RequestRecord] = collections.OrderedDict()
        self._threads: Dict[str, threading.Thread] = {}
        self._ids = itertools.count(1)
        self._changed = threading.Condition(self._lock)
        self._client: Optional[httpx.Client] = None
        self._supervisor: Optional[Supervisor] = None
        self._supervisor_thread: Optional[threading.Thread] = None

    # -- lifecycle ------------------------------------------------------------------------------
    def start(self, *, wait: bool = True, timeout: Optional[float] = None) -> LlamaCppWorker:
        """Launch the server and its supervisor. With ``wait`` (default), block until the server is healthy;
        raises :class:`EngineConnectionError` when it gave up (crash-loop protection) or ``timeout`` passed.
        A missing model file raises :class:`~jarvis_core.errors.ConfigError` at once."""
        cfg = self.config
        path = cfg.resolved_model_path()
        if not os.path.isfile(path):
            raise MissingModelError(f"model file not found: {path}", key="model_path")
        with self._lock:
            if self._state is not WorkerState.STOPPED:
                raise RuntimeError(f"the worker is already {self._state.value}; stop it (or make a new one) first")
            self._state = WorkerState.STARTING
            self._last_error = None
            self._started_at = time.time()
            t = cfg.timeouts
            self._client = httpx.Client(
                timeout=httpx.Timeout(connect=t.connect, read=None, write=t.headers, pool=t.headers),
                # a connection per request: cancelling one shuts its socket without touching the others
                limits=httpx.Limits(max_connections=cfg.slots + 4, max_keepalive_connections=0),
            )
            self._supervisor = Supervisor(self)
            self._supervisor_thread = threading.Thread(target=self._supervisor.run, name="llama-worker-supervisor",
                                                       daemon=True)
            self._supervisor_thread.start()
        if wait and not self.wait_healthy(timeout if timeout is not None else cfg.startup_timeout + 5):
            status = self.status()
            if status.state is WorkerState.GAVE_UP:
                raise EngineConnectionError(f"llama.cpp worker could not start: {status.last_error}",
                                            engine_id="llamacpp-worker")
            raise EngineConnectionError(f"llama.cpp worker was not healthy within {timeout}s (state {status.state})",
                                        engine_id="llamacpp-worker")
        return self

    def stop(self) -> None:
        """Cancel in-flight requests (CANCELED, reason ``worker_stopped``), stop the server and the threads.
        Safe to call more than once."""
        with self._lock:
            if self._state is WorkerState.STOPPED and self._supervisor is None:
                return
            sup, sup_thread = self._supervisor, self._supervisor_thread
            self._supervisor = self._supervisor_thread = None
        if sup is not None:
            sup.stop_event.set()
        for rec in self._inflight():
            rec.finish(RequestState.CANCELED, "worker_stopped", "the worker was stopped")
        if sup_thread is not None:
            sup_thread.join(10.0)
        proc = self._take_server()
        if proc is not None:
            proc.stop(self.config.restart.stop_grace)
        for thread in list(self._threads.values()):
            thread.join(5.0)
        with self._lock:
            self._state = WorkerState.STOPPED
            self._slots = [(_FREE, None, 0.0)] * self.config.slots
            client, self._client = self._client, None
            self._changed.notify_all()
        if client is not None:
            client.close()

    def __enter__(self) -> LlamaCppWorker:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def wait_healthy(self, timeout: float) -> bool:
        """Block until the server is healthy (True), the worker gave up or stopped, or ``timeout`` passed."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while self._state is not WorkerState.HEALTHY:
                left = deadline - time.monotonic()
                if left <= 0 or self._state in (WorkerState.GAVE_UP, WorkerState.STOPPED):
                    return False
                self._changed.wait(min(left, 0.5))
            return True

    # -- requests -------------------------------------------------------------------------------
    def submit(
        self,
        system_prompt: Optional[str],
        user_prompt: Optional[str] = None,
        *,
        messages: Optional[Sequence[MessageLike]] = None,
        tools: Optional[Sequence[Union[str, ToolSpec]]] = None,
        control_tools: Union[bool, Sequence[str]] = True,
        tool_choice: str = "auto",
        max_tokens: Optional[int] = None,
        temperature: Optional[float] = None,
        response_format: Optional[Mapping[str, Any]] = None,
    ) -> Union[RequestHandle, Any]:
        """Start a request at once and return its handle, or :data:`NO_SLOT_AVAILABLE` when every slot is
        busy (or the server is restarting). It never queues.

        The conversation is ``user_prompt`` or ``messages`` (not both). ``tools``: names (or specs) of the
        runner's tools to offer; ``None`` offers all of them. ``control_tools``: ``True`` (all), ``False``,
        or the names to offer. ``max_tokens`` defaults to the worker's.
        """
        spec = build_spec(
            self.config, self.runner, system_prompt=system_prompt, user_prompt=user_prompt, messages=messages,
            tools=tools, control_tools=control_tools, tool_choice=tool_choice, max_tokens=max_tokens,
            temperature=temperature, response_format=response_format, now=self._clock(),
        )
        with self._lock:
            if self._state in (WorkerState.STOPPED, WorkerState.GAVE_UP):
                why = f": {self._last_error}" if self._last_error else ""
                raise EngineConnectionError(f"the llama.cpp worker is {self._state.value}{why}",
                                            engine_id="llamacpp-worker")
            if self._state is not WorkerState.HEALTHY:
                return NO_SLOT_AVAILABLE
            slot = next((i for i, s in enumerate(self._slots) if s[0] == _FREE), None)
            if slot is None:
                return NO_SLOT_AVAILABLE
            request_id = f"req-{next(self._ids)}-{uuid.uuid4().hex[:8]}"
            has_tools = bool(spec.tools or spec.control_tools)
            rec = RequestRecord(request_id, slot, tool_budget=self.config.tools.budget if has_tools else 0,
                                tail_chars=self.config.partial_tail_chars)
            self._slots[slot] = (_BUSY, rec, 0.0)
            self._records[request_id] = rec
            self._forget_old()
            thread = threading.Thread(target=self._run, args=(rec, spec), name=f"llama-worker-{request_id}",
                                      daemon=True)
            self._threads[request_id] = thread
            thread.start()
        return RequestHandle(request_id, slot)

    def _run(self, rec: RequestRecord, spec: RequestSpec) -> None:
        try:
            run_request(self, rec, spec, self.config.timezone)
        finally:
            early = rec.closed_early
            with self._lock:
                self._threads.pop(rec.id, None)
                if self._slots[rec.slot][1] is rec:
                    same_server = rec.generation == self._generation and self._state is WorkerState.HEALTHY
                    self._slots[rec.slot] = (_DRAINING, rec, time.monotonic()) if early and same_server else \
                        (_FREE, None, 0.0)
                self._changed.notify_all()
            self._publish(EventType.WORKER_REQUEST_END, **rec.event_data())

    def get_status(self, request_id: str) -> RequestStatus:
        """State, timestamps, progress, bounded partial output, tool trace and signals of a request."""
        return self._record(request_id).status()

    def get_result(self, request_id: str) -> Union[RequestResult, Any]:
        """The :class:`RequestResult` once the request is final, else :data:`NOT_READY`."""
        rec = self._record(request_id)
        return rec.result() if rec.final else NOT_READY

    def wait(self, request_id: str, timeout: Optional[float] = None) -> Union[RequestResult, Any]:
        """Block until the request is final (its result) or ``timeout`` passes (:data:`NOT_READY`)."""
        rec = self._record(request_id)
        rec.done.wait(timeout)
        return rec.result() if rec.final else NOT_READY

    def cancel(self, request_id: str) -> bool:
        """Best effort: end the request as CANCELED and close its stream; its slot frees once the server
        confirms the slot is idle. Returns False when the request had already ended."""
        return self._record(request_id).finish(RequestState.CANCELED, "canceled", "canceled by the caller")

    # -- status ---------------------------------------------------------------------------------
    def status(self) -> WorkerStatus:
        """Active/healthy/restarting, slots, active request ids, restarts, last error, last healthy time."""
        with self._lock:
            state = self._state
            used = sum(1 for s in self._slots if s[0] != _FREE)
            return WorkerStatus(
                state=state,
                active=state in (WorkerState.STARTING, WorkerState.HEALTHY, WorkerState.RESTARTING),
                healthy=state is WorkerState.HEALTHY,
                restarting=state is WorkerState.RESTARTING,
                slots_total=self.config.slots,
                slots_used=used,
                active_requests=tuple(r.id for r in self._records.values() if not r.final),
                restart_count=self._restart_count,
                last_error=self._last_error,
                last_healthy_at=self._last_healthy_at,
                pid=self._server.pid if self._server is not None else None,
                url=self._url,
                started_at=self._started_at,
                next_restart_at=self._next_restart_at,
            )

    @property
    def tool_mode(self) -> Optional[str]:
        """The tool mode in use (``native`` or ``json_schema``; for ``auto`` known once the server is up)."""
        with self._lock:
            return self._tool_mode if self._tool_mode is not None else (
                None if self.config.tool_mode == "auto" else self.config.tool_mode)

    def server_alive(self) -> bool:
        """Whether the current server process is running now (the state lags a crash until the next tick)."""
        with self._lock:
            proc = self._server
        return proc is not None and proc.is_alive()

    @property
    def url(self) -> str:
        """The current server's base URL (changes on every restart). Raises when no server is up."""
        with self._lock:
            if self._url is None:
                raise RuntimeError("the worker's server is not running")
            return self._url

    def log_tail(self, n: int = 40) -> str:
        """The server's last ``n`` log lines (from its bounded ring buffer)."""
        with self._lock:
            proc = self._server
        return proc.log_tail(n) if proc is not None else ""

    # -- WorkerContext (used by request threads) ------------------------------------------------
    def http_client(self) -> httpx.Client:
        client = self._client
        if client is None:
            raise RuntimeError("the worker is stopped")
        return client

    def current_server(self) -> Optional[Tuple[int, str]]:
        with self._lock:
            if self._state is not WorkerState.HEALTHY or self._url is None:
                return None
            return self._generation, self._url

    def server_died(self, generation: int) -> Optional[str]:
        """Why the server of ``generation`` is gone (waits briefly for a dying process), or None if alive."""
        with self._lock:
            proc, gen = self._server, self._generation
        if gen != generation or proc is None:
            return "the server was replaced while the request ran"
        deadline = time.monotonic() + 1.0
        while proc.is_alive() and time.monotonic() < deadline:
            time.sleep(0.05)
        if proc.is_alive():
            return None
        return f"the server exited with code {proc.returncode} during the request"

    # -- used by the supervisor -----------------------------------------------------------------
    def _publish(self, event: EventType, **data: Any) -> None:
        self._bus.publish(event, **data)

    def _set_state(self, state: WorkerState, *, error: Optional[str] = None) -> None:
        with self._lock:
            self._state = state
            if error is not None:
                self._last_error = error
            self._changed.notify_all()

    def _set_server(self, proc: ServerProcess, url: Optional[str]) -> None:
        with self._lock:
            self._server = proc
            self._url = url
            if url is not None:
                self._generation += 1
                self._state = WorkerState.HEALTHY
                self._last_healthy_at = time.time()
                self._next_restart_at = None
                self._slots = [(_FREE, None, 0.0) if s[0] == _DRAINING else s for s in self._slots]
            self._changed.notify_all()

    def _set_tool_mode(self, mode: str) -> None:
        with self._lock:
            self._tool_mode = mode

    def _take_server(self) -> Optional[ServerProcess]:
        with self._lock:
            proc, self._server, self._url = self._server, None, None
            return proc

    def _set_restarting(self, error: str, delay: float) -> None:
        with self._lock:
            self._state = WorkerState.RESTARTING
            self._last_error = error
            self._restart_count += 1
            self._next_restart_at = time.time() + delay
            self._changed.notify_all()

    def _mark_healthy(self) -> None:
        with self._lock:
            self._last_healthy_at = time.time()

    def _inflight(self) -> List[RequestRecord]:
        with self._lock:
            return [r for r in self._records.values() if not r.final]

    def _fail_inflight(self, reason: str, detail: str) -> None:
        for rec in self._inflight():
            rec.finish(RequestState.FAILED, reason, detail)

    def _draining(self) -> List[Tuple[int, float]]:
        with self._lock:
            return [(i, since) for i, (kind, _rec, since) in enumerate(self._slots) if kind == _DRAINING]

    def _free_slot(self, slot: int) -> None:
        with self._lock:
            if self._slots[slot][0] == _DRAINING:
                self._slots[slot] = (_FREE, None, 0.0)
                self._changed.notify_all()

    # -- helpers --------------------------------------------------------------------------------
    def _record(self, request_id: str) -> RequestRecord:
        with self._lock:
            rec = self._records.get(str(request_id))
            if rec is None:
                raise UnknownNameError("worker request", str(request_id), list(self._records)[-10:])
            return rec

    def _forget_old(self) -> None:
        excess = len(self._records) - self.config.keep_finished - self.config.slots
        for rid in [rid for rid, r in self._records.items() if r.final][:max(0, excess)]:
            del self._records[rid]

    def __repr__(self) -> str:
        return f"<LlamaCppWorker {self.config.model_alias!r} {self._state.value} slots={self.config.slots}>"
