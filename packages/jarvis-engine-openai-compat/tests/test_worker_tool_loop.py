"""The worker's tool loop: control signals, budget, per-tool timeout, output cap.

Two drivers, neither of which mocks the worker:

* **Real SmolLM2 in ``json_schema`` tool mode.** SmolLM2's chat template knows no tools, so the worker asks
  for a reply constrained by a JSON schema whose only allowed call is the decision request; the server's
  grammar makes the model produce it, and the worker's real parsing path turns it into a signal.
* **A scripted llama-server** (``data/scripted_llama_server.py``) launched by the worker as its
  ``binary_path``: a real subprocess speaking llama.cpp's streamed OpenAI format that plays a script of
  tool calls, in native tool mode. It records every request body, so the tests can check what the worker
  sent back to the "model" (capped outputs, timeout messages, the remaining budget, no tools once the budget
  is spent, a byte-identical BIOS prefix on every turn).
"""

from __future__ import annotations

import datetime as dt
import json
import pathlib
import re
import sys
import threading
import time
from typing import Any, Dict, List

import pytest

from jarvis_core.errors import (
    ConflictingOptionsError,
    EngineConnectionError,
    InvalidOptionValueError,
    UsageError,
)
from jarvis_core.events import EventType
from jarvis_core.testing import installed_registry, simple_plugin
from jarvis_core.testing.recording_bus import RecordingBus
from jarvis_core.tools import BaseTool, ToolPolicy, create_tool, function_tool
from jarvis_core.types import ToolSpec
from jarvis_engine_openai_compat.worker import (
    NOT_READY,
    LlamaCppWorker,
    RequestState,
    RestartPolicy,
    ToolLimits,
    WorkerConfig,
)

DATA = pathlib.Path(__file__).parent / "data"
FIXED_NOW = dt.datetime(2025, 1, 7, 14, 5, tzinfo=dt.timezone.utc)
HANG_GUARD = 120.0
ECHO_PARAMS = {"type": "object", "properties": {"text": {"type": "string", "maxLength": 40}}, "required": ["text"],
               "additionalProperties": False}


class Tools(list):
    """Real tools (plain functions as jarvis tools) and the calls they received."""

    calls: List[str]


@pytest.fixture
def runner():
    """Real in-process tools: echo, one with a huge output, one that hangs until the test ends."""
    release = threading.Event()
    tools = Tools()
    tools.calls = []

    def echo(text: str) -> str:
        tools.calls.append(f"echo:{text}")
        return f"echo: {text}"

    def big() -> str:
        tools.calls.append("big")
        return "0123456789" * 5000

    def slow() -> str:
        tools.calls.append("slow")
        release.wait(60)
        return "finally"

    tools.append(function_tool(echo, description="Echo the text back.", parameters=ECHO_PARAMS))
    tools.append(function_tool(big, description="Return a lot of data."))
    tools.append(function_tool(slow, description="Take a long time."))
    yield tools
    release.set()


@pytest.fixture
def workers():
    made: List[LlamaCppWorker] = []
    yield made
    for w in made:
        w.stop()


def wait_result(worker: LlamaCppWorker, request_id: str):
    result = worker.wait(request_id, HANG_GUARD)
    assert result is not NOT_READY, "the request never finished"
    return result


# -- scripted llama-server -------------------------------------------------------------------------
class Scripted:
    """A scripted llama-server: ``binary`` to launch, ``model`` (the script) and the recorded requests."""

    def __init__(self, tmp_path: pathlib.Path, turns: List[List[Dict[str, Any]]]) -> None:
        self.binary = tmp_path / "llama-server"
        source = (DATA / "scripted_llama_server.py").read_text(encoding="utf-8")
        self.binary.write_text(f"#!{sys.executable}\n{source}", encoding="utf-8")
        self.binary.chmod(0o755)
        self.model = tmp_path / "script.json"
        self.model.write_text(json.dumps({"turns": turns}), encoding="utf-8")

    def requests(self) -> List[Dict[str, Any]]:
        path = pathlib.Path(str(self.model) + ".requests.jsonl")
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def scripted_worker(workers, runner, server: Scripted, *, bus: Any = None, approver: Any = None,
                    **overrides: Any) -> LlamaCppWorker:
    settings: Dict[str, Any] = dict(model_path=str(server.model), binary_path=str(server.binary), slots=1,
                                    ctx_per_slot=1024, max_tokens=64, startup_timeout=60.0)
    settings.update(overrides)
    worker = LlamaCppWorker(WorkerConfig(**settings), tools=runner, bus=bus, approver=approver,
                            clock=lambda: FIXED_NOW)
    workers.append(worker)
    return worker.start(timeout=60)


def call(name: str, **arguments: Any) -> Dict[str, Any]:
    return {"tool_call": {"name": name, "arguments": arguments}, "fragments": 3}


def test_decision_request_stops_generation_at_once(tmp_path, workers, runner):
    """The server streams a decision request, then would call echo and stall for 30 s: the worker must end
    the request as soon as the decision's arguments are complete, run nothing, and send no second turn."""
    server = Scripted(tmp_path, [[
        {"content": "I need a decision. "},
        call("decision_request", question="Deploy on Friday or Monday?", options=["Friday", "Monday"]),
        call("echo", text="never"),
        {"sleep": 30},
    ]])
    worker = scripted_worker(workers, runner, server, restart=RestartPolicy(cancel_grace=60))
    started = time.monotonic()
    assert worker.tool_mode == "native"  # auto: a server without /props capabilities handles tools itself
    handle = worker.submit("Be careful.", "When do we deploy?")
    result = wait_result(worker, handle.id)
    assert time.monotonic() - started < 25, "the worker waited for the rest of the stream"  # hang guard
    assert result.state is RequestState.COMPLETED
    assert result.stop_reason == "decision_request"
    assert [s.kind for s in result.signals] == ["decision_request"]
    assert result.signals[0].arguments == {"question": "Deploy on Friday or Monday?", "options": ["Friday", "Monday"]}
    assert result.content == "I need a decision. "
    assert runner.calls == []
    assert len(server.requests()) == 1
    assert worker.get_status(handle.id).signals == result.signals


def test_a_server_slot_that_stays_busy_after_the_stream_closed_means_a_restart(tmp_path, workers, runner):
    """The scripted server keeps its slot busy for 30 s after the worker closed the stream (as a wedged
    llama.cpp would): after ``cancel_grace`` the worker restarts it instead of reusing the slot."""
    server = Scripted(tmp_path, [[call("decision_request", question="?", options=["a"]), {"sleep": 30}]])
    worker = scripted_worker(workers, runner, server,
                             restart=RestartPolicy(cancel_grace=0.5, backoff_base=0.05))
    old_pid = worker.status().pid
    result = wait_result(worker, worker.submit(None, "Go.").id)
    assert result.state is RequestState.COMPLETED and result.stop_reason == "decision_request"
    deadline = time.monotonic() + HANG_GUARD
    while time.monotonic() < deadline and not (worker.status().healthy and worker.status().pid != old_pid):
        time.sleep(0.05)
    status = worker.status()
    assert status.healthy and status.pid != old_pid
    assert status.restart_count == 1 and status.last_error.startswith("slot_stuck: server slot 0 kept working")
    assert status.slots_used == 0


def test_non_terminal_signals_are_recorded_and_the_model_carries_on(tmp_path, workers, runner):
    server = Scripted(tmp_path, [
        [call("low_confidence", reason="the data is old"), call("echo", text="hi")],
        [{"content": "Done, with doubts."}],
    ])
    worker = scripted_worker(workers, runner, server)
    result = wait_result(worker, worker.submit(None, "Go.").id)
    assert result.state is RequestState.COMPLETED and result.content == "Done, with doubts."
    assert [(s.kind, s.arguments) for s in result.signals] == [("low_confidence", {"reason": "the data is old"})]
    assert [e.outcome for e in result.tool_trace] == ["signal", "ok"]
    second = server.requests()[1]["messages"]
    assert second[-2]["role"] == "tool" and second[-2]["content"].startswith("noted: the orchestrator received")
    assert second[-1]["content"].startswith("echo: hi")


def test_decision_request_can_be_non_terminal(tmp_path, workers, runner):
    server = Scripted(tmp_path, [[call("decision_request", question="A or B?", options=["A", "B"])],
                                 [{"content": "Going with A."}]])
    worker = scripted_worker(workers, runner, server, stop_on_decision_request=False)
    result = wait_result(worker, worker.submit(None, "Choose.").id)
    assert result.stop_reason == "stop" and result.content == "Going with A."
    assert [s.kind for s in result.signals] == ["decision_request"]
    assert len(server.requests()) == 2


def test_tool_loop_respects_budget_timeout_and_output_cap(tmp_path, workers, runner):
    server = Scripted(tmp_path, [
        [call("big")],
        [call("slow"), call("echo", text="same turn")],
        [call("echo", text="over budget")],  # must never be reached with tools: the budget is 2
        [{"content": "never"}],
    ])
    limits = ToolLimits(budget=2, per_tool_timeout=0.5, output_cap=300)
    worker = scripted_worker(workers, runner, server, tools=limits)
    handle = worker.submit("Use tools.", "Do the job.")
    result = wait_result(worker, handle.id)

    assert result.state is RequestState.COMPLETED
    assert result.iterations == 2 and result.budget_exhausted
    trace = [(e.iteration, e.name, e.outcome) for e in result.tool_trace]
    assert trace == [(1, "big", "ok"), (2, "slow", "timeout"), (2, "echo", "ok")]
    big = result.tool_trace[0]
    assert big.truncated and big.output_chars == 50_000
    assert result.tool_trace[1].detail == "error: 'slow' timed out after 0.5s"

    sent = server.requests()
    assert len(sent) == 3
    assert [bool(r.get("tools")) for r in sent] == [True, True, False]  # no tools once the budget is spent
    assert all(r["id_slot"] == 0 and r["stream"] is True for r in sent)
    capped = next(m for m in sent[1]["messages"] if m["role"] == "tool")
    assert "[output truncated: 50000 characters" in capped["content"]
    assert len(capped["content"]) <= 300 + len("\n[tool turns left: 1]")
    assert capped["content"].endswith("[tool turns left: 1]")
    tool_msgs = [m for m in sent[2]["messages"] if m["role"] == "tool"]
    assert tool_msgs[1]["content"] == "error: 'slow' timed out after 0.5s"
    assert tool_msgs[2]["content"] == "echo: same turn\n[tool turns left: 0]"
    # the last turn got the third scripted reply as plain content, since no tools were offered
    assert "over budget" not in " ".join(runner.calls)
    # BIOS first and byte-identical on every turn: the server's prefix cache keeps the whole conversation
    systems = {r["messages"][0]["content"] for r in sent}
    assert len(systems) == 1
    system = systems.pop()
    assert system.endswith("Tool turns available for this request: 2.\n\nUse tools.")
    assert "Current date and time: Tuesday 2025-01-07 14:05" in system


def test_calls_beyond_the_per_turn_cap_and_unknown_tools_get_error_results(tmp_path, workers, runner):
    server = Scripted(tmp_path, [
        [call("echo", text="1"), call("nope"), call("echo", text="3")],
        [{"content": "ok"}],
    ])
    worker = scripted_worker(workers, runner, server, tools=ToolLimits(max_calls_per_turn=2))
    result = wait_result(worker, worker.submit(None, "Go.", control_tools=False).id)
    assert [e.outcome for e in result.tool_trace] == ["ok", "error", "skipped"]
    assert "unknown tool 'nope'; available: echo, big, slow" in result.tool_trace[1].detail
    assert runner.calls == ["echo:1"]
    assert "tools" in server.requests()[0] and len(server.requests()[0]["tools"]) == 3  # echo, big, slow


def test_json_schema_calls_get_ids_that_never_repeat(tmp_path, workers, runner):
    """In json_schema mode the model sends no call ids; each call gets a fresh one (types.new_call_id), so
    two requests (or turns) never share one."""
    action = {"content": json.dumps({"name": "echo", "arguments": {"text": "hi"}})}
    server = Scripted(tmp_path, [[action], [action], [{"content": json.dumps({"content": "done"})}]])
    worker = scripted_worker(workers, runner, server, tool_mode="json_schema", slots=2)
    ids = []
    for handle in [worker.submit(None, "Go.", control_tools=False) for _ in range(2)]:
        result = wait_result(worker, handle.id)
        assert result.state is RequestState.COMPLETED and result.content == "done"
        ids += [e.call_id for e in result.tool_trace]
    assert len(ids) == 4 and len(set(ids)) == 4
    assert all(re.fullmatch(r"call_[0-9a-f]{24}", i) for i in ids)
    assert runner.calls == ["echo:hi"] * 4


def test_bad_submissions_are_errors(tmp_path, workers, runner):
    server = Scripted(tmp_path, [[{"content": "hi"}]])
    worker = scripted_worker(workers, runner, server, tool_mode="json_schema")
    with pytest.raises(LookupError, match="unknown tool 'weather'"):
        worker.submit(None, "Go.", tools=["weather"])
    with pytest.raises(ValueError, match="unknown control tool"):
        worker.submit(None, "Go.", control_tools=["panic"])
    with pytest.raises(UsageError, match="exactly one"):
        worker.submit(None, "Go.", messages=[{"role": "user", "content": "Go."}])
    with pytest.raises(ConflictingOptionsError, match="'response_format' and 'tools' cannot be used together") as info:
        worker.submit(None, "Go.", response_format={"type": "json_object"})
    assert info.value.names == ("response_format", "tools") and isinstance(info.value, ValueError)
    with pytest.raises(InvalidOptionValueError, match="option 'max_tokens' = 0 is invalid: expected a positive integer"):
        worker.submit(None, "Go.", max_tokens=0)
    handle = worker.submit(None, "Go.", response_format={"type": "json_object"}, tool_choice="none")
    assert wait_result(worker, handle.id).content == "hi"
    assert server.requests()[0]["response_format"] == {"type": "json_object"}
    assert "tools" not in server.requests()[0]
    with pytest.raises(LookupError, match="unknown worker request 'req-nope'"):
        worker.get_status("req-nope")
    worker.stop()
    with pytest.raises(EngineConnectionError, match="stopped"):
        worker.submit(None, "Go.")


# -- the core's tool contract ----------------------------------------------------------------------
class Shout(BaseTool):
    """A registered jarvis tool (as a plugin would ship it), built with create_tool."""

    spec = ToolSpec("shout", "Shout the text.", {"type": "object", "properties": {"text": {"type": "string"}},
                                                 "required": ["text"]})
    policy = ToolPolicy(timeout=120.0, max_output_chars=100_000)

    def __init__(self, suffix: str = "!") -> None:
        self.suffix = suffix

    def run(self, text: str) -> str:
        return text.upper() + self.suffix


class Launch(BaseTool):
    spec = ToolSpec("launch", "Launch the rocket.", {"type": "object", "properties": {}})
    policy = ToolPolicy(confirm=True, side_effects="write")
    launched: List[str] = []

    def run(self) -> str:
        self.launched.append("launched")
        return "launched"


def test_a_registered_tool_runs_in_the_worker_with_tool_events_and_capped_policy(tmp_path, workers):
    server = Scripted(tmp_path, [[call("shout", text="hi")], [{"content": "Shouted."}]])
    plugin = simple_plugin("shouting", tools={"shout": f"{__name__}:Shout"})
    with installed_registry(plugin):
        tool = create_tool("shout", config={"suffix": "!!"})
    bus = RecordingBus()
    worker = scripted_worker(workers, [tool], server, bus=bus, tools=ToolLimits(per_tool_timeout=5, output_cap=500))
    assert worker.executor.get("shout").policy.timeout == 5  # the worker's limits cap the tool's own policy
    handle = worker.submit(None, "Shout hi.", control_tools=False)
    result = wait_result(worker, handle.id)
    assert result.state is RequestState.COMPLETED and result.content == "Shouted."
    assert [(e.name, e.outcome, e.output_chars) for e in result.tool_trace] == [("shout", "ok", 4)]
    tool_msg = next(m for m in server.requests()[1]["messages"] if m["role"] == "tool")
    assert tool_msg["content"].startswith("HI!!")
    starts, ends = bus.of_type(EventType.TOOL_CALL_START), bus.of_type(EventType.TOOL_CALL_END)
    assert [(e.data["name"], e.data["run_id"]) for e in starts] == [("shout", handle.id)]
    assert [(e.data["name"], e.data["ok"], e.data["run_id"]) for e in ends] == [("shout", True, handle.id)]


def test_a_tool_that_needs_confirmation_runs_only_when_approved(tmp_path, workers):
    turns = [[call("launch")], [{"content": "Done."}]]
    Launch.launched.clear()
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    denied = scripted_worker(workers, [Launch()], Scripted(tmp_path / "a", turns))
    result = wait_result(denied, denied.submit(None, "Launch.", control_tools=False).id)
    assert [(e.outcome, e.detail) for e in result.tool_trace] == [
        ("denied", "error: denied: 'launch' needs confirmation and no approver is configured")]
    assert Launch.launched == []
    denied.stop()
    asked: List[str] = []
    approved = scripted_worker(workers, [Launch()], Scripted(tmp_path / "b", turns),
                               approver=lambda c, tool: asked.append(c.name) or True)
    result = wait_result(approved, approved.submit(None, "Launch.", control_tools=False).id)
    assert [e.outcome for e in result.tool_trace] == ["ok"] and asked == ["launch"] and Launch.launched == ["launched"]


def test_cancel_abandons_a_running_tool(tmp_path, workers, runner):
    server = Scripted(tmp_path, [[call("slow")], [{"content": "never"}]])
    worker = scripted_worker(workers, runner, server)
    handle = worker.submit(None, "Go.", control_tools=False)
    deadline = time.monotonic() + HANG_GUARD
    while worker.get_status(handle.id).state is not RequestState.TOOL_RUNNING and time.monotonic() < deadline:
        time.sleep(0.02)
    assert worker.cancel(handle.id)
    result = wait_result(worker, handle.id)
    assert result.state is RequestState.CANCELED
    while worker.status().slots_used and time.monotonic() < deadline:  # the request thread winds down
        time.sleep(0.02)
    assert [(e.name, e.outcome) for e in worker.get_status(handle.id).tool_trace] == [("slow", "canceled")]
    assert len(server.requests()) == 1


# -- real SmolLM2, json_schema tool mode -----------------------------------------------------------
def test_smollm2_decision_request_through_the_json_schema_mode(smollm2, workers, runner):
    config = WorkerConfig(model_path=smollm2, slots=1, ctx_per_slot=2048, threads=2, max_tokens=160, temperature=0.0,
                          tool_mode="json_schema", tools=ToolLimits(budget=2, max_calls_per_turn=1))
    worker = LlamaCppWorker(config, tools=runner, clock=lambda: FIXED_NOW)
    workers.append(worker)
    worker.start(timeout=180)
    handle = worker.submit("You are a helpful assistant.", "Should we deploy on Friday or on Monday? Ask the user.",
                           tools=(), control_tools=("decision_request",), tool_choice="required")
    result = wait_result(worker, handle.id)
    assert result.state is RequestState.COMPLETED, (result.reason, result.detail)
    assert result.stop_reason == "decision_request"
    assert [s.kind for s in result.signals] == ["decision_request"]
    assert isinstance(result.signals[0].arguments.get("question"), str)
    assert isinstance(result.signals[0].arguments.get("options"), list)
    assert result.iterations == 1 and runner.calls == []
