"""The worker's tools (core tools through the core executor, capped by the worker's limits), argument
checks, control-tool signals and JSON-schema tool turns."""

from __future__ import annotations

import json
import threading

import pytest

from jarvis_core.tools import ToolExecutor, ToolPolicy, check_tool, function_tool, json_mode
from jarvis_core.tools.output import cap_output
from jarvis_core.tools.schema import check_arguments
from jarvis_core.types import ToolCall, ToolSpec
from jarvis_engine_openai_compat.worker import ToolLimits
from jarvis_engine_openai_compat.worker.signals import (
    CONTROL_TOOLS,
    control_tool_specs,
    first_decision,
    signal_from_call,
)
from jarvis_engine_openai_compat.worker.tools import capped

CITY = ToolSpec("weather", "The weather.", {
    "type": "object",
    "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
    "required": ["city"],
    "additionalProperties": False,
})


def call(name: str, args: object = None, cid: str = "c1") -> ToolCall:
    return ToolCall(cid, name, json.dumps(args or {}))


@pytest.fixture
def tools():
    release = threading.Event()
    made = [
        function_tool(lambda city, days=1: f"sunny in {city} for {days} day(s)", name="weather",
                      parameters=dict(CITY.parameters)),
        function_tool(lambda: "x" * 50_000, name="big"),
        function_tool(lambda: release.wait(30) and "late", name="slow"),
        function_tool(lambda: 1 / 0, name="broken"),
        function_tool(lambda: {"a": [1, 2]}, name="structured"),
    ]
    yield made
    release.set()


def executor_for(tools, **limits) -> ToolExecutor:
    return ToolExecutor(capped(tools, ToolLimits(**limits)))


def test_runs_a_tool_with_checked_arguments(tools):
    result = executor_for(tools).execute(call("weather", {"city": "Oslo", "days": 2}))
    assert result.ok and result.content == "sunny in Oslo for 2 day(s)" and not result.truncated
    bad = executor_for(tools).execute(call("weather", {"city": 3}))
    assert not bad.ok and "'city' must be of type string" in bad.content


def test_the_worker_limits_cap_each_policy_but_never_loosen_it(tools):
    strict = function_tool(lambda: "x", name="strict", policy=ToolPolicy(timeout=1.0, max_output_chars=100))
    loose = function_tool(lambda: "x", name="loose", policy=ToolPolicy(timeout=None, max_output_chars=100_000))
    kept, cut = capped([strict, loose], ToolLimits(per_tool_timeout=5.0, output_cap=500))
    assert kept is strict
    assert (cut.policy.timeout, cut.policy.max_output_chars) == (5.0, 500) and cut.spec is loose.spec
    assert check_tool(cut) is cut and cut.run() == "x"


def test_output_over_the_cap_is_cut_with_a_marker(tools):
    result = executor_for(tools, output_cap=500).execute(call("big"))
    assert result.ok and result.truncated and len(result.content) <= 500
    assert "[output truncated: 50000 characters" in result.content


def test_a_tool_over_the_worker_timeout_ends_as_timeout(tools):
    result = executor_for(tools, per_tool_timeout=0.3).execute(call("slow"))
    assert not result.ok and result.content == "error: 'slow' timed out after 0.3s"


def test_a_raising_tool_becomes_an_error_result(tools):
    result = executor_for(tools).execute(call("broken"))
    assert not result.ok and result.content == "error: ZeroDivisionError: division by zero"


def test_non_string_results_become_json(tools):
    assert json.loads(executor_for(tools).execute(call("structured")).content) == {"a": [1, 2]}


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
    assert signal_from_call(ToolCall("c3", "low_confidence", '["old data"]'), 1).arguments == {"raw": '["old data"]'}
    assert signal_from_call(ToolCall("c4", "low_confidence", ""), 1).arguments == {}


def test_first_decision_waits_for_complete_arguments():
    partial = ToolCall("c1", "decision_request", '{"question": "Ship?", "opt')
    assert first_decision([partial]) is None
    done = ToolCall("c1", "decision_request", '{"question": "Ship?", "options": []}')
    assert first_decision([call("weather", {"city": "x"}), done]) is done
    not_an_object = ToolCall("c1", "decision_request", '["Ship?", "yes", "no"]')
    assert first_decision([not_an_object]) is None  # the arguments of a call are a JSON object or nothing


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
