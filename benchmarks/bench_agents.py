#!/usr/bin/env python
"""Agent overhead per tool turn: a ToolUsingAgent run against a fast scripted engine, side by side with
the same model calls made raw plus the tools' own time.

    python benchmarks/bench_agents.py [--turns 10] [--latency-ms 20] [--tool-ms 2] [--runs 9]
                                      [--isolation thread|inline] [--strict]

The agent (an ``orchestrator``-like :class:`~jarvis_core.agents.ToolUsingAgent`: native tool calls, default
thread isolation, schema validation, events on a bus with one subscriber) runs N tool turns and one answer
turn, so it makes N + 1 model calls and N tool calls. The floor, measured in the same run and interleaved
with it, is those N + 1 calls streamed raw from the same engine plus N direct ``tool.run(...)`` calls.
Each model call of the scripted engine takes ``--latency-ms`` (an ``asyncio.sleep``: a fast local server).
Budget: agent time within 1.05x the floor (medians). ``--strict`` exits 1 when it is missed.

The wall-clock ratio includes the thread hand-off of every ``thread``-isolated call (the tool runs on a
worker thread, and the event loop is woken when it ends): two wake-ups per call, cheap on an idle machine
and costly on an overloaded one. ``--isolation inline`` runs the same tool in the loop's thread, which
shows the loop's own cost without that hand-off; the CPU line shows the framework's work per turn.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from typing import Any, AsyncIterator, List, Optional, Sequence, Tuple

from jarvis_core.agents import ToolUsingAgent
from jarvis_core.engine.base import InferenceEngine
from jarvis_core.events import EventBus
from jarvis_core.tools import BaseTool, ToolPolicy
from jarvis_core.types import Completion, MessageLike, StreamChunk, ToolCall, ToolSpec, Usage

BUDGET = 1.05


class Lookup(BaseTool):
    spec = ToolSpec("lookup", "Look a key up.", {
        "type": "object", "properties": {"key": {"type": "string", "maxLength": 64}}, "required": ["key"],
        "additionalProperties": False})

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    def run(self, key: str) -> str:
        time.sleep(self.seconds)
        return f"value of {key}"


class ScriptedEngine(InferenceEngine):
    """Answers ``turns`` times with one tool call, then with a final answer; each call takes ``latency``."""

    engine_id = "bench"

    def __init__(self, turns: int, latency: float) -> None:
        self.turns, self.latency = turns, latency
        self.count = 0

    def reply(self) -> Completion:
        i = self.count
        self.count += 1
        if i < self.turns:
            call = ToolCall(f"call_{i}", "lookup", json.dumps({"key": f"k{i}"}))
            return Completion(tool_calls=[call], usage=Usage(100 + 10 * i, 12), finish_reason="tool_calls")
        return Completion(content="All keys looked up.", usage=Usage(200, 8))

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


class Orchestrator(ToolUsingAgent):
    agent_id = "bench-orchestrator"


def run_agent(turns: int, latency: float, tool_s: float, isolation: str = "thread") -> Tuple[float, float]:
    bus = EventBus()
    seen: list = []
    bus.subscribe(seen.append)
    tool = Lookup(tool_s)
    tool.policy = ToolPolicy(isolation=isolation)  # type: ignore[misc]
    agent = Orchestrator(ScriptedEngine(turns, latency), model="bench", tools=[tool], bus=bus, max_turns=turns + 1)
    start, cpu = time.perf_counter(), time.process_time()
    result = agent.run("Look up every key.")
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
    assert result.stop_reason == "final" and len(result.tool_results) == turns, result
    return elapsed, cpu


def run_floor(turns: int, latency: float, tool_s: float) -> Tuple[float, float]:
    engine, tool = ScriptedEngine(turns, latency), Lookup(tool_s)

    async def calls() -> None:
        for i in range(turns + 1):
            async for _ in engine.stream_full([{"role": "user", "content": "x"}], model="bench"):
                pass
            if i < turns:
                tool.run(key=f"k{i}")

    start, cpu = time.perf_counter(), time.process_time()
    asyncio.run(calls())
    return time.perf_counter() - start, time.process_time() - cpu


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--turns", type=int, default=10)
    ap.add_argument("--latency-ms", type=float, default=20.0)
    ap.add_argument("--tool-ms", type=float, default=2.0)
    ap.add_argument("--runs", type=int, default=9)
    ap.add_argument("--isolation", choices=("thread", "inline"), default="thread")
    ap.add_argument("--strict", action="store_true")
    args = ap.parse_args(argv)
    latency, tool_s = args.latency_ms / 1000, args.tool_ms / 1000
    run_agent(2, latency, tool_s, args.isolation)  # warm-up: imports, first thread
    agent_t, floor_t = [], []
    for _ in range(args.runs):
        floor_t.append(run_floor(args.turns, latency, tool_s))
        agent_t.append(run_agent(args.turns, latency, tool_s, args.isolation))
    a, f = statistics.median(t for t, _ in agent_t), statistics.median(t for t, _ in floor_t)
    a_cpu, f_cpu = statistics.median(c for _, c in agent_t), statistics.median(c for _, c in floor_t)
    ratio = a / f
    print(f"{args.turns} tool turns + 1 answer, model call {args.latency_ms:g} ms, tool {args.tool_ms:g} ms "
          f"({args.isolation}), {args.runs} runs (medians)")
    print(f"  {'':<28}{'wall':>9}    {'cpu':>7}")
    print(f"  {'floor (raw calls + tools)':<28}{f * 1000:9.1f} ms {f_cpu * 1000:7.1f} ms")
    print(f"  {'ToolUsingAgent run':<28}{a * 1000:9.1f} ms {a_cpu * 1000:7.1f} ms")
    print(f"  {'ratio':<28}{ratio:9.3f}x   (budget {BUDGET}x)   overhead per turn: "
          f"{(a - f) / args.turns * 1000:.2f} ms wall, {(a_cpu - f_cpu) / args.turns * 1000:.2f} ms cpu")
    ok = ratio <= BUDGET
    print("  within budget" if ok else "  OVER BUDGET")
    return 0 if ok or not args.strict else 1


if __name__ == "__main__":
    sys.exit(main())
