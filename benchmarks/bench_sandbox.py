"""Cost of one ``PythonSandbox`` run against the floor of starting the same interpreter bare.

Budgets: ``PythonSandbox(isolation="rlimits").run("pass")`` within 2x the floor ``subprocess.run([python,
"-I", "-S", "-c", "pass"])`` (the same interpreter the sandbox runs), and the jailed ``PythonSandbox().run
("pass")`` (bubblewrap: namespaces and a mount view set up per run, and the seccomp filter) within 4x it; the
jail without its seccomp filter (``seccomp=False``) is measured beside it, no budget. Side by side
(interleaved runs, medians). The sandbox's own work on top of the interpreter start (temporary directory,
the task count behind the process limit, the job, the resource limits, the kill, the clean-up, and the jail)
must stay small beside it. Without bwrap the jailed row is left out.

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
from jarvis_agents.sandbox.jail import jail_status

BUDGET = 2.0
JAIL_BUDGET = 4.0


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=31, help="interleaved runs per command (default 31)")
    ap.add_argument("--strict", action="store_true", help="exit 1 when the budget is missed")
    opts = ap.parse_args(argv)

    sandbox = PythonSandbox(isolation="rlimits")
    python = sandbox.python  # picks (and probes) the interpreter once, outside the measurement

    def floor() -> None:
        subprocess.run([python, "-I", "-S", "-c", "pass"], check=True)

    def runner(box: PythonSandbox) -> Callable[[], None]:
        def run() -> None:
            result = box.run("pass")
            if not result.ok:
                raise SystemExit(f"the sandbox run failed: {result}")
        return run

    commands: Dict[str, Callable[[], None]] = {"floor (bare -I -S)": floor, "rlimits only": runner(sandbox)}
    if jail_status().available:
        jailed = PythonSandbox(python=python)
        jailed.python  # noqa: B018  (the probe run, outside the measurement; it builds the filter too)
        commands["jailed (bubblewrap)"] = runner(jailed)
        commands["jailed, no seccomp"] = runner(PythonSandbox(python=python, seccomp=False))
    for fn in commands.values():
        fn()  # warm-up
    times: Dict[str, List[float]] = {name: [] for name in commands}
    for _ in range(opts.runs):
        for name, fn in commands.items():
            times[name].append(timed(fn))
    medians = {name: statistics.median(values) for name, values in times.items()}
    base = medians["floor (bare -I -S)"]
    for name, value in medians.items():
        print(f"{name:<22} {value * 1000:8.1f} ms (median of {opts.runs})")
    budgets = [("rlimits only", BUDGET), ("jailed (bubblewrap)", JAIL_BUDGET)]
    checks = [(name, medians[name] / base, limit) for name, limit in budgets if name in medians]
    ok = all(ratio <= limit for _, ratio, limit in checks)
    for name, ratio, limit in checks:
        print(f"{name}: {ratio:.2f}x the floor (budget {limit}x) {'ok' if ratio <= limit else 'MISSED'}")
    print(f"interpreter {python}; jail: {jail_status().describe()}")
    write_result(
        "sandbox", "Python sandbox run",
        summary=(f"`PythonSandbox(...).run(\"pass\")`, limits only, jailed (seccomp filter included) and jailed "
                 "without the filter, against starting the same interpreter "
                 f"bare (`-I -S -c pass`); {opts.runs} interleaved runs, medians."),
        tables=[table("Wall time", ["command", "median ms"], [[n, f"{v * 1000:.1f}"] for n, v in medians.items()])],
        budgets=[budget(f"PythonSandbox.run ({name}) / bare interpreter", fmt_ratio(ratio), f"<= {fmt_ratio(limit)}",
                        ratio <= limit) for name, ratio, limit in checks],
        data={"ratios": {name: ratio for name, ratio, _ in checks}},
    )
    return 1 if opts.strict and not ok else 0


if __name__ == "__main__":
    sys.exit(main())
