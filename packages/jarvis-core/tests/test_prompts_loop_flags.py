"""The provider flags that need the caller's help: ``lazy_tool_loading`` (the model's ``get_tools`` calls are
answered from the session's tools, then the model goes on to the real tool) and ``force_tool_calls`` (a first
reply without a tool call is asked again once). Checked on ``Jarvis.ask`` (no agent: calls come back, not run)
and on :class:`PromptDrivenAgent` (calls run), with scripted engines; the providers are defined here."""

from __future__ import annotations

import json

import pytest

from jarvis_core import Jarvis
from jarvis_core.agents.events import ToolCallFinished
from jarvis_core.prompts import PromptDrivenAgent, PromptProvider, PromptSession
from jarvis_core.prompts.direct import MAX_TOOL_FETCHES
from jarvis_core.prompts.lazy import GET_TOOLS, get_tools_answer, requested_names
from jarvis_core.prompts.session import TOOL_CALL_REQUIRED
from jarvis_core.testing import FakeEngine, installed_registry, simple_plugin
from jarvis_core.tools import BaseTool, ToolPolicy
from jarvis_core.types import Completion, Role, ToolCall, ToolSpec

OPTIONS = {"response_format"}
CALC = ToolSpec("calculator", "Multiply two numbers written a*b",
                {"type": "object", "properties": {"expression": {"type": "string"}}, "required": ["expression"]})
CLOCK = ToolSpec("clock", "The time", {"type": "object", "properties": {}})


def call(name: str, **arguments) -> str:
    """A reply in the test providers' text format."""
    return f"CALL {name} {json.dumps(arguments)}"


class Tagged(PromptProvider):
    """Text mode: ``CALL name {json}`` is a call, anything else a message."""

    user_message_suffix = "/q"

    @property
    def name(self) -> str:
        return type(self).__name__

    def build_system_prompt(self, node_context, timezone, tools, available_commands=None) -> str:
        return "tools: " + ",".join(t["function"]["name"] for t in tools)

    def get_response_format(self):
        return {"type": "text"}

    def parse_response(self, raw_content):
        if not raw_content.startswith("CALL "):
            return json.dumps({"message": raw_content, "tool_calls": [], "error": None})
        name, _, args = raw_content[5:].partition(" ")
        return json.dumps({"message": "", "tool_calls": [{"name": name, "arguments": json.loads(args or "{}")}]})


class Lazy(Tagged):
    lazy_tool_loading = True


class Forced(Tagged):
    force_tool_calls = True


class NativeLazy(Tagged):
    supports_native_tools = True
    lazy_tool_loading = True


def inline_tool(spec: ToolSpec, fn) -> BaseTool:
    """A tool running ``fn(**arguments)`` in the calling thread."""
    cls = type(spec.name.title(), (BaseTool,), {"spec": spec, "policy": ToolPolicy(isolation="inline", timeout=5.0),
                                                "run": lambda self, **arguments: fn(**arguments)})
    return cls()


def calculator() -> BaseTool:
    return inline_tool(CALC, lambda expression: str(int(expression.partition("*")[0]) * int(expression.partition("*")[2])))


def clock() -> BaseTool:
    return inline_tool(CLOCK, lambda: "12:00")


@pytest.fixture(autouse=True)
def providers():
    table = {cls.__name__: cls for cls in (Tagged, Lazy, Forced, NativeLazy)}
    with installed_registry(simple_plugin("test-loop-flags", prompt_providers=table)) as reg:
        yield reg


# -- the get_tools answer ---------------------------------------------------------------------------------
def test_get_tools_answer_gives_the_requested_definitions_without_jarvis_extras():
    extra = dict(CALC.to_openai())
    extra["function"] = {**extra["function"], "allow_direct_answer": False}
    content, names = get_tools_answer([extra, CLOCK.to_openai()], '{"names": ["calculator"]}')
    assert names == ("calculator",)
    assert json.loads(content) == {"tools": [CALC.to_openai()]}
    everything, all_names = get_tools_answer([CALC.to_openai(), CLOCK.to_openai()], "{}")
    assert all_names == ("calculator", "clock") and len(json.loads(everything)["tools"]) == 2
    unknown, found = get_tools_answer([CALC.to_openai()], {"names": ["calculater", "calculator"]})
    assert found == ("calculator",)
    assert json.loads(unknown)["unknown"] == ["calculater"] and json.loads(unknown)["available"] == ["calculator"]


def test_requested_names_are_read_leniently():
    assert requested_names('{"names": "clock"}') == ("clock",)
    assert requested_names({"tools": ["a", "a", " b ", 3]}) == ("a", "b")
    assert requested_names("not json") == () and requested_names('{"names": 5}') == ()


# -- lazy loading without an agent --------------------------------------------------------------------------
def test_ask_answers_get_tools_then_returns_the_real_call():
    engine = FakeEngine([call("get_tools", names=["calculator"]), call("calculator", expression="6*7")],
                        allowed_options=OPTIONS)
    with Jarvis(engine=engine, model="m") as j:
        out = j.ask_full("6*7?", prompt_provider="Lazy", tools=[CALC, CLOCK]).to_dict()
    assert [(c["name"], json.loads(c["arguments"])) for c in out["tool_calls"]] == [("calculator", {"expression": "6*7"})]
    assert out["model_calls"] == 2 and out["tools_loaded"] == ["calculator"]
    first, second = engine.calls
    assert first.messages[0].content == "tools: calculator,clock" and first.tools is None
    assert [m.role for m in second.messages] == [Role.SYSTEM, Role.USER, Role.ASSISTANT, Role.TOOL]
    assistant, answer = second.messages[2], second.messages[3]
    assert [c.name for c in assistant.tool_calls] == ["get_tools"] and answer.tool_call_id == assistant.tool_calls[0].id
    assert json.loads(answer.content) == {"tools": [CALC.to_openai()]}


def test_a_model_stuck_on_get_tools_ends_with_an_error_not_a_get_tools_call():
    engine = FakeEngine([call("get_tools")] * (MAX_TOOL_FETCHES + 1), allowed_options=OPTIONS)
    with Jarvis(engine=engine, model="m") as j:
        out = j.ask_full("q", prompt_provider="Lazy", tools=[CALC]).to_dict()
    assert out["model_calls"] == MAX_TOOL_FETCHES + 1 and "tool_calls" not in out
    assert out["finish_reason"] == "stop" and "kept asking for tool definitions" in out["jarvis_json"]["error"]


def test_a_real_tool_named_get_tools_is_not_intercepted():
    own = ToolSpec("get_tools", "my own", {"type": "object", "properties": {}})
    engine = FakeEngine([call("get_tools")], allowed_options=OPTIONS)
    with Jarvis(engine=engine, model="m") as j:
        out = j.ask_full("q", prompt_provider="Lazy", tools=[own]).to_dict()
    assert out["model_calls"] == 1 and out["tool_calls"][0]["name"] == "get_tools"


def test_native_lazy_offers_get_tools_then_the_fetched_tools():
    fetch = Completion(content="", tool_calls=[ToolCall("c1", "get_tools", '{"names": ["clock"]}')])
    use = Completion(content="", tool_calls=[ToolCall("c2", "clock", "{}")])
    engine = FakeEngine([fetch, use], allowed_options=OPTIONS)
    with Jarvis(engine=engine, model="m") as j:
        out = j.ask_full("time?", prompt_provider="NativeLazy", tools=[CALC, CLOCK]).to_dict()
    first, second = engine.calls
    assert [t["function"]["name"] for t in first.tools] == ["get_tools"]
    assert first.tools[0] == dict(GET_TOOLS)
    assert [t["function"]["name"] for t in second.tools] == ["get_tools", "clock"]
    assert out["tool_calls"] == [{"id": "c2", "name": "clock", "arguments": "{}"}]


# -- lazy loading in the agent ------------------------------------------------------------------------------
def test_agent_answers_get_tools_and_runs_the_real_tool():
    engine = FakeEngine([call("get_tools", names=["calculator"]), call("calculator", expression="6*7"), "It is 42."],
                        allowed_options=OPTIONS)
    agent = PromptDrivenAgent(engine, model="m", tools=[calculator(), clock()], prompt_session=PromptSession(Lazy()))
    result = agent.run("6*7?")
    assert result.content == "It is 42." and result.stop_reason == "final"
    fetched, ran = result.tool_results
    assert fetched.name == "get_tools" and fetched.ok and json.loads(fetched.content) == {"tools": [CALC.to_openai()]}
    assert ran.name == "calculator" and ran.ok and ran.content == "42"
    assert "unknown tool" not in fetched.content
    third = engine.calls[2].messages
    assert [m.role for m in third[2:]] == [Role.ASSISTANT, Role.TOOL, Role.ASSISTANT, Role.TOOL]


async def _events(agent, text):
    return [e async for e in agent.astream(text)]


def test_agent_reports_the_get_tools_answer_as_a_finished_call():
    import asyncio

    engine = FakeEngine([call("get_tools"), "no tool needed"], allowed_options=OPTIONS)
    agent = PromptDrivenAgent(engine, model="m", tools=[clock()], prompt_session=PromptSession(Lazy()))
    finished = [e for e in asyncio.run(_events(agent, "hi")) if isinstance(e, ToolCallFinished)]
    assert [e.result.name for e in finished] == ["get_tools"] and finished[0].result.ok


def test_agent_with_get_tools_beside_a_real_call_keeps_call_order():
    both = "CALL get_tools {}"
    engine = FakeEngine([both, "done"], allowed_options=OPTIONS)

    class Two(Lazy):
        def parse_response(self, raw_content):
            if raw_content == both:
                return json.dumps({"message": "", "tool_calls": [
                    {"name": "clock", "arguments": {}}, {"name": "get_tools", "arguments": {"names": ["clock"]}}]})
            return super().parse_response(raw_content)

    agent = PromptDrivenAgent(engine, model="m", tools=[clock()], prompt_session=PromptSession(Two()))
    result = agent.run("time?")
    assert [r.name for r in result.tool_results] == ["clock", "get_tools"]
    assert result.tool_results[0].content == "12:00"


# -- forced tool calls ----------------------------------------------------------------------------------
def test_ask_retries_once_with_the_corrective_turn_when_the_model_answers_without_a_tool():
    engine = FakeEngine(["It is probably 42.", call("calculator", expression="6*7")], allowed_options=OPTIONS)
    with Jarvis(engine=engine, model="m") as j:
        out = j.ask_full("6*7?", prompt_provider="Forced", tools=[CALC]).to_dict()
    assert out["model_calls"] == 2 and out["tool_calls"][0]["name"] == "calculator"
    retry = engine.calls[1].messages
    assert retry[-2].role is Role.ASSISTANT and retry[-2].content == "It is probably 42."
    assert retry[-1].role is Role.USER and retry[-1].content == f"{TOOL_CALL_REQUIRED} /q"


def test_ask_retries_only_once_and_not_without_tools_or_when_not_forced():
    engine = FakeEngine(["hello", "hello again"], allowed_options=OPTIONS)
    with Jarvis(engine=engine, model="m") as j:
        out = j.ask_full("hi", prompt_provider="Forced", tools=[CALC]).to_dict()
        assert out["model_calls"] == 2 and out["content"] == "hello again"
        engine.push("hi there")
        assert j.ask_full("hi", prompt_provider="Forced").to_dict()["model_calls"] == 1  # no tools: nothing to force
        engine.push("hi there")
        assert j.ask_full("hi", prompt_provider="Tagged", tools=[CALC]).to_dict()["model_calls"] == 1


def test_agent_retries_the_first_reply_but_not_the_answer_after_a_tool():
    engine = FakeEngine(["Probably 42.", call("calculator", expression="6*7"), "It is 42."], allowed_options=OPTIONS)
    agent = PromptDrivenAgent(engine, model="m", tools=[calculator()], prompt_session=PromptSession(Forced()))
    result = agent.run("6*7?")
    assert result.content == "It is 42." and [r.content for r in result.tool_results] == ["42"]
    assert len(engine.calls) == 3  # the final words after the tool result are not retried
    assert engine.calls[1].messages[-1].content == f"{TOOL_CALL_REQUIRED} /q"


def test_agent_accepts_words_after_the_one_retry():
    engine = FakeEngine(["hello", "hello again"], allowed_options=OPTIONS)
    agent = PromptDrivenAgent(engine, model="m", tools=[calculator()], prompt_session=PromptSession(Forced()))
    result = agent.run("hi")
    assert result.content == "hello again" and result.stop_reason == "final" and len(engine.calls) == 2
