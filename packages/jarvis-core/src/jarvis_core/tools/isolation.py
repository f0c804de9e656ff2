"""Running one tool call under its isolation and timeout: ``inline``, ``thread`` or ``process``.

No shared pool: a ``thread`` call runs on one of its executor's own :class:`Workers`, an idle one when
there is one, else a new daemon thread, so calls that time out (Python cannot stop a thread) never
starve later calls. The executor counts those still-running threads and refuses new
calls past a per-executor limit, which it reports. A ``process`` call runs in a child in its own session;
on timeout the whole process group is killed, so nothing the tool started survives it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import pickle
import queue
import signal
import subprocess
import sys
import threading
import time
from typing import Any, Awaitable, Callable, Dict, Optional

import attrs

from jarvis_core.tools.base import has_async_run, has_sync_run
from jarvis_core.tools.output import to_text

__all__ = ["Outcome", "Workers", "arun_tool", "run_tool"]

log = logging.getLogger(__name__)


@attrs.frozen
class Outcome:
    """What running a tool gave: ``status`` is ``ok``, ``error`` or ``timeout``; ``text`` the output (ok)
    or the error message; ``error_type`` the exception's type name (error)."""

    status: str
    text: str = ""
    error_type: str = ""
    #: True when a ``thread`` call timed out and its thread is still running.
    abandoned: bool = False


def _error(exc: BaseException) -> Outcome:
    return Outcome("error", str(exc), type(exc).__name__)


def _call(tool: Any, arguments: Dict[str, Any]) -> Outcome:
    try:
        if has_sync_run(tool):
            return Outcome("ok", to_text(tool.run(**arguments)))
        return Outcome("ok", to_text(asyncio.run(tool.arun(**arguments))))
    except BaseException as exc:
        return _error(exc)


def _timeout(timeout: Optional[float]) -> Outcome:
    return Outcome("timeout", f"timed out after {timeout:g}s")


class Workers:
    """An executor's own threads for ``thread`` calls: idle threads are reused, and when none is idle a new
    daemon thread starts, so a call never waits behind calls that hang. Threads idle for ``idle_s`` exit.

    This is not a shared pool: each :class:`~jarvis_core.tools.ToolExecutor` has one, and the executor
    limits how many timed-out calls may still occupy threads.
    """

    def __init__(self, name: str = "tool", idle_s: float = 30.0) -> None:
        self.name = name
        self.idle_s = idle_s
        self._tasks: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._idle = 0
        self._threads = 0

    @property
    def threads(self) -> int:
        """Threads alive now (busy or idle)."""
        with self._lock:
            return self._threads

    def submit(self, fn: Callable[[], Any], then: Callable[[], None] = lambda: None) -> None:
        """Run ``fn`` on an idle thread, or on a new one when all are busy; then ``then``, once the thread
        counts as idle again (so a caller woken by ``then`` finds it reusable)."""
        with self._lock:
            self._tasks.put((fn, then))
            if self._idle > 0:
                self._idle -= 1
                return
            self._threads += 1
        threading.Thread(target=self._work, name=f"{self.name}-worker", daemon=True).start()

    def _work(self) -> None:
        while True:
            try:
                fn, then = self._tasks.get(timeout=self.idle_s)
            except queue.Empty:
                with self._lock:
                    if self._tasks.empty():
                        self._idle -= 1
                        self._threads -= 1
                        return
                continue
            try:
                fn()
            except BaseException:  # pragma: no cover - tasks catch their own errors
                log.exception("tool worker task failed")
            with self._lock:
                self._idle += 1
            then()


def _submit(workers: Workers, fn: Callable[[], Outcome], on_done: Callable[[], None]) -> tuple[Any, ...]:
    box: list[Any] = []
    done = threading.Event()

    def task() -> None:
        try:
            box.append(fn())
        except BaseException as exc:
            box.append(_error(exc))

    def finished() -> None:
        done.set()
        on_done()

    workers.submit(task, finished)
    return box, done


def run_tool(tool: Any, arguments: Dict[str, Any], *, isolation: str, timeout: Optional[float], workers: Workers,
             on_thread_done: Callable[[], None] = lambda: None) -> Outcome:
    """Run one call synchronously under ``isolation`` and ``timeout``. Never raises for tool failures.

    ``on_thread_done`` is called when a ``thread`` call ends (also long after a timeout).
    """
    if isolation == "process":
        return _run_in_process(tool, arguments, timeout)
    if isolation == "inline":
        return _call(tool, arguments)
    box, done = _submit(workers, lambda: _call(tool, arguments), on_thread_done)
    if not done.wait(timeout):
        return attrs.evolve(_timeout(timeout), abandoned=True)
    outcome: Outcome = box[0]
    return outcome


async def arun_tool(tool: Any, arguments: Dict[str, Any], *, isolation: str, timeout: Optional[float],
                    workers: Workers, on_thread_done: Callable[[], None] = lambda: None) -> Outcome:
    """Async twin of :func:`run_tool`. An async ``arun`` runs on the caller's loop and is cancelled on
    timeout (unless isolation is ``process``); sync tools never run on the loop: they get a worker thread."""
    if isolation != "process" and has_async_run(tool) and (isolation != "thread" or not has_sync_run(tool)):
        try:
            value = await asyncio.wait_for(tool.arun(**arguments), timeout)
        except asyncio.TimeoutError:
            return _timeout(timeout)
        except Exception as exc:
            return _error(exc)
        return Outcome("ok", to_text(value))
    if isolation == "inline":
        return _call(tool, arguments)
    loop = asyncio.get_running_loop()
    future: asyncio.Future[Outcome] = loop.create_future()

    def deliver(outcome: Outcome) -> None:
        if not future.done():
            future.set_result(outcome)

    def body() -> Outcome:
        return _run_in_process(tool, arguments, timeout) if isolation == "process" else _call(tool, arguments)

    box: list[Any] = []

    def finished() -> None:
        with contextlib.suppress(RuntimeError):  # the loop may be gone: the caller gave up (timeout, cancel)
            loop.call_soon_threadsafe(deliver, box[0])
        if isolation == "thread":
            on_thread_done()

    def task() -> None:
        try:
            box.append(body())
        except BaseException as exc:  # e.g. the child process could not start: still deliver an outcome
            box.append(_error(exc))

    workers.submit(task, finished)
    if isolation == "process":
        return await future  # the child enforces the timeout itself
    try:
        return await asyncio.wait_for(_shielded(future), timeout)
    except asyncio.TimeoutError:
        return attrs.evolve(_timeout(timeout), abandoned=True)


def _shielded(future: asyncio.Future[Outcome]) -> Awaitable[Outcome]:
    return asyncio.shield(future)


def _run_in_process(tool: Any, arguments: Dict[str, Any], timeout: Optional[float]) -> Outcome:
    try:
        payload = pickle.dumps(list(sys.path)) + pickle.dumps((tool, arguments))
    except Exception as exc:
        return Outcome("error", f"a process-isolated tool must be picklable: {exc}", type(exc).__name__)
    started = time.monotonic()
    with subprocess.Popen(
        [sys.executable, "-m", "jarvis_core.tools._child"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        start_new_session=True,
    ) as proc:
        try:
            out, _ = proc.communicate(payload, timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            return _timeout(timeout)
        finally:
            _kill_group(proc)  # on any exit: whatever the tool left running in its group goes too
    try:
        status, error_type, text = pickle.loads(out)
    except Exception:
        code = proc.returncode
        why = f"signal {-code}" if code is not None and code < 0 else f"exit status {code}"
        return Outcome("error", f"the tool's process ended without a result ({why}, "
                                f"after {time.monotonic() - started:.2f}s)", "ProcessError")
    return Outcome(status, text, error_type)


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    if proc.poll() is None:
        proc.wait()
