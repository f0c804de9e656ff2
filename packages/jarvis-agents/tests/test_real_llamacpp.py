"""orchestrator against the REAL llama.cpp server (SmolLM2-135M through xllamacpp), whose chat template has
no tool support. The plumbing is asserted, not the model's arithmetic: auto mode picks structured and says
why; in structured mode every constrained turn parses, the calculator runs with schema-valid arguments,
the run ends with a stated stop reason, and when the calculator returned a number the answer contains it.
The control: the same request without the schema gives a different output, so a server that ignored the
schema could not pass."""

from __future__ import annotations

import asyncio
import json

import pytest

from jarvis_agents.agents.orchestrator import OrchestratorAgent
from jarvis_agents.agents.structured import constrained_history
from jarvis_agents.tools.calculator import Calculator
from jarvis_core import create_engine
from jarvis_core.agents import Notice, RunFinished, ToolCallFinished, ToolCallsRequested, TurnFinished
from jarvis_core.events import EventBus, EventType
from jarvis_core.tools import validate
from jarvis_core.tools.json_mode import response_format
from jarvis_core.types import Message

pytestmark = [pytest.mark.llamacpp, pytest.mark.slow]

QUESTION = "What is 17 * 23?"
SYSTEM = "You are a helpful assistant."


@pytest.fixture
def engine(llama_url):
    with create_engine("llamacpp", host=llama_url) as eng:
        yield eng


def run_events(agent, question):
    async def collect():
        return [e async for e in agent.astream(question)]

    return asyncio.run(collect())


def test_auto_mode_picks_structured_and_says_why(engine):
    bus = EventBus()
    chosen = []
    bus.subscribe(chosen.append, EventType.AGENT_MODE_CHOSEN)
    agent = OrchestratorAgent(engine, model="smollm2", tools=[Calculator()], bus=bus, temperature=0, max_turns=3,
                              system_prompt=SYSTEM)
    events = run_events(agent, QUESTION)
    mode = [e for e in events if isinstance(e, Notice) and e.kind == "mode"]
    assert len(mode) == 1 and "chose structured" in mode[0].message
    assert "supports_tools=false" in mode[0].message  # read from the server's /props, not assumed
    assert [e.data["mode"] for e in chosen] == ["structured"]


def test_structured_calculator_end_to_end(engine):
    calc = Calculator()
    agent = OrchestratorAgent(engine, model="smollm2", tools=[calc], mode="structured", temperature=0, max_turns=3,
                              system_prompt=SYSTEM)
    events = run_events(agent, QUESTION)
    problems = [e for e in events if isinstance(e, Notice) and e.kind in ("parse_retry", "error")]
    assert problems == [], [p.message for p in problems]  # every constrained turn parsed
    (finished,) = [e for e in events if isinstance(e, RunFinished)]
    result = finished.result
    assert result.stop_reason in ("final", "max_turns")
    assert sum(isinstance(e, TurnFinished) for e in events) >= 1
    calls = {c.id: c for e in events if isinstance(e, ToolCallsRequested) for c in e.calls}
    results = [e.result for e in events if isinstance(e, ToolCallFinished)]
    assert calls and all(c.name == "calculator" for c in calls.values()), "the model never called the calculator"
    for call in calls.values():
        assert validate(json.loads(call.arguments), calc.spec.parameters) == []  # schema-valid arguments
    ok = [r for r in results if r.ok and r.name == "calculator" and r.tool_call_id in calls]
    assert ok, f"no calculator call succeeded: {[(r.ok, r.content) for r in results]}"
    numbers = [r.content for r in ok if r.content.lstrip("-").replace(".", "", 1).isdigit()]
    if numbers:
        # A successful call is followed by an answer turn that cannot call tools, so the run ends final,
        # and that answer carries the calculator's number.
        assert result.stop_reason == "final", result.stop_reason
        assert numbers[-1] in result.content, (numbers, result.content)


def test_the_schema_is_enforced_control(engine):
    """The same first request with and without the constraint: only the constrained reply is an action."""
    specs = [Calculator.spec]
    messages = constrained_history([Message.system(SYSTEM), Message.user(QUESTION)], specs)
    fmt = response_format(specs, max_string_length=256)
    constrained = engine.generate(messages, model="smollm2", temperature=0, max_tokens=128, response_format=fmt)
    free = engine.generate(messages, model="smollm2", temperature=0, max_tokens=128)
    action = json.loads(constrained.content)
    assert set(action) in ({"name", "arguments"}, {"content"})
    assert free.content != constrained.content
