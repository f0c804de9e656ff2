"""Is the server working or stuck? CPU time (read with psutil) plus stream progress; can its model load?

A request is *stalled* only when both signals are flat for the whole stall window: no stream bytes arrived
**and** the server process used less than ``min_cpu_fraction`` of one core. Either signal alone is not
enough: a long prefill sends nothing for minutes while burning CPU, and a server whose CPU is idle may
still be streaming a slow reply. A SIGSTOPped or deadlocked server shows neither, and is caught.

Without enough CPU history to cover the window the verdict is "not stalled" (unknown is never dead).
"""

from __future__ import annotations

import collections
import time
from typing import Callable, Deque, Optional, Tuple

import attrs

__all__ = ["CpuHistory", "ProcessCpuReader", "StallVerdict", "judge_stall", "load_failure"]

#: Words of llama.cpp's log that mean the model file itself is unusable (no restart can fix it).
_LOAD_FAILURE_WORDS = ("invalid magic", "failed to read", "failed to load model", "error loading model",
                       "unable to load model", "not a gguf", "unknown model architecture")


def load_failure(log_tail: str) -> Optional[str]:
    """The server's own line saying the model file cannot be loaded, or ``None`` (a start that failed for
    that reason fails again: the server is given up at once instead of being relaunched)."""
    for line in log_tail.splitlines():
        low = line.lower()
        if any(word in low for word in _LOAD_FAILURE_WORDS):
            return " ".join(line.split())[:300]
    return None


class ProcessCpuReader:
    """Reads user + system CPU seconds of one process with psutil; ``None`` once it is gone.

    The process is identified by pid *and* creation time, so a recycled pid never passes for the server.
    """

    def __init__(self, pid: int) -> None:
        import psutil  # runtime dependency; imported here so importing the worker stays light

        self._psutil = psutil
        self.pid = pid
        try:
            self._proc: Optional[psutil.Process] = psutil.Process(pid)
        except psutil.Error:
            self._proc = None

    def __call__(self) -> Optional[float]:
        proc = self._proc
        if proc is None:
            return None
        try:
            if not proc.is_running():  # compares the creation time: catches pid reuse
                return None
            t = proc.cpu_times()
        except self._psutil.Error:
            return None
        return float(t.user + t.system)


class CpuHistory:
    """Recent ``(time, cpu_seconds)`` samples of the server, enough to look back over a window."""

    def __init__(self, horizon: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.horizon = horizon
        self._clock = clock
        self._samples: Deque[Tuple[float, float]] = collections.deque()

    def add(self, cpu: Optional[float], now: Optional[float] = None) -> None:
        """Record one reading (``None`` readings, from a vanished process, are ignored)."""
        if cpu is None:
            return
        now = self._clock() if now is None else now
        self._samples.append((now, cpu))
        # keep exactly one sample older than the horizon, as the baseline for the oldest window
        while len(self._samples) >= 2 and self._samples[1][0] <= now - self.horizon:
            self._samples.popleft()

    def clear(self) -> None:
        self._samples.clear()

    def rate(self, window: float, now: Optional[float] = None) -> Optional[float]:
        """CPU seconds used per wall second over (at least) the last ``window`` seconds; ``None`` when the
        history does not reach back that far yet."""
        if not self._samples:
            return None
        now = self._clock() if now is None else now
        start = now - window
        base = None
        for sample in self._samples:
            if sample[0] <= start:
                base = sample
            else:
                break
        if base is None:
            return None
        last = self._samples[-1]
        elapsed = last[0] - base[0]
        if elapsed <= 0:
            return None
        return max(0.0, last[1] - base[1]) / elapsed


@attrs.frozen
class StallVerdict:
    """``stalled`` and the facts behind it: seconds of stream silence and the CPU rate over the window."""

    stalled: bool
    silent_for: float
    cpu_rate: Optional[float]

    @property
    def detail(self) -> str:
        rate = "unknown" if self.cpu_rate is None else f"{self.cpu_rate * 100:.1f}% of a core"
        return f"no stream bytes for {self.silent_for:.1f}s and server CPU {rate}"


def judge_stall(
    *,
    now: float,
    last_progress_at: float,
    window: float,
    cpu: CpuHistory,
    min_cpu_fraction: float,
) -> StallVerdict:
    """The stall verdict for one running request (``now`` and ``last_progress_at`` on the clock of ``cpu``)."""
    silent_for = max(0.0, now - last_progress_at)
    if silent_for < window:
        return StallVerdict(False, silent_for, None)
    rate = cpu.rate(window, now)
    stalled = rate is not None and rate < min_cpu_fraction
    return StallVerdict(stalled, silent_for, rate)
