"""ToolUsingAgent against a scripted engine (FakeEngine raises when called more often than scripted)."""

from __future__ import annotations

import asyncio
import json
import threading
import time

import pytest

from jarvis_core.agents import (
    CONTINUE_PROMPT,
    FINAL_ANSWER_PROMPT,
    LoopGuardConfig,
    RunFinished,
    RunStarted,
    TextDelta,
    ToolCallFinished,
    ToolCallsRequested,
    ToolUsingAgent,
    TurnFinished,
)
from jarvis_core.errors import EngineConnectionError
from jarvis_core.events import EventType
from jarvis_core.testing.fake_engine import FakeEngine
from jarvis_core.testing.recording_bus import RecordingBus
from jarvis_core.tools import BaseTool, ToolPolicy
from jarvis_core.types import AgentContext, Completion, Message, Role, StreamChunk, ToolCall, ToolSpec, Usage


class Calculator(BaseTool):
    spec = ToolSpec("calculator", "Evaluate arithmetic.", {
        "type": "object", "properties": {"expression": {"type": "string"}}, "required": ["expression"],
        "additionalProperties": False})

    def run(self, expression: str) -> str:
        a, b = expression.split("*")
        return str(int(a) * int(b))


class Nap(BaseTool):
    spec = ToolSpec("nap", "Sleep, then say who slept.", {
        "type": "object", "properties": {"s": {"type": "number"}, "tag": {"type": "string"}}, "required": ["s"]})

    def run(self, s: float, tag: str = "") -> str:
        time.sleep(s)
        return f"{tag}:{s}"


class Boom(BaseTool):
    spec = ToolSpec("boom", "Fails.", {"type": "object", "properties": {}})

    def run(self) -> str:
        raise ValueError("boom")


class Big(BaseTool):
    spec = ToolSpec("big", "Large output.", {"type": "object", "properties": {}})
    policy = ToolPolicy(max_output_chars=500)

    def run(self) -> str:
        return "y" * 100_000


class Delete(BaseTool):
    spec = ToolSpec("delete", "Delete a file.", {"type": "object", "properties": {"path": {"type": "string"}}})
    policy = ToolPolicy(confirm=True, side_effects="write")

    def __init__(self) -> None:
        self.ran = 0

    def run(self, path: str = "") -> str:
        self.ran += 1
        return f"deleted {path}"


class Agent(ToolUsingAgent):
    agent_id = "test-loop"


def tc(name: str, args: dict, cid: str) -> ToolCall:
    return ToolCall(cid, name, json.dumps(args))


def calls(*items: ToolCall, usage: Usage = Usage(10, 2)) -> Completion:
    return Completion(tool_calls=list(items), usage=usage, finish_reason="tool_calls")


def turn_ends(bus: RecordingBus) -> list:
    return [dict(e.data) for e in bus.of_type(EventType.AGENT_TURN_END)]


# -- the basic round trip -------------------------------------------------------------------------
def test_function_calling_round_trip():
    bus = RecordingBus()
    engine = FakeEngine([calls(tc("calculator", {"expression": "17*23"}, "call_1"), usage=Usage(50, 10)),
                         Completion(content="391", usage=Usage(70, 3))])
    result = Agent(engine, model="m", tools=[Calculator()], bus=bus).run("What is 17*23?")
    assert len(engine.calls) == 2
    assert [t["function"]["name"] if isinstance(t, dict) else t.name for t in engine.calls[0].tools] == ["calculator"]
    second = engine.calls[1].messages
    assert second[-2].role is Role.ASSISTANT and second[-2].tool_calls[0].id == "call_1"
    assert second[-1] == Message.tool("391", "call_1", "calculator")
    assert result.content == "391" and result.stop_reason == "final"
    assert result.tool_results[0].ok and result.tool_results[0].tool_call_id == "call_1"
    assert result.usage == Usage(120, 13)
    assert result.turns == 2
    assert [m.role for m in result.messages] == [Role.USER, Role.ASSISTANT, Role.TOOL, Role.ASSISTANT]
    assert result.messages[-1].content == "391"
    run_id = result.metadata["run_id"]
    assert [e.data["run_id"] for e in bus.events] == [run_id] * len(bus.events)
    assert bus.types() == [EventType.AGENT_TURN_START, EventType.TOOL_CALL_START, EventType.TOOL_CALL_END,
                           EventType.AGENT_TURN_END]
    assert turn_ends(bus)[0]["stop_reason"] == "final"


def run_with_two_naps(parallel: bool) -> tuple:
    engine = FakeEngine([calls(tc("nap", {"s": 0.3, "tag": "a"}, "a"), tc("nap", {"s": 0.3, "tag": "b"}, "b")),
                         "done"])
    agent = Agent(engine, model="m", tools=[Nap()], parallel_tools=parallel)
    started = time.monotonic()
    result = agent.run("nap twice")
    return result, time.monotonic() - started, engine


def test_parallel_calls_keep_their_order_and_overlap():
    parallel, t_parallel, engine = run_with_two_naps(True)
    serial, t_serial, _ = run_with_two_naps(False)
    for result in (parallel, serial):
        assert [(r.tool_call_id, r.content) for r in result.tool_results] == [("a", "a:0.3"), ("b", "b:0.3")]
    tool_msgs = [m for m in engine.calls[1].messages if m.role is Role.TOOL]
    assert [m.tool_call_id for m in tool_msgs] == ["a", "b"]
    assert t_serial >= 0.6
    assert t_parallel < t_serial


@pytest.mark.parametrize("call, expect", [
    (tc("nosuch", {}, "x"), "unknown tool 'nosuch'; available: calculator, boom, big"),
    (tc("calculator", {"expression": 17}, "x"), "argument 'expression' must be of type string, got integer"),
    (tc("calculator", {}, "x"), "missing required argument(s): 'expression'"),
    (tc("boom", {}, "x"), "ValueError: boom"),
])
def test_failed_calls_go_back_to_the_model_and_the_run_goes_on(call, expect):
    bus = RecordingBus()
    engine = FakeEngine([calls(call), "recovered"])
    result = Agent(engine, model="m", tools=[Calculator(), Boom(), Big()], bus=bus).run("go")
    assert result.content == "recovered" and result.stop_reason == "final"
    tool_msg = engine.calls[1].messages[-1]
    assert tool_msg.role is Role.TOOL and tool_msg.tool_call_id == "x" and expect in tool_msg.content
    assert [dict(e.data)["ok"] for e in bus.of_type(EventType.TOOL_CALL_END)] == [False]
    assert len(bus.of_type(EventType.TOOL_CALL_START)) == 1


def test_tool_output_is_capped_in_the_transcript():
    engine = FakeEngine([calls(tc("big", {}, "x")), "ok"])
    result = Agent(engine, model="m", tools=[Big()]).run("go")
    tool_msg = engine.calls[1].messages[-1]
    assert len(tool_msg.content) <= 500 and "[output truncated: 100000 characters" in tool_msg.content
    assert result.tool_results[0].truncated


# -- approval -------------------------------------------------------------------------------------
@pytest.mark.parametrize("approver, ran, text", [
    (None, 0, "needs confirmation and no approver is configured"),
    (lambda c, t: False, 0, "was not approved"),
    (lambda c, t: True, 1, "deleted /tmp/x"),
])
def test_approval(approver, ran, text):
    tool = Delete()
    engine = FakeEngine([calls(tc("delete", {"path": "/tmp/x"}, "d")), "ok"])
    result = Agent(engine, model="m", tools=[tool], approver=approver).run("clean up")
    assert tool.ran == ran
    assert text in result.tool_results[0].content
    assert result.tool_results[0].ok is bool(ran)


# -- how runs end ---------------------------------------------------------------------------------
def test_max_turns_makes_one_final_call_without_tools():
    bus = RecordingBus()
    loop = [calls(tc("calculator", {"expression": f"{i}*2"}, f"c{i}")) for i in range(3)]
    engine = FakeEngine([*loop, Completion(content="6 is my best guess", usage=Usage(5, 5))])
    result = Agent(engine, model="m", tools=[Calculator()], max_turns=3, bus=bus).run("loop forever")
    assert len(engine.calls) == 4
    assert all(c.tools for c in engine.calls[:3]) and engine.calls[3].tools is None
    assert engine.calls[3].messages[-1] == Message.user(FINAL_ANSWER_PROMPT)
    assert result.stop_reason == "max_turns" and result.content == "6 is my best guess"
    assert len(result.tool_results) == 3
    assert [e["stop_reason"] for e in turn_ends(bus)] == ["max_turns"]
    assert len(bus.of_type(EventType.AGENT_TURN_START)) == 1


def test_max_turns_without_the_final_call():
    engine = FakeEngine([calls(tc("calculator", {"expression": f"{i}*2"}, f"c{i}")) for i in range(2)])
    result = Agent(engine, model="m", tools=[Calculator()], max_turns=2, final_answer_on_max_turns=False).run("x")
    assert len(engine.calls) == 2 and result.stop_reason == "max_turns"


@pytest.mark.parametrize("fail_on", [0, 1])
def test_an_engine_error_gives_one_start_and_one_end_and_propagates(fail_on):
    bus = RecordingBus()
    script = [*[calls(tc("calculator", {"expression": "2*2"}, "c"))][:fail_on], EngineConnectionError("down")]
    agent = Agent(FakeEngine(script), model="m", tools=[Calculator()], bus=bus)
    with pytest.raises(EngineConnectionError, match="down"):
        agent.run("x")
    assert len(bus.of_type(EventType.AGENT_TURN_START)) == 1
    ends = turn_ends(bus)
    assert len(ends) == 1 and ends[0]["stop_reason"] == "error" and ends[0]["error"] == "EngineConnectionError"
    assert ends[0]["run_id"] == bus.of_type(EventType.AGENT_TURN_START)[0].data["run_id"]


async def test_a_cancelled_run_ends_with_cancelled():
    bus = RecordingBus()
    engine = FakeEngine([calls(tc("nap", {"s": 5}, "n"))])
    agent = Agent(engine, model="m", tools=[Nap()], bus=bus)
    task = asyncio.create_task(agent.arun("sleep"))
    await asyncio.sleep(0.3)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert [e["stop_reason"] for e in turn_ends(bus)] == ["cancelled"]


def test_continuation_after_length_keeps_the_callers_context():
    context = AgentContext(messages=[Message.system("Be thorough."), Message.user("earlier"),
                                     Message.assistant("noted")])
    before = context.messages
    engine = FakeEngine([
        Completion(content="The first half, ", finish_reason="length", usage=Usage(10, 100)),
        Completion(content="and the second half.", finish_reason="stop", usage=Usage(120, 20)),
    ])
    result = Agent(engine, model="m").run("write it", context)
    assert result.content == "The first half, and the second half."
    assert result.usage == Usage(130, 120)
    assert context.messages == before and len(context.messages) == 3
    second = engine.calls[1].messages
    assert second[-2] == Message.assistant("The first half, ") and second[-1] == Message.user(CONTINUE_PROMPT)
    assert engine.calls[0].messages[0] == Message.system("Be thorough.")
    assert result.messages[:4] == (Message.system("Be thorough."), Message.user("earlier"), Message.assistant("noted"),
                                   Message.user("write it"))


def test_the_loop_guard_tells_the_model_then_stops_a_model_that_persists():
    same = {"expression": "2*2"}
    engine = FakeEngine([calls(tc("calculator", same, f"c{i}")) for i in range(5)])
    bus = RecordingBus()
    result = Agent(engine, model="m", tools=[Calculator()], bus=bus, max_turns=10).run("x")
    assert result.stop_reason == "loop_guard"
    assert [r.ok for r in result.tool_results] == [True, True, True, False, False]
    assert "already called 3 times with these exact arguments" in engine.calls[4].messages[-1].content
    outcomes = [e.data["outcome"] for e in bus.of_type(EventType.TOOL_CALL_END)]
    assert outcomes == ["ok", "ok", "ok", "loop_guard", "loop_guard"]


def test_the_loop_guard_is_per_run():
    agent = Agent(FakeEngine([*(calls(tc("calculator", {"expression": "2*2"}, f"c{i}")) for i in range(3)), "a",
                              *(calls(tc("calculator", {"expression": "2*2"}, f"d{i}")) for i in range(3)), "b"]),
                  model="m", tools=[Calculator()], loop_guard=LoopGuardConfig(max_identical_calls=3))
    assert [r.ok for r in agent.run("one").tool_results] == [True] * 3
    assert [r.ok for r in agent.run("two").tool_results] == [True] * 3


def test_calls_beyond_the_per_turn_limit_are_refused():
    engine = FakeEngine([calls(*(tc("calculator", {"expression": f"{i}*1"}, f"c{i}") for i in range(3))), "ok"])
    result = Agent(engine, model="m", tools=[Calculator()], max_calls_per_turn=2).run("x")
    assert [r.ok for r in result.tool_results] == [True, True, False]
    assert "at most 2 tool calls per turn" in result.tool_results[2].content


# -- concurrency ----------------------------------------------------------------------------------
def by_input(call) -> Completion:
    """Answers by looking at the conversation: one nap tagged with the user's input, then the tool's output."""
    user = next(m.content for m in call.messages if m.role is Role.USER)
    tool = [m for m in call.messages if m.role is Role.TOOL]
    if not tool:
        return calls(tc("nap", {"s": 0.2, "tag": user}, f"id-{user}"))
    return Completion(content=f"answer for {user}: {tool[0].content}")


def test_two_concurrent_runs_on_one_agent_do_not_see_each_other():
    agent = Agent(FakeEngine([by_input] * 4), model="m", tools=[Nap()])
    results: dict = {}

    def go(name: str) -> None:
        results[name] = agent.run(name)

    threads = [threading.Thread(target=go, args=(n,)) for n in ("alpha", "beta")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for name in ("alpha", "beta"):
        r = results[name]
        assert r.content == f"answer for {name}: {name}:0.2"
        assert [t.tool_call_id for t in r.tool_results] == [f"id-{name}"]
        assert all(name in (m.content or "") or m.tool_calls for m in r.messages if m.role is not Role.ASSISTANT)
    assert results["alpha"].metadata["run_id"] != results["beta"].metadata["run_id"]


async def test_two_concurrent_async_runs_on_one_agent():
    agent = Agent(FakeEngine([by_input] * 4), model="m", tools=[Nap()])
    a, b = await asyncio.gather(agent.arun("alpha"), agent.arun("beta"))
    assert a.content == "answer for alpha: alpha:0.2" and b.content == "answer for beta: beta:0.2"
    assert [r.tool_call_id for r in a.tool_results] == ["id-alpha"]


# -- the stream of agent events -------------------------------------------------------------------
async def test_astream_announces_calls_before_they_run_and_streams_text():
    stream_answer = [StreamChunk(content="39"), StreamChunk(content="1"),
                     StreamChunk(finish_reason="stop", usage=Usage(3, 2))]
    engine = FakeEngine([calls(tc("calculator", {"expression": "17*23"}, "c1")), stream_answer])
    agent = Agent(engine, model="m", tools=[Calculator()])
    events = [e async for e in agent.astream("17*23?")]
    kinds = [type(e).__name__ for e in events]
    assert kinds == ["RunStarted", "TurnFinished", "ToolCallsRequested", "ToolCallFinished", "TextDelta", "TextDelta",
                     "TurnFinished", "RunFinished"]
    assert isinstance(events[0], RunStarted) and events[0].agent_id == "test-loop"
    requested = events[2]
    assert isinstance(requested, ToolCallsRequested) and requested.calls[0].id == "c1" and requested.turn == 1
    finished = events[3]
    assert isinstance(finished, ToolCallFinished) and finished.result.content == "391"
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "391"
    assert isinstance(events[1], TurnFinished) and events[1].finish_reason == "tool_calls"
    last = events[-1]
    assert isinstance(last, RunFinished) and last.result.content == "391"
    assert {e.run_id for e in events if hasattr(e, "run_id")} == {last.run_id}


def test_a_sync_run_works_inside_a_running_event_loop():
    agent = Agent(FakeEngine(["hello"]), model="m")

    async def inside() -> str:
        return agent.run("hi").content

    assert asyncio.run(inside()) == "hello"
