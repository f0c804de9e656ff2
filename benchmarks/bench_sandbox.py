"""Cost of one ``PythonSandbox`` run against the floor of starting the same interpreter bare.

Budget: ``PythonSandbox().run("pass")`` within 2x the floor ``subprocess.run([python, "-I", "-S", "-c",
"pass"])`` (the same interpreter the sandbox runs), measured side by side (interleaved runs, medians). The
sandbox's own work on top of the interpreter start (temporary directory, the task count behind the process
limit, the JSON job, the resource limits, the process-group kill, the clean-up) must stay small beside it.

    python benchmarks/bench_sandbox.py [--runs 31] [--strict]

``--strict`` exits 1 when the budget is missed (by default the figures are only reported).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from typing import Callable, Dict, List, Sequence

from results import budget, fmt_ratio, table, write_result

from jarvis_agents.sandbox import PythonSandbox

BUDGET = 2.0


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=31, help="interleaved runs per command (default 31)")
    ap.add_argument("--strict", action="store_true", help="exit 1 when the budget is missed")
    opts = ap.parse_args(argv)

    sandbox = PythonSandbox()
    python = sandbox.python  # picks (and probes) the interpreter once, outside the measurement

    def floor() -> None:
        subprocess.run([python, "-I", "-S", "-c", "pass"], check=True)

    def sandboxed() -> None:
        result = sandbox.run("pass")
        if not result.ok:
            raise SystemExit(f"the sandbox run failed: {result}")

    commands: Dict[str, Callable[[], None]] = {"floor (bare -I -S)": floor, "PythonSandbox.run": sandboxed}
    for fn in commands.values():
        fn()  # warm-up
    times: Dict[str, List[float]] = {name: [] for name in commands}
    for _ in range(opts.runs):
        for name, fn in commands.items():
            times[name].append(timed(fn))
    medians = {name: statistics.median(values) for name, values in times.items()}
    ratio = medians["PythonSandbox.run"] / medians["floor (bare -I -S)"]
    for name, value in medians.items():
        print(f"{name:<22} {value * 1000:8.1f} ms (median of {opts.runs})")
    ok = ratio <= BUDGET
    print(f"ratio {ratio:.2f}x (budget {BUDGET}x) {'ok' if ok else 'MISSED'}; interpreter {python}")
    write_result(
        "sandbox", "Python sandbox run",
        summary=(f"`PythonSandbox().run(\"pass\")` against starting the same interpreter bare (`-I -S -c pass`); "
                 f"{opts.runs} interleaved runs, medians."),
        tables=[table("Wall time", ["command", "median ms"], [[n, f"{v * 1000:.1f}"] for n, v in medians.items()])],
        budgets=[budget("PythonSandbox.run / bare interpreter", fmt_ratio(ratio), f"<= {fmt_ratio(BUDGET)}", ok)],
        data={"ratio": ratio},
    )
    return 1 if opts.strict and not ok else 0


if __name__ == "__main__":
    sys.exit(main())
