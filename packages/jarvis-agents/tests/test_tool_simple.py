"""think, and the llm tool: a sub-model call on the agent's engine whose usage counts in the run."""

from __future__ import annotations

import asyncio
import json

import pytest

from jarvis_agents.tools.llm import LLMTool
from jarvis_agents.tools.think import ThinkTool
from jarvis_agents.usage import usage_sink
from jarvis_core.agents.run import AgentRun
from jarvis_core.errors import ConfigError
from jarvis_core.testing import FakeEngine
from jarvis_core.tools import ToolContext, ToolExecutor, create_tool
from jarvis_core.types import Completion, ToolCall, Usage


def test_think_echoes():
    result = ToolExecutor([ThinkTool()]).execute(ToolCall("t", "think", json.dumps({"thought": "plan: add"})))
    assert (result.ok, result.content) == (True, "plan: add")


def test_llm_needs_an_engine_and_model():
    with pytest.raises(ConfigError, match="engine and a model"):
        LLMTool()


def test_llm_calls_the_engine_and_reports_usage_into_the_run():
    engine = FakeEngine([Completion(content="Paris", usage=Usage(7, 2))])
    tool = LLMTool(context=ToolContext(engine=engine, model="m"), max_tokens=64, system="be brief")
    run = AgentRun("run_x", "q", None)

    async def go():
        with usage_sink(run):
            return await ToolExecutor([tool]).aexecute(ToolCall("c", "llm", json.dumps({"prompt": "capital of France?"})))

    result = asyncio.run(go())
    assert (result.ok, result.content) == (True, "Paris")
    (call,) = engine.calls
    assert call.max_tokens == 64 and call.model == "m"
    assert [m.content for m in call.messages] == ["be brief", "capital of France?"]
    assert run.usage == Usage(7, 2)


def test_llm_outside_a_run_reports_nowhere():
    engine = FakeEngine([Completion(content="ok", usage=Usage(1, 1))])
    result = ToolExecutor([LLMTool(context=ToolContext(engine=engine, model="m"))]).execute(ToolCall("c", "llm", '{"prompt": "x"}'))
    assert result.ok and result.content == "ok"


def test_llm_built_from_the_config_takes_the_run_from_its_context_and_model_from_the_config(tmp_path):
    engine = FakeEngine([Completion(content="ok")])
    config = {"model": "sub", "max_tokens": 32}
    tool = create_tool("llm", config=config, engine=engine, model="main", home=tmp_path)
    assert (tool.engine, tool.model, tool.max_tokens) == (engine, "sub", 32)
    assert create_tool("llm", engine=engine, model="main").model == "main"
    with pytest.raises(ConfigError, match="'engine'"):
        create_tool("llm", config={"engine": "other"}, engine=engine, model="main")
