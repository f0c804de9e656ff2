#!/usr/bin/env python
"""Agent overhead per turn: the registered ``orchestrator`` (``mode="function_calling"``) against a fast
scripted engine, side by side with the same model calls made raw plus the tools' own time.

    python benchmarks/bench_agents.py [--turns 10] [--latency-ms 0 5 20] [--runs 15]
                                      [--tool calculator|lookup] [--isolation inline|thread|process]
                                      [--strict]

The agent is built as ``jarvis ask --agent orchestrator --tools calculator`` builds it: ``create_agent``
and ``create_tool`` through the plugin registry, with an event bus that has one subscriber. It runs N tool
turns and one answer turn: N + 1 model calls and N tool calls. The floor, measured in the same process,
is those N + 1 calls streamed raw from the same engine (in one event loop, as the agent's run has) plus N
direct ``tool.run(...)`` calls. Rounds are interleaved: each round measures every latency, floor and agent
one after the other (the order alternates between rounds), so a slow patch of the machine hits both.

Each model call of the scripted engine takes ``--latency-ms`` (an ``asyncio.sleep``: a fast local server;
``0`` leaves only the framework, which is where overhead shows). The table gives, per latency, the median
wall time of both sides, their ratio and the overhead per turn (agent minus floor, divided by the N + 1
turns) in µs, wall and CPU. Budget: agent within 1.05x the floor at every latency of at least
``--budget-from-ms`` (default 5 ms: a local model answering faster than that is not a model). ``--strict``
exits 1 when it is missed.

``--tool lookup`` swaps the calculator (``inline``, the registered policy) for a tool that sleeps
``--tool-ms``; ``--isolation`` overrides the tool's policy to show the cost of a thread or process hand-off.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from typing import Any, AsyncIterator, Callable, Dict, List, Optional, Sequence, Tuple

import attrs
from results import budget, fmt_ratio, table, write_result

from jarvis_core.agents import create_agent
from jarvis_core.engine.base import InferenceEngine
from jarvis_core.events import EventBus
from jarvis_core.tools import BaseTool, ToolPolicy, create_tool
from jarvis_core.types import Completion, MessageLike, StreamChunk, ToolCall, ToolSpec, Usage

BUDGET = 1.05


class Lookup(BaseTool):
    """A tool whose own time is a sleep of ``seconds``."""

    spec = ToolSpec("lookup", "Look a key up.", {
        "type": "object", "properties": {"expression": {"type": "string", "maxLength": 64}},
        "required": ["expression"], "additionalProperties": False})

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    def run(self, expression: str) -> str:
        time.sleep(self.seconds)
        return f"value of {expression}"


class ScriptedEngine(InferenceEngine):
    """Answers ``turns`` times with one call of ``tool``, then with a final answer; each call takes ``latency``."""

    engine_id = "bench"

    def __init__(self, turns: int, latency: float, tool: str) -> None:
        self.turns, self.latency, self.tool = turns, latency, tool
        self.count = 0

    def reply(self) -> Completion:
        i = self.count
        self.count += 1
        if i < self.turns:
            call = ToolCall(f"call_{i}", self.tool, json.dumps({"expression": f"{i + 2} * 7"}))
            return Completion(tool_calls=[call], usage=Usage(100 + 10 * i, 12), finish_reason="tool_calls")
        return Completion(content="All done.", usage=Usage(200, 8))

    def generate(self, messages: Sequence[MessageLike], *, model: str, temperature: Optional[float] = None,
                 max_tokens: int = 1024, tools: Any = None, **options: Any) -> Completion:
        time.sleep(self.latency)
        return self.reply()

    async def stream_full(self, messages: Sequence[MessageLike], *, model: str, temperature: Optional[float] = None,
                          max_tokens: int = 1024, tools: Any = None, **options: Any) -> AsyncIterator[StreamChunk]:
        await asyncio.sleep(self.latency)
        c = self.reply()
        if c.content:
            yield StreamChunk(content=c.content)
        yield StreamChunk(tool_calls=c.tool_calls, finish_reason=c.finish_reason, usage=c.usage)

    def list_models(self) -> List[str]:
        return ["bench"]

    def health(self) -> bool:
        return True


def make_tool(kind: str, tool_s: float, isolation: Optional[str]) -> Any:
    tool = create_tool("calculator") if kind == "calculator" else Lookup(tool_s)
    if isolation is not None:
        tool.policy = attrs.evolve(tool.policy or ToolPolicy(), isolation=isolation)
    return tool


def timed(fn: Callable[[], Any]) -> Tuple[float, float]:
    start, cpu = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - start, time.process_time() - cpu


def run_agent(turns: int, latency: float, tool: Any) -> Tuple[float, float]:
    bus = EventBus()
    seen: list = []
    bus.subscribe(seen.append)
    engine = ScriptedEngine(turns, latency, tool.spec.name)
    agent = create_agent("orchestrator", engine, model="bench", tools=[tool], bus=bus, mode="function_calling",
                         max_turns=turns + 1)
    box: list = []
    elapsed = timed(lambda: box.append(agent.run("Compute every product.")))
    result = box[0]
    assert result.stop_reason == "final" and len(result.tool_results) == turns, result
    assert all(r.ok for r in result.tool_results), result.tool_results
    return elapsed


def run_floor(turns: int, latency: float, tool: Any) -> Tuple[float, float]:
    engine = ScriptedEngine(turns, latency, tool.spec.name)

    async def calls() -> None:
        for i in range(turns + 1):
            async for _ in engine.stream_full([{"role": "user", "content": "x"}], model="bench"):
                pass
            if i < turns:
                tool.run(expression=f"{i + 2} * 7")

    return timed(lambda: asyncio.run(calls()))


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--turns", type=int, default=10)
    ap.add_argument("--latency-ms", type=float, nargs="+", default=[0.0, 5.0, 20.0])
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--tool", choices=("calculator", "lookup"), default="calculator")
    ap.add_argument("--tool-ms", type=float, default=2.0, help="the lookup tool's own time")
    ap.add_argument("--isolation", choices=("inline", "thread", "process"), default=None,
                    help="override the tool's policy (default: as registered; the calculator is inline)")
    ap.add_argument("--budget-from-ms", type=float, default=5.0)
    ap.add_argument("--strict", action="store_true")
    args = ap.parse_args(argv)
    tool = make_tool(args.tool, args.tool_ms / 1000, args.isolation)
    latencies = [ms / 1000 for ms in args.latency_ms]
    run_agent(2, 0.0, tool)  # warm-up: imports, the registry, the first thread
    run_floor(2, 0.0, tool)
    agent_t: Dict[float, List[Tuple[float, float]]] = {lat: [] for lat in latencies}
    floor_t: Dict[float, List[Tuple[float, float]]] = {lat: [] for lat in latencies}
    for round_no in range(args.runs):
        for lat in latencies:
            pair = [(floor_t, run_floor), (agent_t, run_agent)]
            for store, fn in (pair if round_no % 2 == 0 else pair[::-1]):
                store[lat].append(fn(args.turns, lat, tool))
    isolation = args.isolation or tool.policy.isolation
    print(f"orchestrator (function_calling), {args.turns} tool turns + 1 answer, tool {args.tool} ({isolation}), "
          f"{args.runs} interleaved rounds (medians)")
    print(f"  {'model call':>10} {'floor':>10} {'agent':>10} {'ratio':>7} {'overhead/turn':>14} {'cpu/turn':>10}")
    ok = True
    rows, budgets, data = [], [], {}
    for ms in args.latency_ms:
        lat = ms / 1000
        a = statistics.median(t for t, _ in agent_t[lat])
        f = statistics.median(t for t, _ in floor_t[lat])
        a_cpu = statistics.median(c for _, c in agent_t[lat])
        f_cpu = statistics.median(c for _, c in floor_t[lat])
        ratio = a / f
        per_turn = (a - f) / (args.turns + 1) * 1e6
        cpu_turn = (a_cpu - f_cpu) / (args.turns + 1) * 1e6
        judged = ms >= args.budget_from_ms
        verdict = ("ok" if ratio <= BUDGET else "OVER") if judged else "(not judged)"
        ok = ok and (ratio <= BUDGET or not judged)
        print(f"  {ms:8g}ms {f * 1000:8.2f}ms {a * 1000:8.2f}ms {ratio:6.3f}x {per_turn:11.0f} µs "
              f"{cpu_turn:7.0f} µs  {verdict}")
        rows.append([f"{ms:g} ms", f"{f * 1000:.2f}", f"{a * 1000:.2f}", fmt_ratio(ratio), f"{per_turn:.0f}",
                     f"{cpu_turn:.0f}"])
        data[f"{ms:g}"] = {"ratio": ratio, "overhead_us_per_turn": per_turn, "cpu_us_per_turn": cpu_turn}
        if judged:
            budgets.append(budget(f"agent / floor at {ms:g} ms model calls", fmt_ratio(ratio), f"<= {fmt_ratio(BUDGET)}",
                                  ratio <= BUDGET))
    print(f"  budget {BUDGET}x at model calls of {args.budget_from_ms:g} ms and more: "
          + ("within budget" if ok else "OVER BUDGET"))
    write_result(
        "agents", "Agent overhead per turn",
        summary=(f"The registered `orchestrator` (function_calling) running {args.turns} tool turns and an answer over a "
                 f"scripted engine whose calls take the given time, against the same {args.turns + 1} engine calls "
                 f"streamed raw plus the tools' own time; {args.runs} interleaved rounds, medians; tool "
                 f"{args.tool} ({isolation})."),
        tables=[table("Agent run against its floor", ["model call", "floor ms", "agent ms", "ratio",
                                                      "overhead \u00b5s/turn", "CPU \u00b5s/turn"], rows)],
        budgets=budgets, data=data,
    )
    return 0 if ok or not args.strict else 1


if __name__ == "__main__":
    sys.exit(main())
