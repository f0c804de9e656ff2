"""orchestrator mode auto (the choice is announced, never silent), function calling with the llm tool's
usage counted, and simple."""

from __future__ import annotations

import json

import pytest

from jarvis_agents.agents.modes import choose_mode
from jarvis_agents.agents.orchestrator import OrchestratorAgent
from jarvis_agents.agents.simple import SimpleAgent
from jarvis_agents.tools.calculator import Calculator
from jarvis_agents.tools.llm import LLMTool
from jarvis_core.agents import Notice
from jarvis_core.errors import ConfigError
from jarvis_core.events import EventBus, EventType
from jarvis_core.testing import FakeEngine
from jarvis_core.tools import ToolContext
from jarvis_core.types import Completion, ToolCall, Usage


class ReportingEngine(FakeEngine):
    """A scripted engine that, like Ollama or llama.cpp, says whether the model supports tools."""

    def __init__(self, *args, tools_supported, **kwargs):
        super().__init__(*args, **kwargs)
        self.tools_supported = tools_supported
        self.asked = 0

    def supports_tools(self, model):
        self.asked += 1
        return self.tools_supported


def events_of(agent, question):
    import asyncio

    async def collect():
        return [e async for e in agent.astream(question)]

    return asyncio.run(collect())


def test_auto_picks_structured_and_says_so():
    engine = ReportingEngine([json.dumps({"content": "hi"})] * 2, tools_supported=False,
                             allowed_options={"response_format", "stop"})
    bus = EventBus()
    chosen = []
    bus.subscribe(chosen.append, EventType.AGENT_MODE_CHOSEN)
    agent = OrchestratorAgent(engine, model="m", tools=[Calculator()], bus=bus)
    notices = [e for e in events_of(agent, "hello") if isinstance(e, Notice)]
    assert notices[0].kind == "mode" and "structured" in notices[0].message and "no native tool" in notices[0].message
    assert [(e.data["mode"], e.data["model"]) for e in chosen] == [("structured", "m")]
    assert "response_format" in engine.calls[0].options
    agent.run("again")
    assert engine.asked == 1 and len(chosen) == 2  # asked once per agent, announced on every run


def test_auto_picks_native_when_the_engine_says_so_and_react_as_last_resort():
    engine = ReportingEngine([], tools_supported=True, allowed_options={"response_format", "stop"})
    assert choose_mode(engine, "m")[0] == "function_calling"
    engine = ReportingEngine([], tools_supported=False, allowed_options={"stop"})
    assert choose_mode(engine, "m")[0] == "react"
    with pytest.raises(ConfigError, match="no tool mode works"):
        choose_mode(ReportingEngine([], tools_supported=False, allowed_options=set()), "m")
    unknown = FakeEngine([], allowed_options={"response_format"})
    mode, reason = choose_mode(unknown, "m")
    assert mode == "structured" and "does not report tool support" in reason


def test_function_calling_round_trip_with_the_llm_tool_usage_counted():
    engine = FakeEngine([
        Completion(tool_calls=[ToolCall("c1", "llm", json.dumps({"prompt": "capital of France?"})),
                               ToolCall("c2", "calculator", json.dumps({"expression": "17*23"}))],
                   usage=Usage(10, 4)),
        Completion(content="Paris", usage=Usage(3, 1)),          # the llm tool's sub-call
        Completion(content="Paris; 391", usage=Usage(30, 5)),
    ])
    agent = OrchestratorAgent(engine, model="m", mode="function_calling",
                              tools=[LLMTool(context=ToolContext(engine=engine), model="sub"), Calculator()], parallel_tools=False)
    result = agent.run("two questions")
    assert result.content == "Paris; 391" and result.stop_reason == "final"
    assert [(r.tool_call_id, r.content) for r in result.tool_results] == [("c1", "Paris"), ("c2", "391")]
    assert result.usage == Usage(43, 10)  # both turns plus the sub-model call
    assert engine.calls[0].tools and engine.calls[1].model == "sub"
    assert [m.tool_call_id for m in engine.calls[2].messages if m.tool_call_id] == ["c1", "c2"]


def test_simple_is_one_call_and_refuses_tools():
    engine = FakeEngine([Completion(content="Hi there", usage=Usage(2, 2))])
    result = SimpleAgent(engine, model="m", system_prompt="be kind", temperature=0.2, max_tokens=9).run("hi")
    assert (result.content, result.turns, result.usage) == ("Hi there", 1, Usage(2, 2))
    (call,) = engine.calls
    assert (call.temperature, call.max_tokens, call.messages[0].content) == (0.2, 9, "be kind")
    with pytest.raises(ConfigError, match="does not use tools"):
        SimpleAgent(engine, model="m", tools=[Calculator()])


def test_tool_support_from_ollama_capabilities_and_cloud():
    class OllamaLike(FakeEngine):
        def capabilities(self, model):
            return ("completion", "tools") if model == "qwen3" else ("completion",)

    engine = OllamaLike([], allowed_options={"stop"})
    assert choose_mode(engine, "qwen3")[0] == "function_calling"
    mode, reason = choose_mode(engine, "gemma")
    assert mode == "react" and "capabilities as completion" in reason
    assert choose_mode(FakeEngine([], engine_id="cloud"), "gpt")[0] == "function_calling"
