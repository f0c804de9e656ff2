"""Running one tool call under its isolation and timeout: ``inline``, ``thread`` or ``process``.

No shared pool: a ``thread`` call gets its own daemon thread, so calls that time out (Python cannot stop
a thread) never starve later calls. The executor counts those still-running threads and refuses new
calls past a per-executor limit, which it reports. A ``process`` call runs in a child in its own session;
on timeout the whole process group is killed, so nothing the tool started survives it.
"""

from __future__ import annotations

import asyncio
import os
import pickle
import signal
import subprocess
import sys
import threading
import time
from typing import Any, Awaitable, Callable, Dict, Optional

import attrs

from jarvis_core.tools.base import has_async_run, has_sync_run
from jarvis_core.tools.output import to_text

__all__ = ["Outcome", "arun_tool", "run_tool"]


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


def _in_daemon_thread(fn: Callable[[], Outcome], name: str, on_done: Callable[[], None]) -> tuple:
    box: list = []
    done = threading.Event()

    def target() -> None:
        try:
            box.append(fn())
        finally:
            done.set()
            on_done()

    threading.Thread(target=target, name=name, daemon=True).start()
    return box, done


def run_tool(tool: Any, arguments: Dict[str, Any], *, isolation: str, timeout: Optional[float],
             on_thread_done: Callable[[], None] = lambda: None) -> Outcome:
    """Run one call synchronously under ``isolation`` and ``timeout``. Never raises for tool failures.

    ``on_thread_done`` is called when a ``thread`` call's thread ends (also long after a timeout).
    """
    if isolation == "process":
        return _run_in_process(tool, arguments, timeout)
    if isolation == "inline":
        return _call(tool, arguments)
    box, done = _in_daemon_thread(lambda: _call(tool, arguments), f"tool-{tool.spec.name}", on_thread_done)
    if not done.wait(timeout):
        return attrs.evolve(_timeout(timeout), abandoned=True)
    return box[0]


async def arun_tool(tool: Any, arguments: Dict[str, Any], *, isolation: str, timeout: Optional[float],
                    on_thread_done: Callable[[], None] = lambda: None) -> Outcome:
    """Async twin of :func:`run_tool`. An async ``arun`` runs on the caller's loop and is cancelled on
    timeout (unless isolation is ``process``); sync tools never run on the loop: they get their thread."""
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
    future: asyncio.Future = loop.create_future()

    def deliver(outcome: Outcome) -> None:
        if not future.done():
            future.set_result(outcome)

    def body() -> Outcome:
        outcome = _run_in_process(tool, arguments, timeout) if isolation == "process" else _call(tool, arguments)
        loop.call_soon_threadsafe(deliver, outcome)
        return outcome

    done_cb = on_thread_done if isolation == "thread" else (lambda: None)
    _in_daemon_thread(body, f"tool-{tool.spec.name}", done_cb)
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
        payload = pickle.dumps((tool, arguments))
    except Exception as exc:
        return Outcome("error", f"a process-isolated tool must be picklable: {exc}", type(exc).__name__)
    proc = subprocess.Popen(
        [sys.executable, "-m", "jarvis_core.tools._child"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    started = time.monotonic()
    try:
        out, _ = proc.communicate(payload, timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        return _timeout(timeout)
    except BaseException:
        _kill_group(proc)
        raise
    finally:
        _kill_group(proc)  # whatever the tool left behind in its group
    try:
        status, error_type, text = pickle.loads(out)
    except Exception:
        code = proc.returncode
        why = f"signal {-code}" if code is not None and code < 0 else f"exit status {code}"
        return Outcome("error", f"the tool's process ended without a result ({why}, "
                                f"after {time.monotonic() - started:.2f}s)", "ProcessError")
    return Outcome(status, text, error_type)


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    if proc.poll() is None:
        proc.wait()
