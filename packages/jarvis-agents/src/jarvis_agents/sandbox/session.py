"""A conversation with a running container: JSON lines both ways, under one deadline.

Used by :class:`~jarvis_agents.sandbox.agent.SandboxedAgent`, whose agent runs in the container and asks
the host for every model call. The container's stderr is drained in a thread into a capped buffer; a
timer kills the container (by name, and the client's process group) when the deadline passes, which ends
any read in progress.
"""

from __future__ import annotations

import json
import subprocess
import threading
import time
from typing import Any, Callable, Dict, Mapping, Optional, Sequence

from jarvis_agents.sandbox.errors import ContainerRuntimeError
from jarvis_agents.sandbox.process import kill_group, leader_exited

__all__ = ["ContainerSession"]

_MAX_LINE = 64 * 1024 * 1024
_STDERR_CAP = 64 * 1024
_EXIT_WAIT_S = 2.0


def _exits_soon(pid: int) -> bool:
    deadline = time.monotonic() + _EXIT_WAIT_S
    while not leader_exited(pid):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.02)
    return True


class ContainerSession:
    """A started container client. ``send`` writes one line; ``receive`` reads one (``None`` at the end).

    Use it as a context manager: leaving it kills what is left and reaps the client.
    """

    def __init__(self, argv: Sequence[str], *, timeout_s: float, on_timeout: Callable[[], None]) -> None:
        self.proc = subprocess.Popen(
            list(argv), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            start_new_session=True, close_fds=True,
        )
        self.timed_out = False
        self._stderr = bytearray()
        self._drainer = threading.Thread(target=self._drain_stderr, daemon=True, name="sandbox-stderr")
        self._drainer.start()
        self._on_timeout = on_timeout
        self._timer = threading.Timer(timeout_s, self._expire)
        self._timer.daemon = True
        self._timer.start()

    def _drain_stderr(self) -> None:
        assert self.proc.stderr is not None
        for chunk in iter(lambda: self.proc.stderr.read(65536), b""):  # type: ignore[union-attr]
            room = _STDERR_CAP - len(self._stderr)
            if room > 0:
                self._stderr += chunk[:room]

    def _expire(self) -> None:
        self.timed_out = True
        try:
            self._on_timeout()
        finally:
            kill_group(self.proc.pid)

    @property
    def stderr(self) -> str:
        """What the container wrote to stderr so far (capped)."""
        return bytes(self._stderr).decode("utf-8", "replace")

    def send(self, message: Mapping[str, Any]) -> None:
        """Write one JSON line; :class:`ContainerRuntimeError` when the container is gone."""
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(json.dumps(message).encode("utf-8") + b"\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            raise ContainerRuntimeError(f"the sandbox container stopped reading: {self.stderr[-500:]}") from None

    def receive(self) -> Optional[Dict[str, Any]]:
        """Read one JSON line, or ``None`` when the container closed its output (or was killed)."""
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline(_MAX_LINE)
        if not line:
            return None
        if not line.endswith(b"\n"):
            raise ContainerRuntimeError(f"the sandbox container sent a line longer than {_MAX_LINE} bytes")
        try:
            message = json.loads(line)
        except ValueError:
            raise ContainerRuntimeError("the sandbox container sent something that is not a JSON line") from None
        if not isinstance(message, dict):
            raise ContainerRuntimeError("the sandbox container sent a JSON line that is not an object")
        return message

    def __enter__(self) -> ContainerSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self._timer.cancel()
        if not self.timed_out and not _exits_soon(self.proc.pid):
            self._on_timeout()  # killing the client would leave the container running: stop it by name
        kill_group(self.proc.pid)
        for stream in (self.proc.stdin, self.proc.stdout):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass
        self.proc.wait()
        self._drainer.join(timeout=1.0)
