"""The prompt-provider contract in the core: defaults, lookup by name and by model id, and a provider put to
work on a scripted engine (no Qwen package needed: the providers here are defined by the tests)."""

from __future__ import annotations

import json
import warnings

import pytest

from jarvis_core import Jarvis
from jarvis_core.agents import ToolUsingAgent
from jarvis_core.cli.main import main
from jarvis_core.errors import JarvisError, PluginError, UnknownNameError
from jarvis_core.prompts import (
    JARVIS_JSON_RESPONSE_FORMAT,
    PromptDrivenAgent,
    PromptProvider,
    PromptSession,
    append_suffix,
    choose_provider,
    get_provider,
    provider_for_model,
)
from jarvis_core.testing import FakeEngine, installed_registry, simple_plugin
from jarvis_core.tools import BaseTool, ToolPolicy
from jarvis_core.types import Completion, Message, Role, ToolCall, ToolSpec

ENGINE_OPTIONS = {"response_format", "top_p"}
CALC = ToolSpec("calculator", "Evaluate arithmetic", {"type": "object", "properties": {"expression": {"type": "string"}}})


class MinimalProvider(PromptProvider):
    """Only what the contract requires."""

    @property
    def name(self) -> str:
        return "MinimalProvider"

    def build_system_prompt(self, node_context, timezone, tools, available_commands=None) -> str:
        names = ",".join(t["function"]["name"] if "function" in t else t["name"] for t in tools)
        return f"room={node_context.get('room')} tz={timezone} tools={names}"


class TextTagProvider(MinimalProvider):
    user_message_suffix = "/quiet"

    @property
    def name(self) -> str:
        return "TextTag"

    def get_response_format(self):
        return {"type": "text"}

    def parse_response(self, raw_content):
        if raw_content.startswith("CALL "):
            name, _, args = raw_content[5:].partition(" ")
            return json.dumps({"message": "", "tool_calls": [{"name": name, "arguments": json.loads(args)}], "error": None})
        return None


class BrokenProvider(MinimalProvider):
    @property
    def name(self) -> str:
        return "Broken"

    def parse_response(self, raw_content):
        raise KeyError("oops")


PLUGIN = simple_plugin(
    "test-prompts",
    prompt_providers={"MinimalProvider": MinimalProvider, "TextTag": TextTagProvider, "Broken": BrokenProvider,
                      "NotAProvider": dict},
    defaults=[("echo", {"extras": {"prompt_provider": "MinimalProvider"}}),
              ("echo-7b", {"extras": {"prompt_provider": "TextTag"}})],
)


@pytest.fixture
def registry():
    with installed_registry(PLUGIN) as reg:
        yield reg


# -- defaults -----------------------------------------------------------------------------------------
def test_a_minimal_provider_has_the_documented_defaults():
    p = MinimalProvider()
    assert (p.use_tool_classifier, p.supports_native_tools, p.user_message_suffix) == (True, False, "")
    assert p.get_response_format() is None and p.parse_response("anything") is None
    assert p.build_tools([CALC]) == [CALC.to_openai()]
    assert p.get_capabilities() == {
        "provider_name": "MinimalProvider", "model_family": "unknown", "size_tier": "unknown",
        "training_tier": "unknown", "use_tool_classifier": True, "supports_native_tools": False}
    completion = p.build_training_completion({"name": "calculator", "arguments": {"expression": "1+1"}})
    assert completion.startswith(" ")
    assert json.loads(completion) == {"message": "", "tool_calls": [{"name": "calculator", "arguments": {"expression": "1+1"}}],
                                      "error": None}
    with pytest.warns(DeprecationWarning, match="build_training_prompt"):
        assert "turn on the lights" in p.build_training_prompt("turn on the lights")


@pytest.mark.parametrize("text, suffix, expected", [
    ("hi", "", "hi"), ("hi ", "/no_think", "hi /no_think"), ("hi", " /x", "hi /x"), ("hi /x", "/x", "hi /x"),
])
def test_append_suffix(text, suffix, expected):
    assert append_suffix(text, suffix) == expected


# -- lookup -------------------------------------------------------------------------------------------
def test_lookup_is_case_insensitive_and_cached(registry):
    assert get_provider("minimalprovider") is get_provider("MINIMALPROVIDER")
    assert get_provider("texttag").name == "TextTag"


def test_an_unknown_name_lists_the_installed_providers(registry):
    with pytest.raises(UnknownNameError) as info:
        get_provider("Nope")
    assert "MinimalProvider" in str(info.value) and "TextTag" in str(info.value)


def test_a_target_that_is_not_a_provider_is_a_plugin_error(registry):
    with pytest.raises(PluginError, match=r"not a jarvis_core\.prompts\.PromptProvider"):
        get_provider("NotAProvider")


def test_auto_picks_by_model_id_longest_pattern_first_with_provenance(registry):
    choice = provider_for_model("org/Echo-7B-Instruct")
    assert (choice.name, choice.pattern, choice.distribution) == ("TextTag", "echo-7b", choice.distribution)
    assert provider_for_model("echo-1b").name == "MinimalProvider"
    assert provider_for_model("other-model") is None
    provider, picked = choose_provider("AUTO", model="echo-7b")
    assert provider.name == "TextTag" and "rule 'echo-7b'" in picked.describe()


def test_user_rules_beat_plugin_rules_for_auto(registry):
    rules = {"echo-7b-instruct": {"extras": {"prompt_provider": "MinimalProvider"}}}
    choice = provider_for_model("echo-7b-instruct", user_rules=rules)
    assert (choice.name, choice.distribution) == ("MinimalProvider", "user config")


def test_auto_without_a_rule_is_an_error_listing_providers(registry):
    with pytest.raises(JarvisError, match=r"no backend-default rule names a prompt provider.*MinimalProvider"):
        choose_provider("auto", model="other-model")


# -- a session on a scripted engine -----------------------------------------------------------------------
def test_text_mode_round_trip_with_the_shared_json_format(registry):
    reply = json.dumps({"message": "", "tool_calls": [{"name": "calculator", "arguments": {"expression": "2*3"}}],
                        "error": None})
    engine = FakeEngine([reply], allowed_options=ENGINE_OPTIONS)
    with Jarvis(engine=engine, model="echo-1b") as j:
        out = j.ask_full("what is 2*3", prompt_provider="minimalprovider", tools=[CALC],
                         node_context={"room": "office"}, timezone="Europe/Oslo").to_dict()
    call = engine.calls[0]
    assert [m.role for m in call.messages] == [Role.SYSTEM, Role.USER]
    assert call.messages[0].content == "room=office tz=Europe/Oslo tools=calculator"
    assert call.messages[1].content == "what is 2*3"
    assert call.tools is None and call.options == {"response_format": JARVIS_JSON_RESPONSE_FORMAT}
    assert out["prompt_provider"] == "MinimalProvider" and out["finish_reason"] == "tool_calls"
    assert [(c["name"], json.loads(c["arguments"])) for c in out["tool_calls"]] == [("calculator", {"expression": "2*3"})]
    assert out["jarvis_json"]["tool_calls"] == [{"name": "calculator", "arguments": {"expression": "2*3"}}]


def test_text_mode_suffix_and_parse_response(registry):
    engine = FakeEngine(['CALL calculator {"expression": "1+1"}'], allowed_options=ENGINE_OPTIONS)
    with Jarvis(engine=engine, model="m") as j:
        out = j.ask_full([{"role": "user", "content": "one"}, {"role": "assistant", "content": "ok"},
                          {"role": "user", "content": "two"}], prompt_provider="TextTag", tools=[CALC]).to_dict()
    sent = engine.calls[0]
    assert [m.content for m in sent.messages if m.role is Role.USER] == ["one /quiet", "two /quiet"]
    assert sent.options == {"response_format": {"type": "text"}}
    assert out["content"] == "" and out["tool_calls"][0]["name"] == "calculator"


def test_auto_announces_the_pick(registry):
    said = []
    engine = FakeEngine(["plain words"], allowed_options=ENGINE_OPTIONS)
    with Jarvis(engine=engine, model="echo-7b", announce=said.append) as j:
        assert j.ask("hello", prompt_provider="auto") == "plain words"
    assert len(said) == 1
    assert said[0].startswith("prompt provider TextTag for model 'echo-7b' (rule 'echo-7b' from ")


def test_engine_without_response_format(registry):
    plain = PromptSession(get_provider("TextTag"), [CALC])
    assert plain.request_options(FakeEngine()) == {}  # a text format asks for nothing
    with pytest.raises(JarvisError, match="needs a JSON response format"):
        PromptSession(get_provider("MinimalProvider"), [CALC]).request_options(FakeEngine())


def test_native_mode_sends_tools_and_uses_structured_calls():
    class Native(MinimalProvider):
        supports_native_tools = True

        def parse_response(self, raw_content):  # must not be called in native mode
            raise AssertionError("parse_response called in native mode")

    session = PromptSession(Native(), [CALC])
    engine = FakeEngine([Completion(content="", tool_calls=[ToolCall("c1", "calculator", '{"expression": "1"}')])])
    completion = engine.generate(session.messages("q"), model="m", **session.request_options(engine))
    read = session.read(completion)
    assert engine.calls[0].tools == [CALC.to_openai()] and "response_format" not in engine.calls[0].options
    assert read.completion.tool_calls[0].id == "c1" and not read.parsed_by_provider


def test_a_conversation_with_its_own_system_message_is_refused():
    with pytest.raises(JarvisError, match="own system message"):
        PromptSession(MinimalProvider()).messages([Message.system("x"), Message.user("y")])


def test_sdk_refuses_system_and_agents_that_build_their_own_prompts(agent_registry):
    with Jarvis(engine=FakeEngine(allowed_options=ENGINE_OPTIONS), model="m") as j:
        with pytest.raises(JarvisError, match="builds the system prompt"):
            j.ask("q", prompt_provider="TextTag", system="mine")
        with pytest.raises(JarvisError, match="'plain' builds its own prompts and takes no prompt provider"):
            j.ask("q", prompt_provider="TextTag", agent="plain")


class Calculator(BaseTool):
    spec = CALC
    policy = ToolPolicy(isolation="inline", timeout=5.0)

    def run(self, expression: str) -> str:
        a, _, b = expression.partition("*")
        return str(int(a) * int(b))


@pytest.fixture
def agent_registry():
    plugin = simple_plugin("test-agents", agents={"driven": PromptDrivenAgent, "plain": ToolUsingAgent},
                           tools={"calculator": Calculator})
    with installed_registry(PLUGIN, plugin) as reg:
        yield reg


def test_an_agent_driven_by_a_text_mode_provider(agent_registry):
    engine = FakeEngine(['CALL calculator {"expression": "6*7"}', "It is 42."], allowed_options=ENGINE_OPTIONS)
    with Jarvis(engine=engine, model="m") as j:
        out = j.ask_full("what is 6*7?", prompt_provider="texttag", agent="driven", tools=["calculator"],
                         node_context={"room": "lab"}).to_dict()
    assert out["content"] == "It is 42." and out["agent"] == "driven" and out["prompt_provider"] == "TextTag"
    assert [r["content"] for r in out["tool_results"]] == ["42"]
    first, second = engine.calls
    assert first.messages[0].content == "room=lab tz=None tools=calculator"
    assert first.messages[1].content == "what is 6*7? /quiet"
    assert first.tools is None and first.options == {"response_format": {"type": "text"}}
    assistant, tool = second.messages[2], second.messages[3]
    assert assistant.role is Role.ASSISTANT and assistant.content is None
    assert [c.name for c in assistant.tool_calls] == ["calculator"]
    assert tool.role is Role.TOOL and tool.content == "42" and tool.tool_call_id == assistant.tool_calls[0].id


def test_an_agent_driven_by_a_native_provider():
    class Native(MinimalProvider):
        supports_native_tools = True

    engine = FakeEngine([Completion(content="", tool_calls=[ToolCall("c1", "calculator", '{"expression": "2*5"}')]),
                         "Ten."])
    agent = PromptDrivenAgent(engine, model="m", tools=[Calculator()], prompt_session=PromptSession(Native()))
    result = agent.run("2*5?")
    assert result.content == "Ten." and result.tool_results[0].content == "10"
    assert engine.calls[0].tools == [CALC.to_openai()] and engine.calls[0].messages[0].content.endswith("calculator")


def test_a_provider_that_raises_in_parse_response_is_named(registry):
    with Jarvis(engine=FakeEngine(["x"], allowed_options=ENGINE_OPTIONS), model="m") as j:
        with pytest.raises(JarvisError, match="prompt provider 'Broken' failed to parse the reply: KeyError"):
            j.ask("q", prompt_provider="broken")


def test_bad_node_context_and_tool_types_are_clear_errors(registry, tmp_path):
    with pytest.raises(JarvisError, match="node context must be a mapping"):
        PromptSession(MinimalProvider(), node_context=["room"])
    with pytest.raises(JarvisError, match="tool #1 is not a function schema"):
        PromptSession(MinimalProvider(), tools=[42])


# -- CLI errors (no engine is contacted) ---------------------------------------------------------------------
def test_cli_ask_context_without_provider_and_bad_context_file(registry, tmp_path, capsys):
    assert main(["ask", "--node-context", "ctx.json", "hi"]) == 2  # a usage mistake
    assert "add --prompt-provider NAME" in capsys.readouterr().err
    bad = tmp_path / "ctx.json"
    bad.write_text("[1]", encoding="utf-8")
    assert main(["ask", "--prompt-provider", "TextTag", "--node-context", str(bad), "hi"]) == 1
    err = capsys.readouterr().err
    assert "--node-context" in err and "expected a JSON object, got list" in err


def test_cli_prompts_list_show_render(registry, tmp_path, capsys):
    assert main(["prompts", "list", "--json"]) == 0  # NotAProvider is listed as broken with a warning
    captured = capsys.readouterr()
    assert "jarvis: warning: prompt provider 'NotAProvider' (plugin 'test-prompts', test-prompts) built 'dict'" \
        in captured.err
    listed = json.loads(captured.out)
    assert [d["name"] for d in listed] == ["Broken", "MinimalProvider", "TextTag", "NotAProvider"]
    assert listed[3]["broken"] is True
    assert listed[2]["capabilities"]["provider_name"] == "TextTag" and listed[2]["response_format"] == {"type": "text"}
    assert main(["prompts", "list"]) == 0
    table = capsys.readouterr().out.splitlines()
    assert table[0].split() == ["NAME", "FAMILY", "SIZE", "TRAINING", "MODE", "SUFFIX", "DISTRIBUTION"]
    assert table[3].split()[:6] == ["TextTag", "unknown", "unknown", "unknown", "text", "/quiet"]
    assert main(["prompts", "show", "texttag"]) == 0
    out = capsys.readouterr().out
    assert "TextTag" in out and "'/quiet'" in out and "test-prompts" in out
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps([CALC.to_openai()]), encoding="utf-8")
    assert main(["prompts", "render", "MinimalProvider", "--tools", str(tools), "--timezone", "UTC"]) == 0
    assert capsys.readouterr().out == "room=unknown tz=UTC tools=calculator\n"
    assert main(["prompts", "render", "nope"]) == 1
    assert "unknown prompt provider 'nope'; available:" in capsys.readouterr().err


@pytest.fixture(autouse=True)
def _quiet_deprecations():
    with warnings.catch_warnings():
        warnings.simplefilter("default")
        yield


def test_cli_ask_with_provider_prints_message_and_calls(capsys):
    """``jarvis ask --prompt-provider`` text output: the message, then one line per tool call read; with an
    agent that accepts the session, the agent's answer. The engine is a scripted one registered as a plugin."""
    scripts = [['CALL calculator {"expression": "3*3"}'], ['CALL calculator {"expression": "3*3"}', "Nine."]]

    class ScriptedEngine(FakeEngine):
        def __init__(self, **options):  # one script per `jarvis ask`
            super().__init__(scripts.pop(0), allowed_options=ENGINE_OPTIONS)

    plugin = simple_plugin("test-cli", engines={"scripted": ScriptedEngine},
                           agents={"driven": PromptDrivenAgent}, tools={"calculator": Calculator})
    with installed_registry(PLUGIN, plugin):
        args = ["ask", "--engine", "scripted", "--model", "m", "--prompt-provider", "TextTag", "--tools", "calculator"]
        assert main([*args, "3*3?"]) == 0
        assert capsys.readouterr().out == 'tool call: calculator {"expression": "3*3"}\n'
        assert main([*args, "--agent", "driven", "3*3?"]) == 0
        assert capsys.readouterr().out == "Nine.\n"
    assert scripts == []


def test_ask_stream_with_a_provider_yields_the_read_message_once(registry):
    engine = FakeEngine(['{"message": "Hello there.", "tool_calls": [], "error": null}'], allowed_options=ENGINE_OPTIONS)
    with Jarvis(engine=engine, model="m") as j:
        assert list(j.ask_stream_sync("hi", prompt_provider="MinimalProvider")) == ["Hello there."]
    assert engine.calls[0].method == "generate"  # read whole: a provider parses the complete reply
