#!/usr/bin/env python
"""Tool-argument validation cost per call: the validator jarvis uses now against the hand-written checker it
replaced, in the same run.

    python benchmarks/bench_tool_args.py [--rounds 7] [--calls 20000]

Three schemas as tools carry them (a one-argument tool, the memory_store tool's, and a nested one with
``enum``, ``pattern`` and an array of objects), each with valid arguments (every call the model gets right)
and with invalid ones (the message path). Candidates, interleaved in every round:

- ``jarvis``: :func:`jarvis_core.tools.schema.validate` (fastjsonschema's compiled check, jsonschema's messages
  only when it fails);
- ``hand-written``: the checker it replaced (``legacy_tool_args.py``, verbatim), the floor and the budget;
- ``jsonschema``: a cached ``Draft7Validator``'s ``iter_errors`` alone, for reference.

Per-call cost is the median over rounds; the budget is jarvis's valid-call cost no more than the hand-written
checker's (issue 27). Nothing is asserted here.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time
from typing import Any, Callable, Dict, List

import jsonschema
from legacy_tool_args import validate as legacy_validate
from results import budget, fmt_ratio, table, write_result

from jarvis_core.tools.schema import validate

SCHEMAS: Dict[str, Dict[str, Any]] = {
    "one string": {
        "type": "object", "properties": {"thought": {"type": "string", "maxLength": 4000}},
        "required": ["thought"], "additionalProperties": False,
    },
    "memory_store": {
        "type": "object",
        "properties": {
            "content": {"type": "string", "maxLength": 16000},
            "key": {"type": "string", "maxLength": 200},
            "tags": {"type": "array", "items": {"type": "string", "maxLength": 50}, "maxItems": 20},
        },
        "required": ["content"], "additionalProperties": False,
    },
    "nested": {
        "type": "object",
        "properties": {
            "city": {"type": "string", "minLength": 1},
            "unit": {"enum": ["C", "F"]},
            "code": {"type": "string", "pattern": "^[A-Z]{3}$"},
            "days": {"type": "integer", "minimum": 1, "maximum": 14},
            "stops": {"type": "array", "maxItems": 10, "items": {
                "type": "object", "properties": {"lat": {"type": "number"}, "lon": {"type": "number"}},
                "required": ["lat", "lon"], "additionalProperties": False}},
        },
        "required": ["city"], "additionalProperties": False,
    },
}
VALID = {
    "one string": {"thought": "first add, then divide"},
    "memory_store": {"content": "the meeting is on Tuesday", "key": "meeting", "tags": ["work", "calendar"]},
    "nested": {"city": "Paris", "unit": "C", "code": "CDG", "days": 3,
               "stops": [{"lat": 48.85, "lon": 2.35}, {"lat": 45.76, "lon": 4.84}]},
}
INVALID = {
    "one string": {"thought": 42},
    "memory_store": {"key": "meeting", "tags": ["work", 7]},
    "nested": {"city": "", "unit": "K", "days": 30, "stops": [{"lat": "north"}]},
}


def _jsonschema(schema: Dict[str, Any]) -> Callable[[Any], List[Any]]:
    validator = jsonschema.Draft7Validator(schema)
    return lambda value: list(validator.iter_errors(value))


def _per_call(fn: Callable[[Any], Any], value: Any, calls: int) -> float:
    gc.collect()
    gc.disable()
    try:
        t0 = time.perf_counter()
        for _ in range(calls):
            fn(value)
        return (time.perf_counter() - t0) / calls
    finally:
        gc.enable()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--calls", type=int, default=20000, help="calls per candidate per round (valid arguments)")
    args = ap.parse_args(argv)
    rows, ratios = [], []
    for label, schema in SCHEMAS.items():
        candidates = {
            "jarvis": lambda v, s=schema: validate(v, s),
            "hand-written": lambda v, s=schema: legacy_validate(v, s),
            "jsonschema": _jsonschema(schema),
        }
        for case, value, calls in (("valid", VALID[label], args.calls), ("invalid", INVALID[label], args.calls // 10)):
            for fn in candidates.values():
                assert bool(fn(value)) == (case == "invalid"), (label, case)
            times: Dict[str, List[float]] = {name: [] for name in candidates}
            for r in range(args.rounds):
                order = list(candidates)[r % 3:] + list(candidates)[:r % 3]
                for name in order:
                    times[name].append(_per_call(candidates[name], value, calls))
            med = {name: statistics.median(t) * 1e6 for name, t in times.items()}
            ratio = statistics.median(a / b for a, b in zip(times["jarvis"], times["hand-written"], strict=True))
            if case == "valid":
                ratios.append(ratio)
            rows.append([label, case, f"{med['jarvis']:.2f}", f"{med['hand-written']:.2f}", f"{med['jsonschema']:.2f}",
                         fmt_ratio(ratio)])
            print(" | ".join(rows[-1]))
    worst = max(ratios)
    write_result(
        "tool_args", "Tool-argument validation",
        summary=("Microseconds per call to validate a tool call's decoded arguments against three tool schemas, "
                 "valid and invalid, for jarvis's validator (fastjsonschema's compiled check; jsonschema's "
                 "messages only on failure), the hand-written checker it replaced (the floor, measured in the "
                 f"same rounds) and a cached jsonschema validator alone; median of {args.rounds} interleaved "
                 f"rounds of {args.calls} valid or {args.calls // 10} invalid calls."),
        tables=[table("µs per call (median over rounds) and jarvis over the hand-written checker",
                      ["schema", "arguments", "jarvis µs", "hand-written µs", "jsonschema µs", "jarvis / hand-written"],
                      rows, notes=["Invalid arguments cost more: every problem is listed, worded for the model; that "
                                   "is the rare path (the model got the call wrong)."])],
        budgets=[budget("valid-call cost, jarvis / hand-written (worst schema)", fmt_ratio(worst), "<= " + fmt_ratio(1.0),
                        worst <= 1.0)],
        data={"rows": rows},
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
