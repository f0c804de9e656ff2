"""Memory of a jarvis process with every plugin loaded, against one that only imports httpx (docs/contract.md §10).

Floor: ``python -c "import httpx"``. Measured: a process that builds the registry (every installed plugin
loaded), imports every registered engine class, builds each engine that needs no arguments, and runs one
``jarvis``-style config load. Both report their peak RSS (``ru_maxrss``); runs are interleaved and the
medians compared. Budget: at most 15 MiB above the floor.

    python benchmarks/bench_memory.py [--runs 5] [--strict]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys

from results import budget, table, write_result

BUDGET_MIB = 15.0

FLOOR = "import resource, httpx; print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)"

JARVIS = """
import resource
from jarvis_core.config import load_config
from jarvis_core.plugins import get_registry

registry = get_registry()
engines = []
for key, reg in sorted(registry.items("engine").items()):
    cls = reg.load()
    try:
        engines.append(cls())
    except Exception:
        pass  # engines that need a URL or key are still imported, which is what costs memory
for key in list(registry.items("parser")):
    registry.get("parser", key).load()
load_config()
for engine in engines:
    engine.close()
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def _rss_mib(code: str) -> float:
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    return int(out.split()[-1]) / 1024.0  # ru_maxrss is in KiB on Linux


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--strict", action="store_true", help="exit 1 when the budget is missed")
    args = parser.parse_args()

    floor, jarvis = [], []
    for _ in range(args.runs):
        floor.append(_rss_mib(FLOOR))
        jarvis.append(_rss_mib(JARVIS))
    f, j = statistics.median(floor), statistics.median(jarvis)
    delta = j - f
    ok = delta <= BUDGET_MIB
    print(f"memory: import httpx {f:.1f} MiB, jarvis with every plugin loaded {j:.1f} MiB, "
          f"difference {delta:+.1f} MiB (budget <= {BUDGET_MIB:.0f} MiB) {'OK' if ok else 'OVER BUDGET'}")
    write_result(
        "memory", "Memory with every plugin loaded",
        summary=("Peak RSS (`ru_maxrss`) of a process that builds the registry with every installed plugin, imports "
                 "every engine class, builds the engines that need no arguments and loads the config, against "
                 f"`python -c \"import httpx\"`; {args.runs} interleaved runs, medians."),
        tables=[table("Peak RSS", ["process", "MiB"],
                      [["import httpx (floor)", f"{f:.1f}"], ["jarvis, every plugin loaded", f"{j:.1f}"],
                       ["difference", f"{delta:+.1f}"]])],
        budgets=[budget("jarvis - floor", f"{delta:+.1f} MiB", f"<= {BUDGET_MIB:.0f} MiB", ok)],
        data={"floor_mib": f, "jarvis_mib": j},
    )
    return 0 if ok or not args.strict else 1


if __name__ == "__main__":
    sys.exit(main())
