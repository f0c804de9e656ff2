"""orchestrator in structured mode against a scripted engine (which fails when called more often than
scripted): the request shape, the answer turn, the repair of a cut-off reply, and concurrency."""

from __future__ import annotations

import json
import threading

from jarvis_agents.agents.orchestrator import OrchestratorAgent
from jarvis_agents.tools.calculator import Calculator
from jarvis_agents.tools.think import ThinkTool
from jarvis_core.events import EventBus, EventType
from jarvis_core.testing import FakeEngine
from jarvis_core.types import Completion, Usage

OPTIONS = {"stop", "response_format", "seed"}


def call_json(expression: str) -> str:
    return json.dumps({"name": "calculator", "arguments": {"expression": expression}})


def agent(engine, **kwargs):
    return OrchestratorAgent(engine, model="m", tools=[Calculator(), ThinkTool()], mode="structured", **kwargs)


def strings_without_max_length(node):
    if isinstance(node, dict):
        if node.get("type") == "string" and "maxLength" not in node and "const" not in node and "enum" not in node:
            yield node
        for value in node.values():
            yield from strings_without_max_length(value)
    elif isinstance(node, list):
        for value in node:
            yield from strings_without_max_length(value)


def test_request_shape_answer_turn_and_usage():
    engine = FakeEngine([Completion(content=call_json("17*23"), usage=Usage(10, 5)),
                         Completion(content="17 * 23 = 391", usage=Usage(20, 6))], allowed_options=OPTIONS)
    result = agent(engine).run("What is 17 * 23?")
    assert (result.content, result.stop_reason) == ("17 * 23 = 391", "final")
    assert result.usage == Usage(30, 11) and [r.content for r in result.tool_results] == ["391"]
    decision, answer = engine.calls
    fmt = decision.options["response_format"]
    assert fmt["type"] == "json_schema" and "schema" not in fmt  # the nested form, never the top-level one
    schema = fmt["json_schema"]["schema"]
    names = [b["properties"]["name"]["const"] for b in schema["anyOf"] if "name" in b["properties"]]
    assert names == ["calculator", "think"]
    assert list(strings_without_max_length(schema)) == []
    assert decision.tools is None and "calculator" in decision.messages[0].content
    # The answer turn cannot call a tool again: no schema, no tools, no tool note.
    assert "response_format" not in answer.options and answer.tools is None
    assert all("You can use these tools" not in (m.content or "") for m in answer.messages)
    assert answer.messages[-1].content.startswith("calculator(17*23) returned: 391\n")
    assert all("{" not in (m.content or "") for m in answer.messages)  # no JSON call for the model to imitate
    # The transcript keeps the real shape: an assistant call, then the tool message with its id.
    call_msg, tool_msg = result.messages[-3], result.messages[-2]
    assert call_msg.tool_calls[0].name == "calculator" and tool_msg.tool_call_id == call_msg.tool_calls[0].id


def test_direct_answer_and_constrained_answer_style():
    engine = FakeEngine([json.dumps({"content": "Hello!"})], allowed_options=OPTIONS)
    assert agent(engine).run("hi").content == "Hello!"
    engine = FakeEngine([call_json("2+2"), json.dumps({"content": "four"})], allowed_options=OPTIONS)
    result = agent(engine, structured_answer="constrained").run("2+2?")
    assert result.content == "four"
    branches = engine.calls[1].options["response_format"]["json_schema"]["schema"]
    assert "anyOf" not in branches and set(branches["properties"]) == {"content"}


def test_a_failed_call_gets_another_decision_turn():
    engine = FakeEngine([call_json("1/0"), call_json("1/2"), "0.5"], allowed_options=OPTIONS)
    result = agent(engine).run("1/2?")
    assert [r.ok for r in result.tool_results] == [False, True] and result.content == "0.5"
    assert "response_format" in engine.calls[1].options  # still constrained after the error
    assert "division by zero" in engine.calls[1].messages[-1].content


def test_cut_off_reply_is_retried_once_then_reported_never_returned():
    fragment = '{"name": "calculator", "arguments": {"expression": "17*'
    engine = FakeEngine([Completion(content=fragment, finish_reason="length", usage=Usage(5, 256)),
                         Completion(content=fragment, finish_reason="length", usage=Usage(5, 512))],
                        allowed_options=OPTIONS)
    bus = EventBus()
    ends = []
    bus.subscribe(ends.append, EventType.AGENT_TURN_END)
    result = agent(engine, bus=bus).run("What is 17 * 23?")
    assert result.stop_reason == "error" and result.content == "" and "cut off" in result.metadata["error"]
    assert fragment not in result.content and result.tool_results == ()
    assert [c.max_tokens for c in engine.calls] == [256, 512]
    assert result.usage == Usage(10, 768)
    assert [e.data["stop_reason"] for e in ends] == ["error"]


def test_cut_off_retry_doubles_the_agents_own_max_tokens():
    # The agent's max_tokens is the first budget; the one retry gets twice that (a retry with the same budget
    # would be cut off the same way), and a second cut-off is still an error, never the answer.
    fragment = '{"name": "calculator", "arguments": {"expression": "17*'
    engine = FakeEngine([Completion(content=fragment, finish_reason="length"),
                         Completion(content=fragment, finish_reason="length")], allowed_options=OPTIONS)
    result = agent(engine, max_tokens=100).run("What is 17 * 23?")
    assert [c.max_tokens for c in engine.calls] == [100, 200]
    assert result.stop_reason == "error" and result.content == "" and "max_tokens (200)" in result.metadata["error"]
    # A retry that fits in the doubled budget is used.
    engine = FakeEngine([Completion(content=fragment, finish_reason="length"), call_json("17*23"), "391"],
                        allowed_options=OPTIONS)
    result = agent(engine, max_tokens=100).run("What is 17 * 23?")
    assert [c.max_tokens for c in engine.calls] == [100, 200, 100]  # the answer turn is back to the setting
    assert (result.content, result.stop_reason) == ("391", "final")


def test_invalid_json_then_valid_json_recovers():
    engine = FakeEngine(["not json", json.dumps({"content": "ok"})], allowed_options=OPTIONS)
    result = agent(engine).run("x")
    assert (result.content, result.stop_reason) == ("ok", "final")


def test_structured_mode_needs_an_engine_that_takes_a_schema():
    import pytest

    from jarvis_core.errors import ConfigError

    with pytest.raises(ConfigError, match="response_format"):
        agent(FakeEngine([], allowed_options={"stop"}))


def test_two_concurrent_runs_on_one_agent_do_not_mix():
    def script(call):
        question = call.messages[-1].content
        if " returned: " in question:
            return f"answer {question.split(' returned: ')[1].splitlines()[0]}"
        a, b = question.split()[-1].split("*")
        return call_json(f"{a}*{b}")

    engine = FakeEngine(default=script, allowed_options=OPTIONS)
    shared = agent(engine)
    results = {}

    def go(expr):
        results[expr] = shared.run(f"compute {expr}")

    threads = [threading.Thread(target=go, args=(e,)) for e in ("3*4", "5*6")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results["3*4"].content == "answer 12" and [r.content for r in results["3*4"].tool_results] == ["12"]
    assert results["5*6"].content == "answer 30" and [r.content for r in results["5*6"].tool_results] == ["30"]
    assert results["3*4"].metadata["run_id"] != results["5*6"].metadata["run_id"]


# -- through an engine's own tool_mode="json_schema" (an engine that takes no response_format) ------------------
def sse_reply(text):
    chunk = {"id": "c", "model": "m", "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}]}
    last = {"id": "c", "model": "m", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}
    return [f"data: {json.dumps(chunk)}", f"data: {json.dumps(last)}", "data: [DONE]"]


def test_structured_through_the_engines_tool_mode_bounds_strings_and_constrains_the_answer_turn():
    import pytest

    pytest.importorskip("jarvis_engine_openai_compat")
    from jarvis_core.testing import Exchange, ReplayServer
    from jarvis_core.tools import json_mode
    from jarvis_engine_openai_compat.engines import VLLMEngine

    class ToolModeOnly(VLLMEngine):
        """An OpenAI-compatible engine whose server takes no response_format from callers."""

        allowed_options = VLLMEngine.allowed_options - {"response_format"}

    def schema_of(body):
        return body["response_format"]["json_schema"]["schema"]

    decision = Exchange(path="/v1/chat/completions", match=lambda b: "anyOf" in schema_of(b),
                        sse=sse_reply(call_json("17*23")))
    answer = Exchange(path="/v1/chat/completions", match=lambda b: set(schema_of(b)["properties"]) == {"content"},
                      sse=sse_reply(json.dumps({"content": "17 * 23 = 391"})))
    with ReplayServer([decision, answer]) as server, ToolModeOnly(host=server.url) as engine:
        result = agent(engine, structured_answer="constrained", max_tokens=100).run("What is 17 * 23?")
        bodies = [r.json for r in server.requests]
    assert (result.content, result.stop_reason) == ("17 * 23 = 391", "final")
    assert [r.content for r in result.tool_results] == ["391"] and server.unmatched == []
    first, second = bodies
    assert "tools" not in first and "tools" not in second  # the tools went as a schema, never natively
    assert list(strings_without_max_length(schema_of(first))) == []  # every string bounded, the answer too
    assert schema_of(second)["properties"]["content"]["maxLength"] == 100 - json_mode.ANSWER_OVERHEAD_TOKENS
    assert "You can use these tools" not in second["messages"][0]["content"]  # the answer turn invites no call
    assert second["messages"][-1]["content"].startswith("Result of calculator: 391")


def test_constrained_answer_through_tool_mode_needs_tool_choice():
    import pytest

    from jarvis_core.errors import ConfigError

    with pytest.raises(ConfigError, match="tool_choice"):
        agent(FakeEngine([], allowed_options={"tool_mode"}), structured_answer="constrained")
    agent(FakeEngine([], allowed_options={"tool_mode"}))  # a free answer turn needs nothing more

