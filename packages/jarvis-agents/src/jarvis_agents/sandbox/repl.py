"""``PythonRepl``: a persistent Python REPL in the sandbox, one child process for many cells.

The child is started exactly as a :class:`~jarvis_agents.sandbox.PythonSandbox` run (``python -I -S`` on
the bootstrap, the clean environment, a fresh 0700 working directory, the resource limits, a uid of the
run's own when jarvis runs as root, its own session), but instead of one code string it runs
:mod:`~jarvis_agents.sandbox.repl_child`, which keeps one namespace and reads cells in a loop. The two
talk in JSON lines over two pipes of their own (not stdin/stdout), so nothing the code prints can corrupt
the exchange.

- **Calls back to the parent.** Code in a cell may call ``llm_query``, ``llm_batch`` and ``tool_call``
  (those named in ``functions``); each becomes a request to the parent, which awaits ``handler(fn, args)``
  and answers. The cell blocks meanwhile. An exception of the handler becomes a ``RuntimeError`` in the
  cell.
- **Time.** ``cell_timeout_s`` is the wall-clock time a cell may run, the time the parent spends answering
  its calls included (so a cell cannot buy itself more time by calling). At the limit a call still being
  answered is cancelled and the child is killed. ``RLIMIT_CPU`` covers the whole REPL: the sandbox limits' ``cpu_seconds``, else ten
  times the cell timeout.
- **Failures.** An exception in a cell (``exit()`` included) is a failed :class:`CellResult` and the REPL
  goes on. A timeout, a crash or a limit ends the child: the result says ``lost=True``, and the next cell
  starts a fresh child (its ``variables`` defined again, everything else gone).
- **Clean-up.** :meth:`PythonRepl.close` kills the child at once and never blocks: in the jail the child
  is the first process of its own PID namespace, so every process the code started (``setsid`` and
  double-forked ones included) dies with it; the reaping, the draining of its pipes, the removal of the
  working directory and the release of the run's uid happen on a thread. It is idempotent, so it is safe in a ``finally``.
  :meth:`PythonRepl.aclose` (and leaving ``async with``) also awaits that clean-up, off the event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import os
import subprocess
import threading
import time
from pathlib import Path
from typing import Any, Awaitable, Callable, Dict, Mapping, Optional, Sequence, Tuple

import attrs

from jarvis_agents.sandbox.errors import SandboxUnavailableError
from jarvis_agents.sandbox.limits import SandboxLimits
from jarvis_agents.sandbox.process import kill_group
from jarvis_agents.sandbox.python import PythonSandbox, Workspace, child_environment
from jarvis_agents.sandbox.result import describe_exit

__all__ = ["CallHandler", "CellResult", "PythonRepl"]

#: ``handler(fn, args)``: answers a cell's ``llm_query``/``llm_batch``/``tool_call`` with a JSON value.
CallHandler = Callable[[str, Dict[str, Any]], Awaitable[Any]]

_CHILD_SOURCE = Path(__file__).with_name("repl_child.py")
_MAX_LINE = 256 * 1024 * 1024
_LOG_CAP = 16 * 1024
_START_TIMEOUT_S = 60.0
FUNCTIONS = ("llm_query", "llm_batch", "tool_call")


@attrs.frozen
class CellResult:
    """One cell: ``ok`` unless it raised, timed out or ended the REPL.

    ``output`` is what it printed (capped; ``truncated`` says so), ``error`` the traceback or the reason,
    ``final`` the value given to ``FINAL``/``FINAL_VAR`` (``None`` when not called). ``lost`` means the
    REPL process ended and its variables are gone.
    """

    ok: bool
    output: str = ""
    error: str = ""
    truncated: bool = False
    final: Optional[str] = None
    lost: bool = False
    timed_out: bool = False
    duration_s: float = 0.0

    def to_text(self) -> str:
        """What a model reads: the output, then the error, then a note when the REPL was lost."""
        parts = [self.output.rstrip("\n")] if self.output else []
        if self.error:
            parts.append(self.error)
        if self.lost:
            parts.append("[the REPL process ended: every variable is gone; the next code starts a fresh REPL]")
        return "\n".join(parts) if parts else "[no output]"


class PythonRepl:
    """A persistent sandboxed REPL. Use ``async with PythonRepl(...) as repl: await repl.execute(code)``.

    :param sandbox: where the limits, the user and the interpreter come from (default: a new
        :class:`PythonSandbox`).
    :param cell_timeout_s: wall-clock seconds per cell, time spent answering its calls included.
    :param max_output_chars: how much of a cell's printed output is kept.
    :param handler: answers the calls named in ``functions``.
    :param functions: which of ``llm_query``, ``llm_batch``, ``tool_call`` exist in the REPL.
    :param final: define ``FINAL(value)`` and ``FINAL_VAR(name)``, which end a cell with an answer.
    :param variables: JSON values defined in the namespace at every start (``{"context": text}``).
    """

    def __init__(
        self,
        sandbox: Optional[PythonSandbox] = None,
        *,
        cell_timeout_s: float = 30.0,
        max_output_chars: int = 10_000,
        handler: Optional[CallHandler] = None,
        functions: Sequence[str] = (),
        final: bool = False,
        variables: Optional[Mapping[str, Any]] = None,
    ) -> None:
        unknown = sorted(set(functions) - set(FUNCTIONS))
        if unknown:
            raise ValueError(f"unknown REPL functions {unknown}; known: {', '.join(FUNCTIONS)}")
        self.sandbox = sandbox or PythonSandbox()
        limits = self.sandbox.limits
        cpu = limits.cpu_seconds or max(60, 10 * math.ceil(cell_timeout_s))
        self.limits: SandboxLimits = attrs.evolve(limits, timeout_s=cell_timeout_s, cpu_seconds=cpu)
        self.cell_timeout_s = float(cell_timeout_s)
        self.max_output_chars = int(max_output_chars)
        self.handler = handler
        self.functions = tuple(functions)
        self.final = final
        self.variables: Dict[str, Any] = dict(variables or {})
        self.starts = 0
        self._proc: Optional[subprocess.Popen[bytes]] = None
        self._workspace: Optional[Workspace] = None
        self._reader: Optional[asyncio.StreamReader] = None
        self._transports: list[Any] = []
        self._log = bytearray()
        self._drainer: Optional[threading.Thread] = None
        self._reaper: Optional[threading.Thread] = None
        self._ids = 0
        self.pid: Optional[int] = None

    def __repr__(self) -> str:
        return f"<PythonRepl pid={self.pid} starts={self.starts}>"

    @property
    def workspace(self) -> Optional[Workspace]:
        """The running child's work directory (its host ``path``, the ``inside`` path the code sees, its
        user); ``None`` when no child runs."""
        return self._workspace

    @property
    def running(self) -> bool:
        """True while a child process is up."""
        return self._proc is not None

    # -- life cycle ---------------------------------------------------------------------------------
    async def start(self) -> None:
        """Start the child and define ``variables``; :class:`SandboxUnavailableError` when it cannot start."""
        if self._proc is not None:
            return
        loop = asyncio.get_running_loop()
        # the first use may probe the interpreter (and the jail), and leasing a uid reads /proc: off the loop
        workspace = await asyncio.to_thread(self.sandbox.workspace)
        try:
            launch = await asyncio.to_thread(self.sandbox.launch, workspace)
        except BaseException:
            workspace.remove()
            raise
        to_child_r, to_child_w = os.pipe()
        from_child_r, from_child_w = os.pipe()
        settings = {"fds": [to_child_r, from_child_w], "max_output_chars": self.max_output_chars,
                    "functions": list(self.functions), "final": self.final}
        job = self.sandbox.job({"mode": "python", "code": _CHILD_SOURCE.read_text(encoding="utf-8"),
                                "args": [json.dumps(settings)]}, self.limits, workspace)
        try:
            proc = subprocess.Popen(
                launch.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                env=child_environment(workspace.inside), cwd=workspace.path, start_new_session=True, close_fds=True,
                pass_fds=(to_child_r, from_child_w, *launch.fds),
            )
        except OSError as exc:
            for fd in (to_child_r, to_child_w, from_child_r, from_child_w):
                os.close(fd)
            workspace.remove()
            raise SandboxUnavailableError(f"cannot start the sandbox REPL: {exc}") from None
        finally:
            launch.close()
        os.close(to_child_r)
        os.close(from_child_w)
        self._proc, self._workspace, self.pid = proc, workspace, proc.pid
        self.starts += 1
        self._log = bytearray()
        self._drainer = threading.Thread(target=_drain, args=(proc, self._log), daemon=True, name="repl-log")
        self._drainer.start()
        assert proc.stdin is not None
        with contextlib.suppress(OSError):  # a child that died at once is reported below
            proc.stdin.write(job)
        with contextlib.suppress(OSError):
            proc.stdin.close()
        self._reader = asyncio.StreamReader(limit=_MAX_LINE)
        reader = self._reader
        transport, _ = await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader),
                                                    os.fdopen(from_child_r, "rb", buffering=0))
        self._transports.append(transport)
        writer, _ = await loop.connect_write_pipe(asyncio.Protocol, os.fdopen(to_child_w, "wb", buffering=0))
        self._transports.append(writer)
        ready = await self._read(_START_TIMEOUT_S)
        if not isinstance(ready, dict) or ready.get("op") != "ready":
            reason = await self._lose()
            raise SandboxUnavailableError(f"the sandbox REPL did not start ({reason})")
        if self.variables:
            result = await self._roundtrip({"op": "define", "values": self.variables})
            if not result.ok:
                raise SandboxUnavailableError(f"the sandbox REPL could not take its variables: {result.error}")

    def close(self) -> None:
        """Kill the child and everything it started, at once; reaping it and removing the working directory
        go on in a thread (idempotent, never blocks)."""
        ended = self._kill()
        if ended is not None:
            self._reaper = threading.Thread(target=_reap, args=ended, daemon=True, name="repl-reap")
            self._reaper.start()

    async def aclose(self) -> None:
        """:meth:`close`, then await the clean-up off the event loop."""
        self.close()
        reaper = self._reaper
        if reaper is not None:
            await asyncio.to_thread(reaper.join)

    async def __aenter__(self) -> PythonRepl:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # -- cells --------------------------------------------------------------------------------------
    async def execute(self, code: str) -> CellResult:
        """Run one cell (starting the child first if needed) and return what happened."""
        if self._proc is None:
            await self.start()
        return await self._roundtrip({"op": "exec", "code": code})

    async def _roundtrip(self, message: Dict[str, Any]) -> CellResult:
        self._ids += 1
        ident = self._ids
        started = time.monotonic()
        deadline = started + self.cell_timeout_s
        self._send({**message, "id": ident})
        while True:
            try:
                reply = await self._read(deadline - time.monotonic())
                if reply is not None and reply.get("op") == "call":
                    answer = await asyncio.wait_for(self._serve(reply), max(deadline - time.monotonic(), 0.001))
                    self._send(answer)
                    continue
            except asyncio.TimeoutError:
                await self._lose()
                return CellResult(False, error=f"timed out after {self.cell_timeout_s:g} s (its llm_query, llm_batch "
                                  "and tool_call time included); the REPL process was killed", lost=True,
                                  timed_out=True, duration_s=time.monotonic() - started)
            if reply is None:
                reason = await self._lose()
                return CellResult(False, error=f"the REPL process ended: {reason}", lost=True,
                                  duration_s=time.monotonic() - started)
            if reply.get("op") == "done" and reply.get("id") == ident:
                final = reply.get("final")
                return CellResult(
                    ok=bool(reply.get("ok")), output=str(reply.get("output") or ""), error=str(reply.get("error") or ""),
                    truncated=bool(reply.get("truncated")),
                    final=str(final.get("value")) if isinstance(final, dict) else None,
                    duration_s=time.monotonic() - started,
                )

    async def _serve(self, request: Dict[str, Any]) -> Dict[str, Any]:
        fn, args = request.get("fn"), request.get("args")
        answer: Dict[str, Any] = {"op": "reply", "id": request.get("id")}
        if self.handler is None or fn not in self.functions or not isinstance(args, dict):
            return {**answer, "ok": False, "error": f"{fn} is not available in this REPL"}
        try:
            value = await self.handler(str(fn), args)
        except Exception as exc:
            return {**answer, "ok": False, "error": f"{fn} failed: {type(exc).__name__}: {exc}"}
        return {**answer, "ok": True, "value": value}

    # -- the channel --------------------------------------------------------------------------------
    def _send(self, message: Mapping[str, Any]) -> None:
        if len(self._transports) < 2:
            return
        transport = self._transports[1]
        if not transport.is_closing():
            transport.write(json.dumps(message, ensure_ascii=False).encode("utf-8") + b"\n")

    async def _read(self, timeout: float) -> Optional[Dict[str, Any]]:
        """The next message; ``None`` when the child closed the channel (or sent something unreadable)."""
        assert self._reader is not None
        try:
            line = await asyncio.wait_for(self._reader.readline(), max(timeout, 0.001))
        except (ValueError, asyncio.LimitOverrunError):
            return None
        if not line:
            return None
        try:
            message = json.loads(line)
        except ValueError:
            return None
        return message if isinstance(message, dict) else None

    def _kill(self) -> Optional[Tuple[subprocess.Popen[bytes], Optional[threading.Thread], Optional[Workspace], bytearray,
                                      float, Callable[[int], int]]]:
        """Kill the child's process group and close the channel, without waiting for anything; what is left
        to do (see :func:`_reap`) is returned, ``None`` when no child runs."""
        proc, self._proc = self._proc, None
        if proc is None:
            return None
        kill_group(proc.pid)
        for transport in self._transports:
            with contextlib.suppress(Exception):  # the loop may be closed already
                transport.close()
        self._transports = []
        workspace, self._workspace = self._workspace, None
        return proc, self._drainer, workspace, self._log, self.cell_timeout_s, self.sandbox.exit_code

    async def _lose(self) -> str:
        """End the child (see :meth:`_kill`), then reap it off the loop; returns the reason it ended."""
        ended = self._kill()
        if ended is None:
            return "not running"
        return await asyncio.to_thread(_reap, *ended)


def _drain(proc: subprocess.Popen[bytes], log: bytearray) -> None:
    """Keep the start of what the child wrote to its own stdout/stderr (for the reason when it dies).
    This thread alone reads and closes the pipe (closing it under a blocked read would block)."""
    assert proc.stdout is not None
    stream = proc.stdout
    try:
        for chunk in iter(lambda: stream.read(65536), b""):
            room = _LOG_CAP - len(log)
            if room > 0:
                log += chunk[:room]
    except (OSError, ValueError):
        pass
    finally:
        with contextlib.suppress(OSError):
            stream.close()


def _reap(proc: subprocess.Popen[bytes], drainer: Optional[threading.Thread], workspace: Optional[Workspace],
          log: bytearray, timeout_s: float, exit_code: Callable[[int], int]) -> str:
    """Reap the killed child, give its log a moment to arrive, remove the working directory and give the
    run's uid back (blocking)."""
    code = exit_code(proc.wait())
    if drainer is not None:
        # Without the jail a setsid grandchild may hold the pipe: the drainer then ends when it does.
        drainer.join(timeout=1.0)
    if workspace is not None:
        workspace.remove()
    reason = describe_exit(code, False, timeout_s) or "exit code 0"
    text = bytes(log).decode("utf-8", "replace").strip()
    return f"{reason}; it wrote: {text[-1000:]}" if text else reason
