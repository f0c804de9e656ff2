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
report attributable. The server process is a :class:`~jarvis_engine_openai_compat.server.managed.ManagedServer`;
the worker hands it its requests through the server's narrow ``Supervised`` protocol (:meth:`in_flight`,
:meth:`draining_slots`, :meth:`release_slot`, :meth:`server_ready`). See ``docs/worker.md`` for the design.
"""

from __future__ import annotations

import collections
import datetime as _dt
import itertools
import threading
import time
import uuid
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

from jarvis_core.errors import EngineConnectionError, UnknownNameError
from jarvis_core.events import EventBus, EventType, default_bus
from jarvis_core.tools import Approver, ToolExecutor
from jarvis_core.types import MessageLike, ToolSpec

from ..server.managed import ManagedServer
from ..server.supervised import ServerState
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
    WorkerStatus,
)
from .tools import capped

__all__ = ["LlamaCppWorker"]

_FREE, _BUSY, _DRAINING = "free", "busy", "draining"


class LlamaCppWorker:
    """Owns one llama.cpp server subprocess (one model) and runs up to ``config.slots`` requests at once.

    :param config: the immutable :class:`WorkerConfig`.
    :param tools: the tools requests may call: jarvis tools (:class:`~jarvis_core.tools.Tool`: registered
        ones from :func:`~jarvis_core.tools.create_tool`, or :func:`~jarvis_core.tools.function_tool` for a plain
        function); they run through one :class:`~jarvis_core.tools.ToolExecutor`, their policies capped
        by ``config.tools``. None: only the control tools.
    :param approver: asked before a tool whose policy says ``confirm`` runs (none: such calls are denied).
    :param bus: where ``WORKER_*`` events go (default: :func:`jarvis_core.events.default_bus`).
    :param clock: returns the timezone-aware "now" shown in the BIOS layer (default: the real time in
        ``config.timezone``); pass a fixed one to make prompts byte-for-byte reproducible.
    """

    def __init__(self, config: WorkerConfig, *, tools: Iterable[Any] = (), approver: Optional[Approver] = None,
                 bus: Optional[EventBus] = None, clock: Optional[Callable[[], _dt.datetime]] = None) -> None:
        self.config = config
        #: Runs the tool calls (validation, approval, isolation, timeout, output cap, TOOL_CALL_* events).
        self.executor = ToolExecutor(capped(tools, config.tools), approver=approver)
        self._bus = bus or default_bus()
        zone = resolve_timezone(config.timezone)
        self._clock = clock or (lambda: _dt.datetime.now(zone))
        self._lock = threading.RLock()
        self._slots: List[Tuple[str, Optional[RequestRecord], float]] = [(_FREE, None, 0.0)] * config.slots
        self._records: collections.OrderedDict[str, RequestRecord] = collections.OrderedDict()
        self._threads: Dict[str, threading.Thread] = {}
        self._ids = itertools.count(1)
        self._server = ManagedServer(config, requests=self, bus=self._bus)

    # -- lifecycle ------------------------------------------------------------------------------
    def start(self, *, wait: bool = True, timeout: Optional[float] = None) -> LlamaCppWorker:
        """Launch the server and its supervisor. With ``wait`` (default), block until the server is healthy;
        raises :class:`EngineConnectionError` when it gave up (crash-loop protection) or ``timeout`` passed.
        A missing model file raises :class:`~jarvis_core.errors.ConfigError` at once."""
        self._server.start(wait=wait, timeout=timeout)
        return self

    def stop(self) -> None:
        """Cancel in-flight requests (CANCELED, reason ``worker_stopped``), stop the server and the threads.
        Safe to call more than once."""
        for rec in self.in_flight():
            rec.finish(RequestState.CANCELED, "worker_stopped", "the worker was stopped")
        self._server.stop()
        for thread in list(self._threads.values()):
            thread.join(5.0)
        with self._lock:
            self._slots = [(_FREE, None, 0.0)] * self.config.slots

    def __enter__(self) -> LlamaCppWorker:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def wait_healthy(self, timeout: float) -> bool:
        """Block until the server is healthy (True), the worker gave up or stopped, or ``timeout`` passed."""
        return self._server.wait_ready(timeout)

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
        worker's tools to offer; ``None`` offers all of them. ``control_tools``: ``True`` (all), ``False``,
        or the names to offer. ``max_tokens`` defaults to the worker's.
        """
        spec = build_spec(
            self.config, self.executor.specs(), system_prompt=system_prompt, user_prompt=user_prompt, messages=messages,
            tools=tools, control_tools=control_tools, tool_choice=tool_choice, max_tokens=max_tokens,
            temperature=temperature, response_format=response_format, now=self._clock(),
        )
        server = self._server.status()
        if server.state in (ServerState.STOPPED, ServerState.GAVE_UP):
            why = f": {server.last_error}" if server.last_error else ""
            raise EngineConnectionError(f"the llama.cpp worker is {server.state.value}{why}",
                                        engine_id="llamacpp-worker")
        if not server.healthy:
            return NO_SLOT_AVAILABLE
        with self._lock:
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
            current = self._server.current()
            with self._lock:
                self._threads.pop(rec.id, None)
                if self._slots[rec.slot][1] is rec:
                    same_server = current is not None and rec.generation == current[0]
                    self._slots[rec.slot] = (_DRAINING, rec, time.monotonic()) if early and same_server else \
                        (_FREE, None, 0.0)
            self._bus.publish(EventType.WORKER_REQUEST_END, **rec.event_data())

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
        server = self._server.status()
        with self._lock:
            used = sum(1 for s in self._slots if s[0] != _FREE)
            active = tuple(r.id for r in self._records.values() if not r.final)
        return WorkerStatus(
            state=server.state, active=server.active, healthy=server.healthy,
            restarting=server.state is ServerState.RESTARTING, slots_total=self.config.slots, slots_used=used,
            active_requests=active, restart_count=server.restart_count, last_error=server.last_error,
            last_healthy_at=server.last_healthy_at, pid=server.pid, url=server.url, started_at=server.started_at,
            next_restart_at=server.next_restart_at)

    @property
    def tool_mode(self) -> Optional[str]:
        """The tool mode in use (``native`` or ``json_schema``; for ``auto`` known once the server is up)."""
        if self.config.tool_mode != "auto":
            return self.config.tool_mode
        tools = self._server.template_supports_tools
        return None if tools is None else ("native" if tools else "json_schema")

    @property
    def server(self) -> ManagedServer:
        """The managed llama.cpp server the requests run on."""
        return self._server

    def server_alive(self) -> bool:
        """Whether the current server process is running now (the state lags a crash until the next tick)."""
        return self._server.alive()

    @property
    def url(self) -> str:
        """The current server's base URL (changes on every restart). Raises when no server is up."""
        return self._server.url

    def log_tail(self, n: int = 40) -> str:
        """The server's last ``n`` log lines (from its bounded ring buffer)."""
        return self._server.log_tail(n)

    # -- WorkerContext (used by request threads) ------------------------------------------------
    @property
    def bus(self) -> EventBus:
        """Where the worker's events go."""
        return self._bus

    def current_server(self) -> Optional[Tuple[int, str]]:
        return self._server.current()

    def server_died(self, generation: int) -> Optional[str]:
        """Why the server of ``generation`` is gone (waits briefly for a dying process), or None if alive."""
        return self._server.died(generation)

    # -- Supervised (used by the managed server's supervisor) ------------------------------------
    def in_flight(self) -> List[RequestRecord]:
        """The requests not ended yet."""
        with self._lock:
            return [r for r in self._records.values() if not r.final]

    def draining_slots(self) -> List[Tuple[int, float]]:
        """``(slot, since)`` of the slots whose stream closed before the server finished it."""
        with self._lock:
            return [(i, since) for i, (kind, _rec, since) in enumerate(self._slots) if kind == _DRAINING]

    def release_slot(self, slot: int) -> None:
        """The server says ``slot`` is idle: it takes requests again."""
        with self._lock:
            if self._slots[slot][0] == _DRAINING:
                self._slots[slot] = (_FREE, None, 0.0)

    def server_ready(self) -> None:
        """A new server answers: slots that were draining on the old one are free."""
        with self._lock:
            self._slots = [(_FREE, None, 0.0) if s[0] == _DRAINING else s for s in self._slots]

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
        return f"<LlamaCppWorker {self.config.model_alias!r} {self._server.status().state.value} slots={self.config.slots}>"
