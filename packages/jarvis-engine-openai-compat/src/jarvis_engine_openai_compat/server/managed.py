"""The managed llama.cpp server: one server process kept running by a supervisor thread.

:class:`ManagedServer` launches the server (through :class:`~.launch.ServerProcess`), then every tick checks
that the process lives, samples its CPU time, judges the requests running on it for a stall
(:mod:`.liveness`), enforces the headers timeout and the optional absolute timeout, confirms that the server
slots of closed streams went idle, and probes ``/health`` now and then (all through the ``llamacpp``
engine's probes).

A failure (crash, stall, wedged HTTP, stuck slot) fails every in-flight request with the reason, kills
the server, and restarts it after an exponential backoff, unless ``crash_loop_max`` failures happened
within ``crash_loop_window``: then it gives up and its status says why. Requests are never replayed.

The requests are not the server's: whoever runs them (the worker) hands them over through the narrow
:class:`Supervised` protocol. The ``embedded`` engine runs a managed server without one.
"""

from __future__ import annotations

import collections
import logging
import os
import random
import threading
import time
from typing import Any, Deque, Optional, Tuple

from jarvis_core.errors import ConfigError, EngineConnectionError
from jarvis_core.events import EventBus, EventType, default_bus

from ..engines.llamacpp import LlamaCppEngine
from .config import ServerConfig
from .launch import MissingModelError, ServerProcess, ServerSpec, ServerStartError, ServerStartTimeout
from .liveness import CpuHistory, ProcessCpuReader, judge_stall, load_failure
from .supervised import NO_REQUESTS, ServerState, ServerStatus, Supervised

__all__ = ["ManagedServer"]

log = logging.getLogger(__name__)

#: (reason, detail, fatal): why the server must go, and whether a restart could help.
Failure = Tuple[str, str, bool]


class _Stopping(Exception):
    """Raised inside ``wait_ready``'s progress callback to abandon a start when the server is stopped."""


class ManagedServer:
    """One llama.cpp server process (one model), kept running. ``start()`` → :attr:`url` → ``stop()``.

    :param config: the immutable :class:`~.config.ServerConfig` (a ``WorkerConfig`` is one).
    :param requests: the requests to watch (:class:`Supervised`); ``None``: none.
    :param bus: where ``WORKER_*`` events go (default: :func:`jarvis_core.events.default_bus`).
    """

    def __init__(self, config: ServerConfig, *, requests: Optional[Supervised] = None,
                 bus: Optional[EventBus] = None) -> None:
        self.config = config
        self._requests: Supervised = requests if requests is not None else NO_REQUESTS
        self._bus = bus or default_bus()
        self._lock = threading.RLock()
        self._changed = threading.Condition(self._lock)
        self._state = ServerState.STOPPED
        self._proc: Optional[ServerProcess] = None
        self._probes: Optional[LlamaCppEngine] = None  # the current server's /health, /slots, /props
        self._url: Optional[str] = None
        self._generation = 0
        self._template_tools: Optional[bool] = None
        self._restart_count = 0
        self._last_error: Optional[str] = None
        self._last_healthy_at: Optional[float] = None
        self._started_at: Optional[float] = None
        self._next_restart_at: Optional[float] = None
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None
        self._failures: Deque[float] = collections.deque()
        self._consecutive = 0
        self._rand = random.Random()
        t = config.timeouts
        self._tick = max(0.05, min(0.5, t.stall_window / 5, t.headers / 5))
        self._cpu = CpuHistory(horizon=t.stall_window * 2 + 1.0)
        self._ready_mono = time.monotonic()

    # -- lifecycle ------------------------------------------------------------------------------
    def start(self, *, wait: bool = True, timeout: Optional[float] = None) -> ManagedServer:
        """Launch the server and its supervisor. With ``wait`` (default), block until the server is healthy;
        raises :class:`EngineConnectionError` when it gave up (crash-loop protection, or a failure no retry
        can fix) or ``timeout`` passed. A missing model file raises :class:`~jarvis_core.errors.ConfigError`
        at once, without a process."""
        path = self.config.resolved_model_path()
        if not os.path.isfile(path):
            raise MissingModelError(f"model file not found: {path}", key="model_path")
        with self._lock:
            if self._state is not ServerState.STOPPED or self._thread is not None:
                raise RuntimeError(f"the server is already {self._state.value}; stop it (or make a new one) first")
            self._state = ServerState.STARTING
            self._last_error = None
            self._started_at = time.time()
            self._stop.clear()
            self._thread = threading.Thread(target=self._run, args=(path,), name="llama-server-supervisor",
                                            daemon=True)
            self._thread.start()
        if wait and not self.wait_ready(timeout if timeout is not None else self.config.startup_timeout + 5):
            status = self.status()
            if status.state is ServerState.GAVE_UP:
                raise EngineConnectionError(f"the managed llama.cpp server could not start: {status.last_error}",
                                            engine_id="llamacpp")
            raise EngineConnectionError(f"the managed llama.cpp server was not healthy within {timeout}s "
                                        f"(state {status.state})", engine_id="llamacpp")
        return self

    def stop(self) -> None:
        """Stop the supervisor and the server (SIGTERM, SIGKILL after ``stop_grace``). Safe to call more
        than once, from any thread, also while a start is waiting. Requests are the caller's to end first."""
        self._stop.set()
        with self._lock:
            thread, self._thread = self._thread, None
            self._changed.notify_all()
        if thread is not None and thread is not threading.current_thread():
            thread.join(10.0)
        self._discard(hard=False)
        with self._lock:
            self._state = ServerState.STOPPED
            self._changed.notify_all()

    def wait_ready(self, timeout: float) -> bool:
        """Block until the server is healthy (True), it gave up or stopped, or ``timeout`` passed."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while self._state is not ServerState.HEALTHY:
                left = deadline - time.monotonic()
                if left <= 0 or self._state in (ServerState.GAVE_UP, ServerState.STOPPED):
                    return False
                self._changed.wait(min(left, 0.5))
            return True

    # -- state ----------------------------------------------------------------------------------
    def status(self) -> ServerStatus:
        """State, restarts, last error, last healthy time, pid, URL, next restart time."""
        with self._lock:
            return ServerStatus(
                state=self._state, restart_count=self._restart_count, last_error=self._last_error,
                last_healthy_at=self._last_healthy_at, pid=self._proc.pid if self._proc is not None else None,
                url=self._url, started_at=self._started_at, next_restart_at=self._next_restart_at)

    def current(self) -> Optional[Tuple[int, str]]:
        """``(generation, url)`` of the healthy server, or ``None`` while there is none. The generation
        grows at every (re)start, so a request can tell whether the server it used is still the one."""
        with self._lock:
            if self._state is not ServerState.HEALTHY or self._url is None:
                return None
            return self._generation, self._url

    @property
    def url(self) -> str:
        """The current server's base URL (changes on every restart). Raises when no server is up."""
        with self._lock:
            if self._url is None:
                raise RuntimeError("the managed llama.cpp server is not running")
            return self._url

    @property
    def template_supports_tools(self) -> Optional[bool]:
        """What the current server's ``/props`` said about the chat template (``None`` before it was asked)."""
        with self._lock:
            return self._template_tools

    def alive(self) -> bool:
        """Whether the current server process runs now (the state lags a crash until the next tick)."""
        with self._lock:
            proc = self._proc
        return proc is not None and proc.is_alive()

    def died(self, generation: int) -> Optional[str]:
        """Why the server of ``generation`` is gone (waits briefly for a dying process), or None if alive."""
        with self._lock:
            proc, gen = self._proc, self._generation
        if gen != generation or proc is None:
            return "the server was replaced while the request ran"
        deadline = time.monotonic() + 1.0
        while proc.is_alive() and time.monotonic() < deadline:
            time.sleep(0.05)
        if proc.is_alive():
            return None
        return f"the server exited with code {proc.returncode} during the request"

    def log_tail(self, n: int = 40) -> str:
        """The server's last ``n`` log lines (from its bounded ring buffer)."""
        with self._lock:
            proc = self._proc
        return proc.log_tail(n) if proc is not None else ""

    def _set(self, state: ServerState, error: Optional[str] = None) -> None:
        with self._lock:
            if self._stop.is_set():
                return
            self._state = state
            if error is not None:
                self._last_error = error
            self._changed.notify_all()

    def _publish(self, event: EventType, **data: Any) -> None:
        self._bus.publish(event, **data)

    # -- the supervisor thread ------------------------------------------------------------------
    def _run(self, path: str) -> None:
        while not self._stop.is_set():
            failure = self._launch(path)
            if failure is None and not self._stop.is_set():
                failure = self._monitor()
            if failure is None or self._stop.is_set():
                return
            reason, detail, fatal = failure
            self._set(ServerState.RESTARTING, f"{reason}: {detail}")
            for request in self._requests.in_flight():
                request.fail(reason, detail)
            self._discard(hard=True)
            if fatal or self._crash_loop():
                self._give_up(reason, detail, fatal)
                return
            self._consecutive += 1
            delay = self.config.restart.backoff(self._consecutive, self._rand.random())
            with self._lock:
                self._restart_count += 1
                self._next_restart_at = time.time() + delay
            self._publish(EventType.WORKER_RESTART, reason=reason, attempt=self._consecutive, backoff_s=delay)
            if self._stop.wait(delay):
                return

    def _crash_loop(self) -> bool:
        pol = self.config.restart
        now = time.monotonic()
        self._failures.append(now)
        while self._failures and self._failures[0] < now - pol.crash_loop_window:
            self._failures.popleft()
        return len(self._failures) >= pol.crash_loop_max

    def _give_up(self, reason: str, detail: str, fatal: bool) -> None:
        pol = self.config.restart
        why = (f"{reason}: {detail}" if fatal else
               f"gave up after {len(self._failures)} failures within {pol.crash_loop_window:g}s "
               f"(crash-loop protection); last: {reason}: {detail}")
        self._set(ServerState.GAVE_UP, why)
        self._publish(EventType.WORKER_GAVE_UP, reason=reason, failures=len(self._failures))

    def _launch(self, path: str) -> Optional[Failure]:
        cfg = self.config
        spec = ServerSpec(model_path=path, binary_path=cfg.binary_path, host=cfg.host, port=0, slots=cfg.slots,
                          ctx_per_slot=cfg.ctx_per_slot, threads=cfg.threads, alias=cfg.model_alias,
                          extra_args=cfg.extra_args)
        proc = ServerProcess(spec, log_max_lines=cfg.log_max_lines, log_max_bytes=cfg.log_max_bytes)
        self._publish(EventType.WORKER_STARTING, model=cfg.model_alias, attempt=self._consecutive)
        started = time.monotonic()
        try:
            proc.start()
        except ConfigError as exc:  # missing model or binary: no restart can fix that
            return "config_error", str(exc), True
        except OSError as exc:
            return "start_failed", f"cannot run the server: {exc}", False
        with self._lock:
            self._proc = proc

        def on_progress(_state: str, _elapsed: float) -> None:
            if self._stop.is_set():
                raise _Stopping

        try:
            proc.wait_ready(cfg.startup_timeout, on_progress=on_progress)
        except _Stopping:
            return None
        except ServerStartError as exc:
            # The xllamacpp host's documented exits 2 (bad arguments) and 3 (xllamacpp missing) cannot be
            # fixed by trying again.
            fatal = not cfg.binary_path and exc.returncode in (2, 3)
            cause = load_failure(exc.log_tail)
            if cause is not None and not isinstance(exc, ServerStartTimeout):
                # A file llama.cpp cannot read (bad magic, truncated, empty) stays unreadable on retry.
                return "load_failed", f"llama.cpp cannot load the model file {path}\n  {cause}", True
            return "start_failed", str(exc), fatal
        t = cfg.timeouts
        probes = LlamaCppEngine(host=proc.url, timeout=t.probe, connect_timeout=t.connect, health_timeout=t.probe)
        template_tools = probes.template_tools()
        self._cpu.clear()
        self._ready_mono = time.monotonic()
        with self._lock:
            if self._stop.is_set():
                probes.close()
                return None
            self._probes = probes
            self._url = proc.url
            self._template_tools = template_tools
            self._generation += 1
            self._state = ServerState.HEALTHY
            self._last_healthy_at = time.time()
            self._next_restart_at = None
            self._changed.notify_all()
        self._requests.server_ready()
        self._publish(EventType.WORKER_READY, pid=proc.pid, url=proc.url, startup_s=time.monotonic() - started)
        return None

    def _discard(self, *, hard: bool) -> None:
        with self._lock:
            proc, self._proc, self._url = self._proc, None, None
            probes, self._probes = self._probes, None
        if probes is not None:
            probes.close()
        if proc is None:
            return
        if hard:
            proc.kill()  # SIGKILL also ends a SIGSTOPped or wedged server; SIGTERM would not
        else:
            proc.stop(self.config.restart.stop_grace)

    # -- watching -------------------------------------------------------------------------------
    def _monitor(self) -> Optional[Failure]:
        with self._lock:
            proc, probes = self._proc, self._probes
        assert proc is not None and probes is not None
        reader = ProcessCpuReader(proc.pid) if proc.pid else None
        next_health = 0.0
        unhealthy_since: Optional[float] = None
        t = self.config.timeouts
        while not self._stop.wait(self._tick):
            if not proc.is_alive():
                return "server_crashed", _exit_detail(proc), False
            try:
                now = time.monotonic()
                if reader is not None:
                    self._cpu.add(reader(), now)
                problem = self._check_requests(now) or self._check_draining(probes, now)
                if problem is not None:
                    return problem
                if now >= next_health:
                    next_health = now + t.health_interval
                    if probes.health():
                        unhealthy_since = None
                        with self._lock:
                            self._last_healthy_at = time.time()
                    else:
                        unhealthy_since = unhealthy_since or now
                if unhealthy_since is not None and now - unhealthy_since >= t.stall_window:
                    rate = self._cpu.rate(t.stall_window, now)
                    if rate is not None and rate < t.min_cpu_fraction:
                        return ("server_unresponsive",
                                f"/health failed for {now - unhealthy_since:.1f}s and the server's CPU is idle", False)
                if self._consecutive and now - self._ready_mono >= self.config.restart.stable_after:
                    self._consecutive = 0  # a stable server resets the backoff
            except Exception:  # a bug in one check must not end supervision silently
                log.exception("managed llama.cpp server: a check failed; supervision goes on")
        return None

    def _check_requests(self, now: float) -> Optional[Failure]:
        t = self.config.timeouts
        for request in self._requests.in_flight():
            if t.absolute is not None and now - request.created_mono > t.absolute:
                request.fail("absolute_timeout", f"the request ran longer than {t.absolute:g}s")
                continue
            sent = request.sent_mono
            if request.awaiting_headers and sent is not None and now - sent > t.headers:
                return "headers_timeout", f"no response headers within {t.headers:g}s; the server is wedged", False
            if request.streaming:
                verdict = judge_stall(now=now, last_progress_at=request.last_progress_mono, window=t.stall_window,
                                      cpu=self._cpu, min_cpu_fraction=t.min_cpu_fraction)
                if verdict.stalled:
                    return "server_stalled", verdict.detail, False
        return None

    def _check_draining(self, probes: LlamaCppEngine, now: float) -> Optional[Failure]:
        draining = self._requests.draining_slots()
        if not draining:
            return None
        busy = probes.busy_slots()
        grace = self.config.restart.cancel_grace
        for slot, since in draining:
            if busy is not None and slot not in busy:
                self._requests.release_slot(slot)
            elif busy is not None and now - since > grace:
                return "slot_stuck", f"server slot {slot} kept working {grace:g}s after its request ended", False
        return None

    def __repr__(self) -> str:
        return f"<ManagedServer {self.config.model_alias!r} {self._state.value} slots={self.config.slots}>"


def _exit_detail(proc: ServerProcess) -> str:
    tail = proc.log_tail(5).strip()
    return f"the server exited with code {proc.returncode}" + (f"; last output: {tail[-600:]}" if tail else "")
