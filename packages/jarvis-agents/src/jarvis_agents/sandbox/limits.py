"""The limits a sandboxed run gets: one immutable value shared by the process sandbox and the containers."""

from __future__ import annotations

import math
from typing import Any, Optional

import attrs

from jarvis_agents.sandbox.errors import SandboxLimitError

__all__ = ["SandboxLimits"]

MiB = 1024 * 1024


def _positive(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is None and attribute.name == "cpu_seconds":
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise SandboxLimitError(f"sandbox limit {attribute.name} must be a positive number, got {value!r}")


@attrs.frozen
class SandboxLimits:
    """What one run may use.

    ``timeout_s`` is wall-clock time: when it passes, the whole process group is killed. ``cpu_seconds`` is
    the CPU-time limit (``RLIMIT_CPU``); unset, it is the timeout rounded up plus one second, so a busy loop
    is stopped by the wall clock first and by the kernel if the wall clock ever fails. ``memory_bytes`` is
    the address space (``RLIMIT_AS``), ``file_size_bytes`` the largest file the code may write
    (``RLIMIT_FSIZE``), ``max_processes`` how many processes and threads the code may add
    (``RLIMIT_NPROC``, counted above what the sandbox user already runs), ``open_files`` the descriptor
    limit (``RLIMIT_NOFILE``), ``max_output_bytes`` how much of stdout and of stderr is kept (the rest is
    read and dropped, and the result says ``truncated``).
    """

    timeout_s: float = attrs.field(default=30.0, validator=_positive)
    cpu_seconds: Optional[int] = attrs.field(default=None, validator=_positive)
    memory_bytes: int = attrs.field(default=1024 * MiB, validator=_positive)
    file_size_bytes: int = attrs.field(default=64 * MiB, validator=_positive)
    max_processes: int = attrs.field(default=32, validator=_positive)
    open_files: int = attrs.field(default=256, validator=_positive)
    max_output_bytes: int = attrs.field(default=100_000, validator=_positive)

    @property
    def effective_cpu_seconds(self) -> int:
        """``cpu_seconds``, or the timeout rounded up plus one second when it is unset."""
        if self.cpu_seconds is not None:
            return math.ceil(self.cpu_seconds)
        return math.ceil(self.timeout_s) + 1

    def with_timeout(self, timeout_s: Optional[float]) -> SandboxLimits:
        """These limits with another wall-clock timeout (``None`` keeps the current one)."""
        return self if timeout_s is None else attrs.evolve(self, timeout_s=timeout_s)
