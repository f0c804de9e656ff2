"""What a benchmark measured, kept as JSON so that ``benchmarks/report.py`` can render
``docs/performance.md`` (tables and plots) from the latest result of every benchmark.

Each ``bench_*.py`` ends with :func:`write_result`: one JSON document per benchmark, at
``$JARVIS_BENCH_RESULTS/<name>.json`` (default ``benchmarks/results/``, which git ignores), overwritten by
the next run. With it go the command that produced it, when it ran, how long it took and the machine
(cores, CPU model, memory, Python), so re-running one benchmark and then the report updates that section
only, and each section says where its numbers came from.

A document holds tables ready to print (the benchmark formats its own cells: it knows which digits mean
something), the budgets it judged, and the raw numbers the plots need under ``data``.
"""

from __future__ import annotations

import datetime
import json
import os
import pathlib
import platform
import sys
import time
from typing import Any, Dict, List, Optional, Sequence

__all__ = ["budget", "fmt_ratio", "load_results", "machine", "results_dir", "table", "write_result"]

_STARTED = time.time()
HERE = pathlib.Path(__file__).resolve().parent


def results_dir() -> pathlib.Path:
    """Where results are written and read: ``$JARVIS_BENCH_RESULTS``, else ``benchmarks/results/``."""
    override = os.environ.get("JARVIS_BENCH_RESULTS")
    return pathlib.Path(override) if override else HERE / "results"


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.lower().startswith("model name"):
                    return line.partition(":")[2].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _memory_gib() -> Optional[float]:
    try:
        with open("/proc/meminfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("MemTotal:"):
                    return round(int(line.split()[1]) / 1024 / 1024, 1)
    except (OSError, ValueError, IndexError):
        pass
    return None


def machine() -> Dict[str, Any]:
    """The machine and interpreter a result was measured on."""
    try:
        usable = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        usable = os.cpu_count() or 0
    return {
        "cores": os.cpu_count(),
        "usable_cores": usable,
        "cpu": _cpu_model(),
        "memory_gib": _memory_gib(),
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "platform": platform.platform(terse=True),
        "load_average": [round(x, 2) for x in os.getloadavg()] if hasattr(os, "getloadavg") else None,
    }


def table(caption: str, headers: Sequence[str], rows: Sequence[Sequence[Any]], notes: Sequence[str] = ()) -> Dict[str, Any]:
    """A table for the report: a caption, header cells and rows of formatted cells."""
    return {"caption": caption, "headers": list(headers), "rows": [[str(c) for c in row] for row in rows],
            "notes": list(notes)}


def budget(what: str, value: str, limit: str, met: Optional[bool]) -> Dict[str, Any]:
    """A budget the benchmark judged: what, the measured value, the limit, and whether it was met."""
    return {"what": what, "value": value, "budget": limit, "met": met}


def fmt_ratio(x: float) -> str:
    """A ratio as the report prints it: two decimals and a multiplication sign (U+00D7)."""
    return f"{x:.2f}\u00d7"


def write_result(name: str, title: str, *, summary: str, tables: Sequence[Dict[str, Any]],
                 budgets: Sequence[Dict[str, Any]] = (), data: Optional[Dict[str, Any]] = None,
                 argv: Optional[Sequence[str]] = None) -> pathlib.Path:
    """Write benchmark ``name``'s result and return its path (the report orders sections by name).

    :param summary: what was measured against which floor, in a sentence or two (markdown).
    :param argv: the benchmark's arguments (default: ``sys.argv[1:]``).
    """
    script = pathlib.Path(sys.argv[0]).name
    args = list(sys.argv[1:] if argv is None else argv)
    doc = {
        "name": name,
        "title": title,
        "command": " ".join(["python", f"benchmarks/{script}", *args]),
        "finished": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "seconds": round(time.time() - _STARTED, 1),
        "machine": machine(),
        "summary": summary,
        "tables": list(tables),
        "budgets": list(budgets),
        "data": data or {},
    }
    out = results_dir()
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{name}.json"
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    tmp.replace(path)
    print(f"result: {path}")
    return path


def load_results(directory: Optional[pathlib.Path] = None) -> List[Dict[str, Any]]:
    """Every result in ``directory`` (default :func:`results_dir`), sorted by name."""
    directory = directory or results_dir()
    docs = []
    for path in sorted(directory.glob("*.json")):
        try:
            docs.append(json.loads(path.read_text(encoding="utf-8")))
        except (OSError, ValueError) as exc:
            print(f"skipping {path}: {exc}", file=sys.stderr)
    return docs
