"""Stall judgement: CPU history plus stream silence, on synthetic samples and on a real busy process."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from jarvis_engine_openai_compat.server.liveness import CpuHistory, ProcessCpuReader, judge_stall


def history(samples, horizon=10.0):
    h = CpuHistory(horizon=horizon, clock=lambda: 0.0)
    for t, cpu in samples:
        h.add(cpu, now=t)
    return h


def test_silence_shorter_than_the_window_is_never_a_stall():
    h = history([(0, 0.0), (1, 0.0), (2, 0.0)])
    verdict = judge_stall(now=2.0, last_progress_at=1.5, window=1.0, cpu=h, min_cpu_fraction=0.05)
    assert not verdict.stalled


def test_silence_with_flat_cpu_is_a_stall():
    h = history([(t, 3.0) for t in range(0, 6)])
    verdict = judge_stall(now=5.0, last_progress_at=1.0, window=2.0, cpu=h, min_cpu_fraction=0.05)
    assert verdict.stalled
    assert verdict.cpu_rate == 0.0
    assert "no stream bytes for 4.0s" in verdict.detail


def test_silence_with_busy_cpu_is_prefill_not_a_stall():
    h = history([(t, 0.9 * t) for t in range(0, 6)])  # 90% of a core: a prefill
    verdict = judge_stall(now=5.0, last_progress_at=0.0, window=2.0, cpu=h, min_cpu_fraction=0.05)
    assert not verdict.stalled
    assert verdict.cpu_rate == pytest.approx(0.9)


def test_cpu_that_stopped_moving_within_the_window_counts():
    # busy until t=2, then frozen (SIGSTOP); with a 2 s window the verdict flips once t >= 4
    samples = [(t / 2, min(t / 2, 2.0)) for t in range(0, 13)]
    h = history(samples)
    assert not judge_stall(now=3.0, last_progress_at=0.0, window=2.0, cpu=h, min_cpu_fraction=0.05).stalled
    assert judge_stall(now=6.0, last_progress_at=0.0, window=2.0, cpu=h, min_cpu_fraction=0.05).stalled


def test_not_enough_history_is_unknown_not_stalled():
    h = history([(4.0, 1.0), (5.0, 1.0)])
    verdict = judge_stall(now=5.0, last_progress_at=0.0, window=3.0, cpu=h, min_cpu_fraction=0.05)
    assert not verdict.stalled
    assert verdict.cpu_rate is None


def test_history_keeps_one_baseline_sample_beyond_the_horizon():
    h = CpuHistory(horizon=2.0)
    for t in range(100):
        h.add(float(t), now=float(t))
    assert len(h._samples) <= 4
    assert h.rate(2.0, now=99.0) == pytest.approx(1.0)


def test_vanished_process_reads_none():
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    assert ProcessCpuReader(proc.pid)() is None


def test_real_busy_process_is_alive_then_stalled_once_stopped():
    """Real psutil readings: a process burning CPU with no "stream" is not stalled; SIGSTOPped, it is."""
    spin = subprocess.Popen([sys.executable, "-c", "import time\nend = time.time() + 60\nwhile time.time() < end: pass"])
    try:
        reader = ProcessCpuReader(spin.pid)
        cpu = CpuHistory(horizon=5.0)
        window = 1.0
        start = time.monotonic()
        verdicts = []
        deadline = start + 30
        while time.monotonic() < deadline and len(verdicts) < 5:
            now = time.monotonic()
            cpu.add(reader(), now)
            if now - start > window:
                verdicts.append(judge_stall(now=now, last_progress_at=start, window=window, cpu=cpu,
                                            min_cpu_fraction=0.05))
            time.sleep(0.1)
        assert verdicts and not any(v.stalled for v in verdicts), verdicts  # silent but burning CPU: prefill

        os.kill(spin.pid, signal.SIGSTOP)
        stopped = time.monotonic()
        stalled = None
        while time.monotonic() < stopped + 30:
            now = time.monotonic()
            cpu.add(reader(), now)
            verdict = judge_stall(now=now, last_progress_at=start, window=window, cpu=cpu, min_cpu_fraction=0.05)
            if verdict.stalled:
                stalled = verdict
                break
            time.sleep(0.1)
        assert stalled is not None, "a SIGSTOPped process was never judged stalled"
        assert stalled.cpu_rate is not None and stalled.cpu_rate < 0.05
    finally:
        spin.kill()
        spin.wait()
