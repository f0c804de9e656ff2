"""The outcome of one sandboxed run, whatever happened in it."""

from __future__ import annotations

import signal
from typing import Any, Mapping, Optional, Tuple

import attrs

__all__ = ["SandboxResult", "describe_exit"]

_SIGNAL_HINTS = {
    signal.SIGKILL: "killed (SIGKILL)",
    signal.SIGXCPU: "CPU time limit reached (SIGXCPU)",
    signal.SIGXFSZ: "file size limit reached (SIGXFSZ)",
    signal.SIGSEGV: "crashed (SIGSEGV)",
}


def describe_exit(exit_code: Optional[int], timed_out: bool, timeout_s: float) -> str:
    """A short human reason for a failed run ("" when the run succeeded)."""
    if timed_out:
        return f"timed out after {timeout_s:g} s; the process group was killed"
    if exit_code is None or exit_code == 0:
        return ""
    if exit_code < 0:
        try:
            sig = signal.Signals(-exit_code)
        except ValueError:
            return f"killed by signal {-exit_code}"
        return _SIGNAL_HINTS.get(sig, f"killed by {sig.name}")
    return f"exit code {exit_code}"


@attrs.frozen
class SandboxResult:
    """One run: ``ok`` is true only for exit code 0 without a timeout.

    ``exit_code`` is negative when a signal ended the process (``-9`` for a kill). ``stdout`` and
    ``stderr`` are decoded as UTF-8 (bad bytes replaced) and capped; ``truncated`` says the cap cut one of
    them. ``error`` is a short reason when ``ok`` is false. ``duration_s`` is wall-clock time.
    """

    ok: bool
    exit_code: Optional[int]
    stdout: str = ""
    stderr: str = ""
    truncated: bool = False
    timed_out: bool = False
    duration_s: float = 0.0
    error: str = ""

    def to_text(self) -> str:
        """What a model sees: stdout, then stderr, then the reason of a failure, each only when present."""
        parts = []
        if self.stdout:
            parts.append(self.stdout.rstrip("\n"))
        if self.stderr:
            parts.append("[stderr]\n" + self.stderr.rstrip("\n"))
        if self.truncated:
            parts.append("[output truncated]")
        if not self.ok:
            parts.append(f"[error: {self.error or 'failed'}]")
        return "\n".join(parts) if parts else "[no output]"

    def to_dict(self) -> dict[str, Any]:
        """A plain JSON-ready dict (the container entry point's answer has the same keys)."""
        return attrs.asdict(self)

    @classmethod
    def from_dict(cls, data: Any) -> SandboxResult:
        """Read a result from the container entry point's answer; unknown keys are ignored, a missing or
        mistyped one is a :class:`ValueError`."""
        if not isinstance(data, Mapping):
            raise ValueError("a sandbox result must be a JSON object")
        for name, types in _FIELD_TYPES.items():
            value = data.get(name)
            if (isinstance(value, bool) and bool not in types) or not isinstance(value, types):
                raise ValueError(f"sandbox result field {name!r} has the wrong type")
        return cls(
            ok=data["ok"],
            exit_code=data["exit_code"],
            stdout=data["stdout"],
            stderr=data["stderr"],
            truncated=data["truncated"],
            timed_out=data["timed_out"],
            duration_s=float(data["duration_s"]),
            error=data["error"],
        )


_FIELD_TYPES: Mapping[str, Tuple[type, ...]] = {
    "ok": (bool,),
    "exit_code": (int, type(None)),
    "stdout": (str,),
    "stderr": (str,),
    "truncated": (bool,),
    "timed_out": (bool,),
    "duration_s": (int, float),
    "error": (str,),
}
