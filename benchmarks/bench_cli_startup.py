"""Start-up cost of ``jarvis plugins`` against the floor of pluggy plus an entry-point scan.

Budget (docs/contract.md §10): ``jarvis plugins`` with every package installed within 1.3x the floor
``python -c "import pluggy, importlib.metadata as m; m.entry_points(group='jarvis')"``, measured side by side
(interleaved runs, same process tree, medians). ``jarvis plugins`` is timed as people run it (the table);
its ``--json`` form differs only in the last step. ``jarvis --help``, which lists the plugins' commands too
(so it builds the registry), is held to the same budget. Also: ``import jarvis_core`` imports neither httpx nor any
plugin module, and ``jarvis plugins`` (table or ``--json``) imports neither httpx, attrs, cattrs nor the
config code.

    python benchmarks/bench_cli_startup.py [--runs 21] [--strict]

``--strict`` exits 1 when a budget is missed (by default the figures are only reported).
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import time
from typing import Dict, List, Sequence

from results import budget, fmt_ratio, table, write_result

BUDGET = 1.3
PY = sys.executable
FLOOR = [PY, "-c", "import pluggy, importlib.metadata as m; m.entry_points(group='jarvis')"]
BARE = [PY, "-c", "pass"]
IMPORT_CORE = [PY, "-c", "import jarvis_core"]


def jarvis_command() -> List[str]:
    """The installed ``jarvis`` console script next to this interpreter (what users run)."""
    script = pathlib.Path(PY).parent / ("jarvis.exe" if os.name == "nt" else "jarvis")
    return [str(script)] if script.exists() else [PY, "-m", "jarvis_core.cli.main"]


def run_once(cmd: Sequence[str], env: Dict[str, str]) -> float:
    start = time.perf_counter()
    proc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}): {proc.stderr.decode(errors='replace')[-500:]}")
    return elapsed


def modules_after(code: str, env: Dict[str, str]) -> List[str]:
    """Module names loaded in a fresh interpreter after running ``code``."""
    probe = code + "\nimport sys, json\nprint(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([PY, "-c", probe], capture_output=True, text=True, env=env, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def installed_plugins(env: Dict[str, str]) -> List[str]:
    code = (
        "import importlib.metadata as m, json;"
        "print(json.dumps(sorted({f'{e.dist.metadata[\"Name\"]} {e.dist.version}' for e in m.entry_points(group='jarvis')})))"
    )
    return json.loads(subprocess.run([PY, "-c", code], capture_output=True, text=True, env=env, check=True).stdout)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=21, help="interleaved runs per command (default 21)")
    ap.add_argument("--strict", action="store_true", help="exit 1 when a budget is missed")
    opts = ap.parse_args(argv)

    env = dict(os.environ)
    # Bytecode caches on, as in any normal install (pip compiles at install time): without them every run
    # would compile jarvis's own sources, while the floor's stdlib and pluggy modules have their .pyc files.
    for var in ("JARVIS_LOAD_PLUGINS", "JARVIS_DISABLE_PLUGINS", "JARVIS_STRICT_PLUGINS", "PYTHONPROFILEIMPORTTIME",
                "PYTHONDONTWRITEBYTECODE"):
        env.pop(var, None)
    jarvis = [*jarvis_command(), "plugins"]
    commands = {"bare python": BARE, "floor": FLOOR, "jarvis plugins": jarvis, "jarvis --help": [*jarvis_command(), "--help"],
                "import jarvis_core": IMPORT_CORE}

    for cmd in commands.values():  # warm-up: bytecode caches, page cache
        run_once(cmd, env)
    times: Dict[str, List[float]] = {name: [] for name in commands}
    for _ in range(opts.runs):
        for name, cmd in commands.items():
            times[name].append(run_once(cmd, env))
    med = {name: statistics.median(ts) for name, ts in times.items()}

    ok = True
    print(f"python {sys.version.split()[0]}; plugins installed: {', '.join(installed_plugins(env))}")
    print(f"{'command':<20} {'median ms':>10} {'vs floor':>9}   ({opts.runs} interleaved runs)")
    for name in commands:
        print(f"{name:<20} {med[name] * 1000:>10.1f} {med[name] / med['floor']:>8.2f}x")
    ratios = {name: med[name] / med["floor"] for name in ("jarvis plugins", "jarvis --help")}
    for name, ratio in ratios.items():
        ok &= ratio <= BUDGET
        print(f"{name} / floor = {ratio:.2f}x ({'within' if ratio <= BUDGET else 'OVER'} the {BUDGET}x budget)")
    ratio = ratios["jarvis plugins"]

    core_mods = modules_after("import jarvis_core", env)
    heavy_core = [m for m in core_mods if m.split(".")[0] in ("httpx", "httpcore") or m.startswith("jarvis_engine_")]
    print(f"import jarvis_core: {'imports ' + ', '.join(heavy_core) if heavy_core else 'no httpx, no plugin module'}")
    ok &= not heavy_core

    plugin_mods = modules_after("from jarvis_core.cli.main import main; main(['plugins']); main(['plugins', '--json'])",
                                env)
    banned = ("httpx", "httpcore", "attrs", "attr", "cattrs", "jarvis_core.config", "jarvis_core.types")
    heavy_cli = sorted({m for m in plugin_mods if any(m == b or m.startswith(b + ".") for b in banned)})
    print(f"jarvis plugins imports: {', '.join(heavy_cli) if heavy_cli else 'none of httpx, attrs, cattrs, config, types'}")
    ok &= not heavy_cli

    print(json.dumps({"bench": "cli_startup", "median_ms": {k: round(v * 1000, 2) for k, v in med.items()},
                      "ratio": round(ratio, 3), "budget": BUDGET, "ok": ok}))
    write_result(
        "cli_startup", "Start-up with every distribution installed",
        summary=(f"Fresh processes, {opts.runs} interleaved runs per command after a warm-up, medians. Floor: "
                 "`python -c \"import pluggy, importlib.metadata as m; m.entry_points(group='jarvis')\"`. Installed: "
                 + ", ".join(installed_plugins(env)) + "."),
        tables=[table("Wall time of a fresh process", ["command", "median ms", "vs floor"],
                      [[name, f"{med[name] * 1000:.1f}", fmt_ratio(med[name] / med["floor"])] for name in commands])],
        budgets=[*(budget(f"`{name}` / floor", fmt_ratio(r), f"<= {fmt_ratio(BUDGET)}", r <= BUDGET) for name, r in ratios.items()),
                 budget("`import jarvis_core` imports httpx or a plugin module", ", ".join(heavy_core) or "no", "no",
                        not heavy_core),
                 budget("`jarvis plugins` imports httpx, attrs, cattrs, config or types", ", ".join(heavy_cli) or "no",
                        "no", not heavy_cli)],
        data={"median_ms": {k: v * 1000 for k, v in med.items()}, "ratios": ratios},
    )
    return 0 if ok or not opts.strict else 1


if __name__ == "__main__":
    sys.exit(main())
