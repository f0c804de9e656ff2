"""Run one child process in its own session with a wall-clock timeout, a process-group kill and capped output.

This is the part the process sandbox and the container runner share. The child is started with
``start_new_session=True``, so it leads a new process group; when it exits, or when the timeout passes,
the whole group is killed with ``SIGKILL``, so nothing it started keeps running (a process that calls
``setsid`` itself leaves the group and is out of reach; the docs say so). stdin is written and stdout and
stderr are read through one selector, incrementally: at most ``max_output_bytes`` of each is kept, the
rest is read and dropped, so a child that prints forever costs no memory and cannot block on a full pipe.
"""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import time
from typing import IO, Callable, Dict, List, Mapping, Optional, Sequence

import attrs

__all__ = ["ProcessOutcome", "kill_group", "leader_exited", "memory_fd", "run_process"]

_CHUNK = 65536
_DRAIN_AFTER_KILL_S = 1.0
_POLL_S = 0.05  # only where pidfd_open is missing (not Linux)


@attrs.frozen
class ProcessOutcome:
    """The raw outcome: ``exit_code`` as ``Popen.returncode`` (negative for a signal)."""

    exit_code: int
    stdout: bytes
    stderr: bytes
    truncated: bool
    timed_out: bool
    duration_s: float


class _CappedBuffer:
    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.data = bytearray()
        self.dropped = False

    def feed(self, chunk: bytes) -> None:
        room = self.cap - len(self.data)
        if room > 0:
            self.data += chunk[:room]
        if len(chunk) > max(room, 0):
            self.dropped = True


def memory_fd(name: str, data: bytes) -> int:
    """A new descriptor (Linux ``memfd``) holding ``data`` from its start, for a child to read by number (the
    jail's seccomp program, its bootstrap script); the caller closes it once the child has started."""
    fd = os.memfd_create(name, os.MFD_CLOEXEC)
    try:
        os.write(fd, data)
        os.lseek(fd, 0, os.SEEK_SET)
    except OSError:
        os.close(fd)
        raise
    return fd


def leader_exited(pid: int) -> bool:
    """True once the child has exited, without reaping it: an unreaped leader keeps its process-group id
    reserved, so the group kill that follows cannot hit a recycled id."""
    try:
        info = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return True
    return info is not None


def kill_group(pgid: int) -> None:
    """``SIGKILL`` every process of the group; a group that is already gone is fine."""
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def run_process(
    argv: Sequence[str],
    *,
    stdin_data: bytes,
    env: Mapping[str, str],
    cwd: Optional[str],
    timeout_s: float,
    max_output_bytes: int,
    on_timeout: Optional[Callable[[], None]] = None,
    on_start: Optional[Callable[[int], None]] = None,
    pass_fds: Sequence[int] = (),
) -> ProcessOutcome:
    """Run ``argv``, feed it ``stdin_data``, and return what it printed and how it ended.

    ``on_timeout`` runs before the group is killed when the timeout passes (the container runner uses it
    to stop the container, which is not in the client's process group). ``on_start`` receives the child's
    pid (also its process-group id) as soon as it runs, so a caller on another thread can stop it early.
    ``pass_fds`` are descriptors the child inherits (the jail's seccomp program).
    """
    start = time.monotonic()
    deadline = start + timeout_s
    proc = subprocess.Popen(
        list(argv),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=dict(env),
        cwd=cwd,
        start_new_session=True,
        close_fds=True,
        pass_fds=tuple(pass_fds),
    )
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    if on_start is not None:
        on_start(proc.pid)
    out, err = _CappedBuffer(max_output_bytes), _CappedBuffer(max_output_bytes)
    buffers: Dict[int, _CappedBuffer] = {proc.stdout.fileno(): out, proc.stderr.fileno(): err}
    timed_out = False
    pidfd = _open_pidfd(proc.pid)
    try:
        with selectors.DefaultSelector() as sel:
            _register(sel, proc, stdin_data, pidfd)
            pending = memoryview(stdin_data)
            while True:
                if pidfd is None and leader_exited(proc.pid):
                    break
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    timed_out = True
                    break
                exited = False
                for key, _ in sel.select(remaining if pidfd is not None else min(remaining, _POLL_S)):
                    if key.fd == pidfd:
                        exited = True
                    elif key.fileobj is proc.stdin:
                        pending = _write_some(sel, proc.stdin, pending)
                    else:
                        _read_some(sel, key.fd, buffers[key.fd])
                if exited:
                    break
            if timed_out and on_timeout is not None:
                on_timeout()
            kill_group(proc.pid)
            for fd in _registered_fds(sel):
                if fd not in buffers:
                    sel.unregister(fd)
            _drain(sel, buffers)
    finally:
        if pidfd is not None:
            os.close(pidfd)
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            _close_quietly(stream)
        proc.wait()
    return ProcessOutcome(
        exit_code=proc.returncode,
        stdout=bytes(out.data),
        stderr=bytes(err.data),
        truncated=out.dropped or err.dropped,
        timed_out=timed_out,
        duration_s=time.monotonic() - start,
    )


def _open_pidfd(pid: int) -> Optional[int]:
    opener = getattr(os, "pidfd_open", None)
    if opener is None:
        return None
    try:
        fd: int = opener(pid)
    except OSError:
        return None
    return fd


def _register(sel: selectors.BaseSelector, proc: subprocess.Popen[bytes], data: bytes, pidfd: Optional[int]) -> None:
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    sel.register(proc.stdout, selectors.EVENT_READ)
    sel.register(proc.stderr, selectors.EVENT_READ)
    if pidfd is not None:
        sel.register(pidfd, selectors.EVENT_READ)
    if data:
        os.set_blocking(proc.stdin.fileno(), False)
        sel.register(proc.stdin, selectors.EVENT_WRITE)
    else:
        _close_quietly(proc.stdin)


def _write_some(sel: selectors.BaseSelector, stdin: IO[bytes], pending: memoryview) -> memoryview:
    try:
        written = os.write(stdin.fileno(), pending[:_CHUNK])
    except BlockingIOError:
        return pending
    except (BrokenPipeError, OSError):
        written = len(pending)  # the child stopped reading; what it did not take is dropped
    pending = pending[written:]
    if not pending:
        sel.unregister(stdin)
        _close_quietly(stdin)
    return pending


def _read_some(sel: selectors.BaseSelector, fd: int, buffer: _CappedBuffer) -> None:
    try:
        chunk = os.read(fd, _CHUNK)
    except BlockingIOError:
        return
    except OSError:
        chunk = b""
    if chunk:
        buffer.feed(chunk)
    else:
        sel.unregister(fd)


def _has_readers(sel: selectors.BaseSelector, buffers: Dict[int, _CappedBuffer]) -> bool:
    return any(fd in buffers for fd in _registered_fds(sel))


def _registered_fds(sel: selectors.BaseSelector) -> List[int]:
    return [key.fd for key in sel.get_map().values()]


def _drain(sel: selectors.BaseSelector, buffers: Dict[int, _CappedBuffer]) -> None:
    """After the kill: read what is left in the pipes until they close (bounded in time)."""
    end = time.monotonic() + _DRAIN_AFTER_KILL_S
    while _has_readers(sel, buffers):
        remaining = end - time.monotonic()
        if remaining <= 0:
            return
        for key, _ in sel.select(remaining):
            if key.fd in buffers:
                _read_some(sel, key.fd, buffers[key.fd])


def _close_quietly(stream: Optional[IO[bytes]]) -> None:
    if stream is None:
        return
    try:
        stream.close()
    except OSError:
        pass
