"""The core's ToolUsingAgent over the real llama.cpp server (SmolLM2-135M, whose template knows no tools).

The engine's ``tool_mode="auto"`` picks the core's JSON-schema tool mode, so this runs the whole core path
on a real model: the agent loop, the constrained action, its parser, the executor with schema validation,
and the history rewrite that feeds the tool result back. It asserts plumbing, not arithmetic.
"""

from __future__ import annotations

import json

import pytest

from jarvis_core.agents import Decision, ToolUsingAgent
from jarvis_core.events import EventType
from jarvis_core.testing.recording_bus import RecordingBus
from jarvis_core.tools import BaseTool, ToolPolicy
from jarvis_core.tools.schema import validate
from jarvis_core.types import Role, ToolSpec
from jarvis_engine_openai_compat.engines import LlamaCppEngine

pytestmark = pytest.mark.llamacpp


class Calculator(BaseTool):
    spec = ToolSpec("calculator", "Evaluate an arithmetic expression such as 12 * 7.", {
        "type": "object", "properties": {"expression": {"type": "string", "maxLength": 40}},
        "required": ["expression"], "additionalProperties": False})
    policy = ToolPolicy(timeout=5.0)

    def run(self, expression: str) -> str:
        allowed = set("0123456789+-*/() .")
        if not expression.strip() or not set(expression) <= allowed or "**" in expression:
            raise ValueError(f"only digits and + - * / ( ) are allowed, got {expression!r}")
        # Safe: only digits, four operators and brackets reach eval (no names, no power).
        return str(eval(expression, {"__builtins__": {}}, {}))


class FirstTurnMustCall(ToolUsingAgent):
    """The first decision must be a tool call (``tool_choice="required"``); later turns may answer."""

    agent_id = "first-turn-must-call"

    async def decide(self, run):
        choice = "required" if run.turns == 1 else "auto"
        async for event in self.call_model(run, tools=self.tool_specs(), tool_choice=choice):
            yield event
        run.decision = Decision(run.completion.content or "", run.completion.tool_calls)


def test_a_tool_loop_on_smollm2_through_the_json_schema_mode(llama_server):
    bus = RecordingBus()
    with LlamaCppEngine(host=llama_server.url) as engine:
        agent = FirstTurnMustCall(engine, model="smollm2", tools=[Calculator()], temperature=0.0, max_tokens=96,
                                  max_turns=2, bus=bus, system_prompt="You are a helpful assistant.")
        result = agent.run("What is 17 * 23?")
    assert result.stop_reason in ("final", "max_turns")
    first = result.tool_results[0]
    assert [m.role for m in result.messages[:3]] == [Role.SYSTEM, Role.USER, Role.ASSISTANT]
    call = result.messages[2].tool_calls[0]
    assert call.name == "calculator" and validate(json.loads(call.arguments), Calculator.spec.parameters) == []
    assert first.tool_call_id == call.id
    tool_msgs = [m for m in result.messages if m.role is Role.TOOL]
    assert tool_msgs[0].content == first.content
    assert result.usage.completion_tokens > 0 and result.metadata["model_calls"] >= 2
    ends = [e.data for e in bus.of_type(EventType.AGENT_TURN_END)]
    assert len(ends) == 1 and ends[0]["stop_reason"] == result.stop_reason
    assert len(bus.of_type(EventType.TOOL_CALL_END)) == len(result.tool_results)
    if first.ok and first.content.lstrip("-").isdigit():
        assert first.content in result.content  # the answer turn uses a numeric observation
