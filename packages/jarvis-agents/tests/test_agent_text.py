"""The text protocols (native_react, and orchestrator mode="text") against a scripted engine: stop always
sent, invented observations ignored, tolerant parsing, reasoning stripped first, one correction."""

from __future__ import annotations

import json

import pytest

from jarvis_agents.agents.orchestrator import OrchestratorAgent
from jarvis_agents.agents.react import ReActAgent
from jarvis_agents.tools.calculator import Calculator
from jarvis_core.errors import ConfigError
from jarvis_core.testing import FakeEngine

OPTIONS = {"stop", "response_format"}


def react(engine, **kwargs):
    return ReActAgent(engine, model="m", tools=[Calculator()], **kwargs)


def test_every_request_carries_stop_and_an_invented_observation_is_ignored():
    engine = FakeEngine([
        'Thought: add\nAction: calculator\nAction Input: {"expression": "2+2"}\nObservation: 5\nFinal Answer: 5',
        "Thought: done\nFinal Answer: 4",
    ], allowed_options=OPTIONS)
    result = react(engine).run("What is 2+2?")
    assert result.content == "4" and [r.content for r in result.tool_results] == ["4"]
    assert all("Observation:" in c.options["stop"] for c in engine.calls)
    assert "Observation: 5" not in result.messages[-3].content  # the invented part is not in the transcript
    assert result.messages[-2].content == "Observation: 4"


def test_stop_is_sent_on_the_max_turns_answer_too():
    engine = FakeEngine(['Action: calculator\nAction Input: {"expression": "1+1"}'] * 2 + ["Final Answer: 2"],
                        allowed_options=OPTIONS)
    result = react(engine, max_turns=2).run("1+1?")
    assert result.stop_reason == "max_turns" and len(engine.calls) == 3
    assert all(c.options.get("stop") for c in engine.calls)


@pytest.mark.parametrize("reply", [
    "Action: `calculator`\nAction Input: 2+2",
    "Action: calculator()\naction input: 2+2",
    "action: Calculator\nACTION INPUT: \"2+2\"",
    "**Action:** calculator\n**Action Input:** {\"expression\": \"2+2\"}",
    "Action: calculator(2+2)",
])
def test_tolerant_parsing(reply):
    engine = FakeEngine([reply, "Final Answer: 4"], allowed_options=OPTIONS)
    result = react(engine).run("2+2?")
    (tool,) = result.tool_results
    assert tool.ok and tool.content == "4"


def test_reasoning_is_stripped_before_parsing_in_both_text_protocols():
    engine = FakeEngine(['<think>Final Answer: wrong</think>Action: calculator\nAction Input: {"expression": "3*3"}',
                         "Final Answer: 9"], allowed_options=OPTIONS)
    assert react(engine).run("3*3?").content == "9"
    engine = FakeEngine(['<think>FINAL_ANSWER: wrong</think>TOOL: calculator\nINPUT: {"expression": "3*3"}',
                         "FINAL_ANSWER: 9"], allowed_options=OPTIONS)
    result = OrchestratorAgent(engine, model="m", tools=[Calculator()], mode="text").run("3*3?")
    assert result.content == "9" and result.tool_results[0].content == "9"
    assert all("OBSERVATION:" in c.options["stop"] for c in engine.calls)
    assert "TOOL: the tool name" in engine.calls[0].messages[0].content


def test_a_reply_with_neither_gets_one_correction():
    engine = FakeEngine(["The answer is four.", "Final Answer: 4"], allowed_options=OPTIONS)
    result = react(engine).run("2+2?")
    assert result.content == "4" and "neither" in engine.calls[1].messages[-1].content
    engine = FakeEngine(["It is four.", "Still four."], allowed_options=OPTIONS)
    result = react(engine).run("2+2?")
    assert result.content == "Still four." and len(engine.calls) == 2  # one correction, then announced


def test_unknown_tool_and_bad_input_reach_the_model_as_observations():
    engine = FakeEngine(["Action: nosuch\nAction Input: {}", 'Action: calculator\nAction Input: {"expr": 1}',
                         "Final Answer: gave up"], allowed_options=OPTIONS)
    result = react(engine).run("x")
    first, second = result.tool_results
    assert not first.ok and "unknown tool 'nosuch'" in first.content and "calculator" in first.content
    assert not second.ok and "expression" in second.content
    assert engine.calls[1].messages[-1].content.startswith("Observation: error")


def test_text_protocols_need_stop():
    with pytest.raises(ConfigError, match="stop"):
        react(FakeEngine([], allowed_options={"seed"}))
    with pytest.raises(ConfigError, match="stop"):
        OrchestratorAgent(FakeEngine([], allowed_options={"seed"}), model="m", mode="text")
    with pytest.raises(ConfigError, match="mode must be one of"):
        OrchestratorAgent(FakeEngine([]), model="m", mode="magic")


def test_json_input_spanning_lines():
    engine = FakeEngine(['Action: calculator\nAction Input: {\n  "expression": "6*7"\n}\nObservation: 1',
                         "Final Answer: 42"], allowed_options=OPTIONS)
    result = react(engine).run("6*7?")
    assert json.loads(engine.calls[1].messages[-2].content.split("Action Input:")[1]) == {"expression": "6*7"}
    assert result.content == "42"
