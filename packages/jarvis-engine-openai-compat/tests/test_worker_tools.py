"""Tool running under limits, argument checks, control-tool signals and JSON-schema tool turns."""

from __future__ import annotations

import json
import threading

import pytest

from jarvis_core.tools import json_mode
from jarvis_core.tools.output import cap_output
from jarvis_core.tools.schema import check_arguments
from jarvis_core.types import ToolCall, ToolResult, ToolSpec
from jarvis_engine_openai_compat.worker.signals import (
    CONTROL_TOOLS,
    control_tool_specs,
    first_decision,
    signal_from_call,
)
from jarvis_engine_openai_compat.worker.tools import (
    InProcessToolRunner,
    ToolRunner,
    run_tool_call,
)

CITY = ToolSpec("weather", "The weather.", {
    "type": "object",
    "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
    "required": ["city"],
    "additionalProperties": False,
})


def call(name: str, args: object = None, cid: str = "c1") -> ToolCall:
    return ToolCall(cid, name, json.dumps(args or {}))


@pytest.fixture
def runner():
    release = threading.Event()
    r = InProcessToolRunner()
    r.register(lambda city, days=1: f"sunny in {city} for {days} day(s)", name="weather",
               parameters=dict(CITY.parameters))
    r.register(lambda: "x" * 50_000, name="big")
    r.register(lambda: release.wait(30) and "late", name="slow")
    r.register(lambda: 1 / 0, name="broken")
    r.register(lambda: {"a": [1, 2]}, name="structured")
    yield r
    release.set()


def test_the_default_runner_is_a_tool_runner(runner):
    assert isinstance(runner, ToolRunner)
    assert [s.name for s in runner.tool_specs()] == ["weather", "big", "slow", "broken", "structured"]


def test_runs_a_tool_with_checked_arguments(runner):
    args, problem = check_arguments(CITY.parameters, '{"city": "Oslo", "days": 2}')
    assert problem == ""
    run = run_tool_call(runner, call("weather", args), args, timeout=5, output_cap=1000)
    assert run.outcome == "ok"
    assert run.result.content == "sunny in Oslo for 2 day(s)"
    assert not run.result.truncated


def test_output_over_the_cap_is_cut_with_a_marker(runner):
    run = run_tool_call(runner, call("big"), {}, timeout=5, output_cap=500)
    assert run.outcome == "ok"
    assert len(run.result.content) <= 500
    assert run.result.truncated
    assert run.output_chars == 50_000
    assert "[output truncated: 50000 characters" in run.result.content


def test_a_tool_over_its_timeout_ends_as_timeout(runner):
    run = run_tool_call(runner, call("slow"), {}, timeout=0.3, output_cap=500)
    assert run.outcome == "timeout"
    assert not run.result.ok
    assert "timed out after 0.3s" in run.result.content


def test_cancel_ends_a_running_tool(runner):
    cancel = threading.Event()
    threading.Timer(0.2, cancel.set).start()
    run = run_tool_call(runner, call("slow"), {}, timeout=30, output_cap=500, cancel=cancel)
    assert run.outcome == "canceled"


def test_a_raising_tool_becomes_an_error_result(runner):
    run = run_tool_call(runner, call("broken"), {}, timeout=5, output_cap=500)
    assert run.outcome == "error"
    assert run.result.content == "error: ZeroDivisionError: division by zero"


def test_non_string_results_become_json(runner):
    run = run_tool_call(runner, call("structured"), {}, timeout=5, output_cap=500)
    assert json.loads(run.result.content) == {"a": [1, 2]}


def test_a_runner_returning_a_failed_result_keeps_it():
    class Failing:
        def tool_specs(self):
            return []

        def run(self, call, arguments, *, timeout):
            return ToolResult(call.id, call.name, "nope", ok=False)

    run = run_tool_call(Failing(), call("x"), {}, timeout=5, output_cap=500)
    assert run.outcome == "error" and run.result.content == "nope"


@pytest.mark.parametrize("raw, problem", [
    ("{not json", "not valid JSON"),
    ("[1, 2]", "must be a JSON object"),
    ('{"days": 2}', "missing required argument(s): 'city'"),
    ('{"city": "Oslo", "mood": 1}', "unknown argument 'mood'"),
    ('{"city": 3}', "'city' must be of type string"),
    ('{"city": "x", "days": true}', "'days' must be of type integer"),
])
def test_bad_arguments_are_reported(raw, problem):
    args, text = check_arguments(CITY.parameters, raw)
    assert args is None
    assert problem in text


def test_register_rejects_bad_and_duplicate_names(runner):
    with pytest.raises(ValueError, match="already registered"):
        runner.register(lambda: 1, name="weather")
    with pytest.raises(ValueError, match="tool name"):
        runner.register(lambda: 1, name="two words")


def test_cap_output_leaves_short_text_alone():
    assert cap_output("short", 100) == ("short", False)


# -- control tools -------------------------------------------------------------------------------
def test_control_tools_are_the_five_signals():
    assert list(CONTROL_TOOLS) == ["low_confidence", "needs_external_info", "needs_stronger_reasoner",
                                   "tool_limits_reached", "decision_request"]
    assert [s.name for s in control_tool_specs(["decision_request"])] == ["decision_request"]
    with pytest.raises(ValueError, match="unknown control tool 'nope'"):
        control_tool_specs(["nope"])


def test_signal_from_call_keeps_arguments_and_survives_bad_json():
    sig = signal_from_call(call("decision_request", {"question": "Ship?", "options": ["yes", "no"]}), 2)
    assert sig.kind == "decision_request"
    assert sig.arguments == {"question": "Ship?", "options": ["yes", "no"]}
    assert sig.iteration == 2 and sig.tool_call_id == "c1"
    assert signal_from_call(ToolCall("c2", "low_confidence", "{oops"), 1).arguments == {"raw": "{oops"}


def test_first_decision_waits_for_complete_arguments():
    partial = ToolCall("c1", "decision_request", '{"question": "Ship?", "opt')
    assert first_decision([partial]) is None
    done = ToolCall("c1", "decision_request", '{"question": "Ship?", "options": []}')
    assert first_decision([call("weather", {"city": "x"}), done]) is done


def test_while_streaming_a_decision_needs_its_arguments_or_a_later_call():
    header_only = ToolCall("c1", "decision_request", "{}")  # name streamed, arguments not yet
    assert first_decision([header_only], streaming=True) is None
    assert first_decision([header_only]) is header_only  # at the end of the turn it counts as it is
    assert first_decision([header_only, call("echo", {"text": "x"}, "c2")], streaming=True) is header_only
    half = ToolCall("c1", "decision_request", '{"question": "Ship?"}')
    assert first_decision([half], streaming=True) is None
    full = ToolCall("c1", "decision_request", '{"question": "Ship?", "options": ["a"]}')
    assert first_decision([full], streaming=True) is full


# -- JSON-schema tool mode (the core's, as the worker uses it) ------------------------------------
def test_turn_schema_lists_exactly_the_offered_tools():
    fmt = json_mode.response_format([CITY, CONTROL_TOOLS["decision_request"]], answer=False)
    assert fmt["type"] == "json_schema"
    branches = fmt["json_schema"]["schema"]["anyOf"]
    assert [b["properties"]["name"]["const"] for b in branches] == ["weather", "decision_request"]
    assert branches[0]["properties"]["arguments"] == dict(CITY.parameters)
    with_answer = json_mode.response_format([CITY], answer=True)["json_schema"]["schema"]["anyOf"]
    assert with_answer[-1]["required"] == ["content"]


def test_parse_action_reads_a_call_with_the_worker_id():
    action = json_mode.parse_action('{"name": "weather", "arguments": {"city": "Paris"}}', ["weather"],
                                    call_id="call_3_0")
    assert action.problem == ""
    assert action.tool_calls == (ToolCall("call_3_0", "weather", '{"city": "Paris"}'),)


@pytest.mark.parametrize("text", ['{"name": "weather", "argu', "plain words", "[1]"])
def test_parse_action_never_raises_on_bad_output(text):
    action = json_mode.parse_action(text, ["weather"])
    assert action.tool_calls == ()
    assert action.content == text
    assert action.problem
