"""``orchestrator`` mode ``auto`` on vLLM: native tool calls first (vLLM reports no per-model support); a
server started without tool support refuses them, and the run falls back to JSON-schema actions, announced.
The real vLLM engine talks to a loopback server replaying vLLM's answers, including its actual refusal."""

from __future__ import annotations

import asyncio
import json
import warnings

import pytest

from jarvis_agents.agents.modes import choose_mode
from jarvis_agents.agents.orchestrator import OrchestratorAgent
from jarvis_agents.tools.calculator import Calculator
from jarvis_core.agents import Notice
from jarvis_core.testing import Exchange, ReplayServer

engines = pytest.importorskip("jarvis_engine_openai_compat.engines.vllm", reason="the vLLM engine is in jarvis-engine-openai-compat")

VLLM_NO_TOOLS = {"object": "error", "message": '"auto" tool choice requires --enable-auto-tool-choice and '
                 "--tool-call-parser to be set", "type": "BadRequestError", "param": None, "code": 400}


def _reply(text: str) -> list:
    """vLLM's streamed answer (the agent streams its model calls)."""
    chunks = [{"id": "c", "object": "chat.completion.chunk", "model": "m",
               "choices": [{"index": 0, "delta": {"role": "assistant", "content": text}, "finish_reason": None}]},
              {"id": "c", "object": "chat.completion.chunk", "model": "m",
               "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
               "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}]
    return [f"data: {json.dumps(c)}" for c in chunks] + ["data: [DONE]"]


def _has_tools(body) -> bool:
    return isinstance(body, dict) and "tools" in body


def _constrained(body) -> bool:
    return isinstance(body, dict) and "tools" not in body and "response_format" in body


def _plain(body) -> bool:
    return isinstance(body, dict) and "tools" not in body and "response_format" not in body


def test_native_first_then_an_announced_fall_back_to_structured_when_vllm_refuses_tools():
    exchanges = [
        Exchange("POST", "/v1/chat/completions", match=_has_tools, status=400, json=VLLM_NO_TOOLS, times=1),
        Exchange("POST", "/v1/chat/completions", match=_plain, sse=_reply("I cannot use tools."), times=1),
        Exchange("POST", "/v1/chat/completions", match=_constrained,
                 sse=_reply(json.dumps({"name": "calculator", "arguments": {"expression": "6*7"}})), times=1),
        Exchange("POST", "/v1/chat/completions", match=_plain, sse=_reply("6 times 7 is 42."), times=1),
    ]
    with ReplayServer(exchanges) as server:
        engine = engines.VLLMEngine(host=server.url)
        assert choose_mode(engine, "m")[0] == "function_calling"
        agent = OrchestratorAgent(engine, model="m", tools=[Calculator()])

        async def run():
            return [e async for e in agent.astream("what is 6 times 7?")]

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # the engine's own "without its 1 tool" warning
            events = asyncio.run(run())
        bodies = [r.json for r in server.requests if r.path == "/v1/chat/completions"]
        engine.close()
    notices = [e.message for e in events if isinstance(e, Notice) and e.kind == "mode"]
    assert notices[0].startswith("orchestrator mode auto chose function_calling: native tool calls: vllm speaks OpenAI's tool calls")
    assert notices[1] == "orchestrator mode auto falls back to structured: the server refused native tools for this model"
    result = events[-1].result
    assert result.content == "6 times 7 is 42." and [r.content for r in result.tool_results] == ["42"]
    assert "tools" in bodies[0] and "tools" not in bodies[1] and "response_format" in bodies[2]
    # the tool-less answer is not kept in the history of the structured turn
    assert all("I cannot use tools." not in json.dumps(m) for m in bodies[2]["messages"])
    # the same agent (and any new one on this engine) now starts structured
    assert agent.resolved_mode()[0] == "structured" and choose_mode(engine, "m")[0] == "structured"
