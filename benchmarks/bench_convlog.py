#!/usr/bin/env python
"""The conversation log's cost per ``jarvis ask``: the same command with the log on and with ``--no-log``.

    python benchmarks/bench_convlog.py [--asks 300] [--strict]

Each ask is ``jarvis.cli.main.main(["ask", ...])`` run in this process over a scripted engine registered as a
plugin (an answer of 40 streamed pieces with usage), exactly as the command runs it: the config loaded, the
engine built, the answer streamed to a null stdout and, with the log on, the event bus that gathers usage,
the log opened, the answer written in one transaction with its full-text index, and the log closed. Asks
alternate between the log on and ``--no-log``; the cost per logged answer is the difference of the two
medians, in wall time and in this process's CPU time (the means, also given, include the writes that waited
for a busy disk). The log grows through the run, as a user's does. Budget: at most 2 ms of CPU per logged
answer (on a shared machine a few ms of work take many more ms of wall time, waiting for a core); the wall
time is reported beside it. ``--strict`` exits 1 when it is missed.

Not included, since it is paid once per process and not per answer: importing :mod:`sqlite3` (the second
table measures it in fresh interpreters, against ``python -c pass``).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import statistics
import subprocess
import sys
import tempfile
import time
from typing import List, Optional, Sequence, Tuple

from results import budget, table, write_result

from jarvis_core import hookimpl
from jarvis_core.cli.main import main as jarvis_main
from jarvis_core.testing import FakeEngine, installed_registry
from jarvis_core.types import StreamChunk, Usage

BUDGET_MS = 2.0
PIECES = [f"word{i} " for i in range(40)]


class Scripted(FakeEngine):
    def __init__(self, **options: object) -> None:
        chunks = [*PIECES, StreamChunk(finish_reason="stop", usage=Usage(60, 40))]
        super().__init__(models=("m",), default=chunks)


class Plugin:
    jarvis_plugin_name = "bench-convlog"

    @staticmethod
    @hookimpl
    def jarvis_register_engines(register: object) -> None:
        register("bench", Scripted)  # type: ignore[operator]


def ask(log: bool, sink: io.StringIO) -> Tuple[float, float]:
    """One ``jarvis ask``'s wall time and CPU time (this process's), in ms."""
    args = ["ask", "--engine", "bench", "--model", "m", *([] if log else ["--no-log"]),
            "What is the capital of France, and why?"]
    start, cpu = time.perf_counter(), time.process_time()
    with contextlib.redirect_stdout(sink):
        code = jarvis_main(args)
    elapsed = ((time.perf_counter() - start) * 1000, (time.process_time() - cpu) * 1000)
    if code != 0:
        raise SystemExit("jarvis ask failed")
    sink.seek(0)
    sink.truncate()
    return elapsed


def percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def import_cost(runs: int) -> tuple:
    bare: List[float] = []
    sqlite: List[float] = []
    for _ in range(runs):
        for code, into in (("pass", bare), ("import sqlite3", sqlite)):
            start = time.perf_counter()
            subprocess.run([sys.executable, "-c", code], check=True)
            into.append(time.perf_counter() - start)
    return statistics.median(bare) * 1000, statistics.median(sqlite) * 1000


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--asks", type=int, default=300, help="asks per side, alternating (default 300)")
    ap.add_argument("--dir", default=None, help="where the jarvis home (and the log) is made (default: the temp dir)")
    ap.add_argument("--strict", action="store_true", help="exit 1 when the budget is missed")
    opts = ap.parse_args(argv)

    home = tempfile.mkdtemp(prefix="bench-convlog-", dir=opts.dir)
    for var in ("JARVIS_CONFIG", "JARVIS_NO_LOG", "JARVIS_ENGINE", "JARVIS_LOAD_PLUGINS", "JARVIS_DISABLE_PLUGINS"):
        os.environ.pop(var, None)
    os.environ["JARVIS_HOME"] = home
    on_both: List[Tuple[float, float]] = []
    off_both: List[Tuple[float, float]] = []
    sink = io.StringIO()
    with installed_registry(Plugin()):
        for log in (True, False, True, False):  # warm-up: imports, the log file created
            ask(log, sink)
        for i in range(opts.asks):
            for log in ((True, False) if i % 2 == 0 else (False, True)):
                (on_both if log else off_both).append(ask(log, sink))
    on, off = [w for w, _ in on_both], [w for w, _ in off_both]
    on_cpu, off_cpu = [c for _, c in on_both], [c for _, c in off_both]
    cost = statistics.median(on) - statistics.median(off)
    mean_cost = statistics.mean(on) - statistics.mean(off)
    cpu_cost = statistics.median(on_cpu) - statistics.median(off_cpu)
    logged = 2 + opts.asks
    bare_ms, sqlite_ms = import_cost(9)
    print(f"per ask (median): log on {statistics.median(on):.2f} ms, off {statistics.median(off):.2f} ms, cost "
          f"{cost:.2f} ms per logged answer (mean {mean_cost:.2f} ms; {logged} answers logged)")
    print(f"CPU per ask (median): log on {statistics.median(on_cpu):.2f} ms, off {statistics.median(off_cpu):.2f} ms, "
          f"cost {cpu_cost:.2f} ms")
    print(f"import sqlite3 in a fresh interpreter: +{sqlite_ms - bare_ms:.1f} ms")
    met = cpu_cost <= BUDGET_MS
    write_result(
        "convlog", "Conversation log",
        summary=f"`jarvis ask` run in process over a scripted engine (40 streamed pieces with usage), with the "
        f"conversation log on and with `--no-log`, alternating ask by ask, {opts.asks} asks per side; the log "
        f"grew to {logged} answers during the run. The cost is the difference of the medians, in wall time and in "
        "the process's CPU time; the means and the 90th percentiles show the answers that waited.",
        tables=[
            table("Cost of the log per ask", ["side", "median ms", "mean ms", "p90 ms"],
                  [["log on", f"{statistics.median(on):.2f}", f"{statistics.mean(on):.2f}",
                    f"{percentile(on, 0.9):.2f}"],
                   ["--no-log", f"{statistics.median(off):.2f}", f"{statistics.mean(off):.2f}",
                    f"{percentile(off, 0.9):.2f}"],
                   ["cost per logged answer", f"{cost:.2f}", f"{mean_cost:.2f}", ""]]),
            table("CPU time of this process per ask", ["side", "median ms"],
                  [["log on", f"{statistics.median(on_cpu):.2f}"], ["--no-log", f"{statistics.median(off_cpu):.2f}"],
                   ["cost per logged answer", f"{cpu_cost:.2f}"]],
                  notes=["The budget is judged on CPU time: on a shared machine the wall time of a few ms of work "
                         "is mostly waiting for a core."]),
            table("Paid once per process", ["fresh interpreter", "median ms"],
                  [["python -c pass", f"{bare_ms:.1f}"], ["python -c 'import sqlite3'", f"{sqlite_ms:.1f}"]]),
        ],
        budgets=[budget("log on - `--no-log`, CPU per `jarvis ask`", f"{cpu_cost:.2f} ms", f"<= {BUDGET_MS:.0f} ms",
                        met)],
        data={"on_ms": on, "off_ms": off, "on_cpu_ms": on_cpu, "off_cpu_ms": off_cpu},
        argv=argv,
    )
    return 1 if opts.strict and not met else 0


if __name__ == "__main__":
    sys.exit(main())
