"""The supervisor thread: launch the server, watch it, nuke and repave when it fails.

One loop per worker. It starts the server (through :class:`~.launch.ServerProcess`), then every
tick checks that the process lives, samples its CPU time, judges every streaming request for a stall
(:mod:`.liveness`), enforces the headers timeout and the optional absolute timeout, confirms that slots of
cancelled requests went idle on the server, and probes ``/health`` now and then.

A failure (crash, stall, wedged HTTP, stuck slot) fails every in-flight request with the reason, kills
the server, and restarts it after an exponential backoff, unless ``crash_loop_max`` failures happened
within ``crash_loop_window``: then the worker gives up and its status says why. In-flight requests are
never replayed.
"""

from __future__ import annotations

import collections
import logging
import random
import threading
import time
from typing import TYPE_CHECKING, Deque, Optional, Tuple

import httpx

from jarvis_core.errors import ConfigError
from jarvis_core.events import EventType

from ..engines.llamacpp import template_supports_tools
from ..worker.state import RequestState, WorkerState
from .launch import ServerProcess, ServerSpec, ServerStartError, ServerStartTimeout
from .liveness import CpuHistory, ProcessCpuReader, judge_stall

if TYPE_CHECKING:
    from ..worker.worker import LlamaCppWorker

__all__ = ["Supervisor"]

log = logging.getLogger(__name__)


#: Words of llama.cpp's log that mean the model file itself is unusable (no restart can fix it).
_LOAD_FAILURE_WORDS = ("invalid magic", "failed to read", "failed to load model", "error loading model",
                       "unable to load model", "not a gguf", "unknown model architecture")


def load_failure(log_tail: str) -> Optional[str]:
    """The server's own line saying the model file cannot be loaded, or ``None``."""
    for line in log_tail.splitlines():
        low = line.lower()
        if any(word in low for word in _LOAD_FAILURE_WORDS):
            return " ".join(line.split())[:300]
    return None


class _Stopping(Exception):
    """Raised inside ``wait_ready``'s progress callback to abandon a start when the worker stops."""


class Supervisor:
    """Runs in its own thread (:meth:`run`) for the life of a worker."""

    def __init__(self, worker: LlamaCppWorker) -> None:
        self.worker = worker
        self.config = worker.config
        self.stop_event = threading.Event()
        self._failures: Deque[float] = collections.deque()
        self._consecutive = 0
        self._rand = random.Random()
        t = self.config.timeouts
        self.tick = max(0.05, min(0.5, t.stall_window / 5, t.headers / 5))
        self.cpu = CpuHistory(horizon=t.stall_window * 2 + 1.0)
        self._ready_mono = time.monotonic()
        self._next_health = 0.0
        self._unhealthy_since: Optional[float] = None

    # -- main loop ------------------------------------------------------------------------------
    def run(self) -> None:
        w = self.worker
        while not self.stop_event.is_set():
            failure = self._launch()
            if failure is None and not self.stop_event.is_set():
                failure = self._monitor()
            if failure is None or self.stop_event.is_set():
                return
            reason, detail, fatal = failure
            w._set_state(WorkerState.RESTARTING, error=f"{reason}: {detail}")
            w._fail_inflight(reason, detail)
            self._discard_server(hard=True)
            if fatal or self._crash_loop(reason):
                self._give_up(reason, detail, fatal)
                return
            self._consecutive += 1
            delay = self.config.restart.backoff(self._consecutive, self._rand.random())
            w._set_restarting(f"{reason}: {detail}", delay)
            w._publish(EventType.WORKER_RESTART, reason=reason, attempt=self._consecutive, backoff_s=delay)
            if self.stop_event.wait(delay):
                return

    def _crash_loop(self, reason: str) -> bool:
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
        self.worker._set_state(WorkerState.GAVE_UP, error=why)
        self.worker._publish(EventType.WORKER_GAVE_UP, reason=reason, failures=len(self._failures))

    # -- launching ------------------------------------------------------------------------------
    def _launch(self) -> Optional[Tuple[str, str, bool]]:
        cfg = self.config
        w = self.worker
        spec = ServerSpec(
            model_path=cfg.resolved_model_path(), binary_path=cfg.binary_path, host=cfg.host, port=0, slots=cfg.slots,
            ctx_per_slot=cfg.ctx_per_slot, threads=cfg.threads, alias=cfg.model_alias, extra_args=cfg.extra_args,
        )
        proc = ServerProcess(spec, log_max_lines=cfg.log_max_lines, log_max_bytes=cfg.log_max_bytes)
        w._publish(EventType.WORKER_STARTING, model=cfg.model_alias, attempt=self._consecutive)
        started = time.monotonic()
        try:
            proc.start()
        except ConfigError as exc:  # missing model or binary: no restart can fix that
            return "config_error", str(exc), True
        except OSError as exc:
            return "start_failed", f"cannot run the server: {exc}", False
        w._set_server(proc, None)

        def on_progress(_state: str, _elapsed: float) -> None:
            if self.stop_event.is_set():
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
                return "load_failed", f"llama.cpp cannot load the model file {cfg.model_path}\n  {cause}", True
            return "start_failed", str(exc), fatal
        self.cpu.clear()
        self._ready_mono = time.monotonic()
        w._set_tool_mode(self._tool_mode(proc.url))
        w._set_server(proc, proc.url)
        w._publish(EventType.WORKER_READY, pid=proc.pid, url=proc.url, startup_s=time.monotonic() - started)
        return None

    def _tool_mode(self, url: str) -> str:
        """The tool mode in use: the configured one, or for ``auto`` what the server's template supports."""
        mode = self.config.tool_mode
        if mode != "auto":
            return mode
        try:
            resp = self.worker.http_client().get(f"{url}/props", timeout=self.config.timeouts.probe)
            props = resp.json() if resp.status_code == 200 else None
        except (httpx.HTTPError, ValueError):
            props = None
        return "native" if template_supports_tools(props) else "json_schema"

    def _discard_server(self, *, hard: bool) -> None:
        proc = self.worker._take_server()
        if proc is None:
            return
        if hard:
            proc.kill()  # SIGKILL also ends a SIGSTOPped or wedged server; SIGTERM would not
        else:
            proc.stop(self.config.restart.stop_grace)

    # -- watching -------------------------------------------------------------------------------
    def _monitor(self) -> Optional[Tuple[str, str, bool]]:
        proc = self.worker._server
        assert proc is not None
        reader = ProcessCpuReader(proc.pid) if proc.pid else None
        self._next_health = 0.0
        self._unhealthy_since = None
        while not self.stop_event.wait(self.tick):
            if not proc.is_alive():
                return "server_crashed", self._exit_detail(proc), False
            try:
                problem = self._watch_once(reader)
            except Exception:  # a bug in one check must not end supervision silently
                log.exception("llama.cpp worker supervisor: a check failed; supervision goes on")
                continue
            if problem is not None:
                return problem
        return None

    def _watch_once(self, reader: Optional[ProcessCpuReader]) -> Optional[Tuple[str, str, bool]]:
        """One tick of checks; returns the failure that calls for a restart, if any."""
        cfg = self.config
        t = cfg.timeouts
        now = time.monotonic()
        if reader is not None:
            self.cpu.add(reader(), now)
        problem = self._check_requests(now) or self._check_draining(now)
        if problem is not None:
            return problem
        if now >= self._next_health:
            self._next_health = now + t.health_interval
            if self._probe("/health") == 200:
                self._unhealthy_since = None
                self.worker._mark_healthy()
            else:
                self._unhealthy_since = self._unhealthy_since or now
        since = self._unhealthy_since
        if since is not None and now - since >= t.stall_window:
            rate = self.cpu.rate(t.stall_window, now)
            if rate is not None and rate < t.min_cpu_fraction:
                return "server_unresponsive", f"/health failed for {now - since:.1f}s and the server's CPU is idle", False
        if self._consecutive and now - self._ready_mono >= cfg.restart.stable_after:
            self._consecutive = 0  # a stable server resets the backoff
        return None

    def _check_requests(self, now: float) -> Optional[Tuple[str, str, bool]]:
        t = self.config.timeouts
        for rec in self.worker._inflight():
            if t.absolute is not None and now - rec.created_mono > t.absolute:
                rec.finish(RequestState.FAILED, "absolute_timeout", f"the request ran longer than {t.absolute:g}s")
                continue
            if rec.state is RequestState.TOOL_RUNNING:
                continue  # the server is idle on purpose while a tool runs
            sent = rec.sent_mono
            if rec.awaiting_headers and sent is not None and now - sent > t.headers:
                return "headers_timeout", f"no response headers within {t.headers:g}s; the server is wedged", False
            if rec.streaming:
                verdict = judge_stall(now=now, last_progress_at=rec.last_progress_mono, window=t.stall_window,
                                      cpu=self.cpu, min_cpu_fraction=t.min_cpu_fraction)
                if verdict.stalled:
                    return "server_stalled", verdict.detail, False
        return None

    def _check_draining(self, now: float) -> Optional[Tuple[str, str, bool]]:
        draining = self.worker._draining()
        if not draining:
            return None
        busy = self._busy_slots()
        grace = self.config.restart.cancel_grace
        for slot, since in draining:
            if busy is not None and slot not in busy:
                self.worker._free_slot(slot)
            elif busy is not None and now - since > grace:
                return "slot_stuck", f"server slot {slot} kept working {grace:g}s after its request ended", False
        return None

    def _busy_slots(self) -> Optional[set]:
        """Ids of the server slots that are processing; ``None`` when unknown; empty when not reported."""
        try:
            resp = self.worker.http_client().get(f"{self.worker.url}/slots", timeout=self.config.timeouts.probe)
        except (httpx.HTTPError, RuntimeError):
            return None
        if resp.status_code != 200:
            return set()  # /slots disabled: nothing to confirm
        try:
            return {s.get("id") for s in resp.json() if isinstance(s, dict) and s.get("is_processing")}
        except ValueError:
            return set()

    def _probe(self, path: str) -> int:
        try:
            url = self.worker.url
            return self.worker.http_client().get(f"{url}{path}", timeout=self.config.timeouts.probe).status_code
        except (httpx.HTTPError, RuntimeError):
            return 0

    @staticmethod
    def _exit_detail(proc: ServerProcess) -> str:
        tail = proc.log_tail(5).strip()
        return f"the server exited with code {proc.returncode}" + (f"; last output: {tail[-600:]}" if tail else "")
