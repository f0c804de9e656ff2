"""``discover_engines`` with N engines down costs about one health timeout, not N (docs/contract.md §10).

Floor: one engine's health check against an address that accepts connections and never answers (so the
check runs into its timeout), measured side by side with ``discover_engines`` over N such engines, runs
interleaved, medians compared. The budget is a ratio: at most 1.5x the single check, however large N is.

    python benchmarks/bench_discovery.py [--engines 8] [--timeout 0.3] [--runs 5] [--strict]
"""

from __future__ import annotations

import argparse
import socket
import statistics
import sys
import tempfile
import time
from pathlib import Path

from results import budget, fmt_ratio, table, write_result

from jarvis_core import hookimpl
from jarvis_core.config import load_config
from jarvis_core.discovery import discover_engines
from jarvis_core.engine.http import HTTPEngine
from jarvis_core.plugins.manager import make_plugin_manager
from jarvis_core.plugins.registry import Registry, reset_registry

BUDGET = 1.5


class DownEngine(HTTPEngine):
    health_path = "/health"

    def generate(self, *args, **kwargs):  # pragma: no cover - never called
        raise NotImplementedError

    def list_models(self):  # pragma: no cover - never called
        return []


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engines", type=int, default=8)
    parser.add_argument("--timeout", type=float, default=0.3)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--strict", action="store_true", help="exit 1 when the budget is missed")
    args = parser.parse_args()

    hole = socket.socket()
    hole.bind(("127.0.0.1", 0))
    hole.listen(256)
    url = f"http://127.0.0.1:{hole.getsockname()[1]}"
    keys = [f"down{i}" for i in range(args.engines)]

    class Plugin:
        @staticmethod
        @hookimpl
        def jarvis_register_engines(register):
            for key in keys:
                register(key, type(f"E{key}", (DownEngine,), {"engine_id": key}))

    reset_registry(Registry(make_plugin_manager(load_entrypoints=False, plugins=[("bench", Plugin)])))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "config.toml"
        path.write_text("".join(f'[engine.{k}]\nhost = "{url}"\n' for k in keys), encoding="utf-8")
        config = load_config(path, environ={})

        floors, measured = [], []
        for _ in range(args.runs):
            engine = DownEngine(host=url, health_timeout=args.timeout)
            start = time.perf_counter()
            engine.health()
            floors.append(time.perf_counter() - start)
            engine.close()

            start = time.perf_counter()
            found = discover_engines(config, timeout=args.timeout)
            measured.append(time.perf_counter() - start)
            assert found == []
    hole.close()
    reset_registry(None)

    floor, value = statistics.median(floors), statistics.median(measured)
    ratio = value / floor
    ok = ratio <= BUDGET
    print(
        f"discover_engines, {args.engines} engines down, health timeout {args.timeout:g}s: "
        f"{value * 1000:.0f} ms vs one health check {floor * 1000:.0f} ms -> {ratio:.2f}x "
        f"(budget {BUDGET}x; sequential would be ~{args.engines}x) {'OK' if ok else 'OVER BUDGET'}"
    )
    write_result(
        "discovery", "Engine discovery with engines down",
        summary=(f"`discover_engines` over {args.engines} engines whose address accepts connections and never answers, "
                 f"against one engine's health check running into the same {args.timeout:g} s timeout; "
                 f"{args.runs} interleaved runs, medians."),
        tables=[table("Wall time", ["measure", "median ms", "vs floor"],
                      [["one health check (floor)", f"{floor * 1000:.0f}", "1.00\u00d7"],
                       [f"discover_engines, {args.engines} engines down", f"{value * 1000:.0f}", fmt_ratio(ratio)]])],
        budgets=[budget("discover_engines / one health check", fmt_ratio(ratio), f"<= {fmt_ratio(BUDGET)}", ok)],
        data={"ratio": ratio},
    )
    return 0 if ok or not args.strict else 1


if __name__ == "__main__":
    sys.exit(main())
