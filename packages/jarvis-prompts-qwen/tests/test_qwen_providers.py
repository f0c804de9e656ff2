"""The Qwen providers' prompts, flags and capabilities, and each mode's round trip through ``Jarvis.ask`` on a
scripted engine: what the engine received and which tool calls came back."""

from __future__ import annotations

import json

import pytest

from jarvis_core import Jarvis
from jarvis_core.prompts import JarvisReply, PromptDrivenAgent, PromptProvider, PromptSession, get_provider
from jarvis_core.prompts.blocks import DATE_KEYS
from jarvis_core.prompts.session import TOOL_CALL_REQUIRED
from jarvis_core.testing import (
    SAMPLE_COMMANDS,
    SAMPLE_CONTEXT,
    FakeEngine,
    check_default_provider,
    check_shared_prompt,
)
from jarvis_core.types import Completion, Role, ToolCall
from jarvis_prompts_qwen.plugin import MODEL_RULES, PROVIDERS

WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "Current weather for a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    "allow_direct_answer": False, "antipatterns": ["questions about climate history"]}}
TIMER = {"name": "set_timer", "description": "Start a countdown",
         "parameters": {"type": "object", "properties": {"duration_seconds": {"type": "integer"}}}}
CONTEXT, COMMANDS = SAMPLE_CONTEXT, list(SAMPLE_COMMANDS)
ENGINE_OPTIONS = {"response_format"}


def _tools_block(prompt: str) -> list:
    start = prompt.index("\n<tools>\n") + len("\n<tools>\n")
    return prompt[start:prompt.index("\n</tools>", start)].splitlines()


def _prompt(name: str, context=CONTEXT, tools=(WEATHER, TIMER), commands=COMMANDS) -> str:
    return get_provider(name).build_system_prompt(context, "Europe/Rome", list(tools), commands)


@pytest.mark.parametrize("name", list(PROVIDERS))
def test_every_provider_is_a_provider_with_its_name_and_capabilities(name):
    p = get_provider(name.upper())
    assert isinstance(p, PromptProvider) and p.name == name
    caps = p.get_capabilities()
    assert caps["provider_name"] == name and caps["training_tier"] == "untrained"
    assert caps["model_family"] == ("qwen3.5" if name.startswith("Qwen3_5") else "qwen")
    assert caps["size_tier"] in ("small", "medium", "large")
    assert caps["use_tool_classifier"] is True
    assert caps["supports_native_tools"] is (name == "Qwen3_5_9B_Compressed")
    assert p.get_response_format() == (None if caps["supports_native_tools"] else {"type": "text"})
    prompt = check_shared_prompt(name, [WEATHER, TIMER])
    assert "May be answered directly when you know the answer: tell_joke" in prompt


@pytest.mark.parametrize("name", [n for n in PROVIDERS if n not in ("Qwen3_5_9B_Compressed", "Qwen25_14B_Untrained")])
def test_text_providers_put_every_tool_in_the_prompt_one_json_per_line(name):
    prompt = _prompt(name)
    block = _tools_block(prompt)
    assert [json.loads(line)["function"]["name"] for line in block] == ["get_weather", "set_timer"]
    assert "allow_direct_answer" not in "".join(block)  # Jarvis extras stay out of the schema JSON
    assert "<tool_call>" in prompt and '"failure_message"' in prompt
    assert all(f'"{key}"' in prompt for key in DATE_KEYS)


def test_prompt_layout_differences():
    medium = _prompt("Qwen25MediumUntrained")
    assert medium.index("Rules:") < medium.index("<tools>")  # stable text first
    assert "Not for: questions about climate history" in medium
    assert "Reply in the language the user spoke." in _prompt("Qwen25LargeUntrained")
    qwen3_8b = _prompt("Qwen3_8B_Compressed")
    assert qwen3_8b.index("<tools>") < qwen3_8b.index("Rules:")  # tools first helped Qwen3-8B
    native = _prompt("Qwen3_5_9B_Compressed")
    assert "<tools>" not in native and "<tool_call>" not in native


def test_stable_prefix_does_not_depend_on_the_speaker():
    a = _prompt("Qwen25MediumUntrained", context=dict(CONTEXT, speaker_name="alex"))
    b = _prompt("Qwen25MediumUntrained", context=dict(CONTEXT, speaker_name="sam", user_memories=[]))
    cut = a.index("You are speaking with")
    assert a[:cut] == b[:cut]


def test_lazy_tool_loading_offers_only_get_tools():
    p = get_provider("Qwen25_14B_Untrained")
    prompt = _prompt("Qwen25_14B_Untrained")
    block = _tools_block(prompt)
    assert [json.loads(line)["function"]["name"] for line in block] == ["get_tools"]
    assert "- get_weather: Current weather for a city" in prompt
    assert p.lazy_tool_loading and not p.force_tool_calls
    assert PromptSession(p, [WEATHER]).request_options() == {"response_format": {"type": "text"}}  # tools in text only


@pytest.mark.parametrize("name", [n for n in PROVIDERS if n != "Qwen3_5_9B_Compressed"])
def test_no_tools_means_no_tools_block(name):
    prompt = _prompt(name, tools=())
    assert "<tools>" not in prompt and "</tools>" not in prompt and "get_tools" not in prompt
    assert "Functions:" not in prompt and "Capabilities" not in prompt


def test_forced_tool_calls_where_the_reference_has_them():
    forced = {n for n in PROVIDERS if get_provider(n).get_capabilities()["force_tool_calls"]}
    assert forced == {"Qwen25Compressed", "Qwen25_3B_Compressed", "Qwen25_7B_Compressed", "Qwen25LargeUntrained"}
    assert all(get_provider(n).force_tool_calls is (n in forced) for n in PROVIDERS)  # the flag the session reads


def test_qwen3_suffixes():
    from jarvis_prompts_qwen.qwen3 import Qwen3_8B_Compressed

    assert get_provider("Qwen3LargeUntrained").user_message_suffix == "/no_think"
    assert get_provider("Qwen3_8B_Compressed").user_message_suffix == "/no_think"
    assert Qwen3_8B_Compressed(thinking=True).user_message_suffix == "/think"
    thinking = get_provider("qwen3_8b_thinking")
    assert thinking.user_message_suffix == "/think" and thinking.name == "Qwen3_8B_Thinking"
    assert thinking.get_capabilities()["thinking"] is True
    assert get_provider("Qwen3_8B_Compressed").get_capabilities()["thinking"] is False
    assert _prompt("Qwen3_8B_Thinking") == _prompt("Qwen3_8B_Compressed")  # same prompt, only the suffix differs
    assert get_provider("Qwen25MediumUntrained").user_message_suffix == ""


def test_every_rule_names_a_registered_provider_and_is_longer_than_the_core_patterns():
    assert {p for _, p in MODEL_RULES} <= set(PROVIDERS)
    from jarvis_core.defaults.plugin import load_rules

    core = [r["pattern"] for r in load_rules()]
    for pattern, _ in MODEL_RULES:
        shadowed = [c for c in core if c in pattern]
        assert shadowed and all(len(pattern) > len(c) for c in shadowed), (pattern, shadowed)


def test_training_methods():
    p = get_provider("Qwen25MediumUntrained")
    system = p.build_training_system_prompt()
    assert "<tool_call>" in system and "<tools>" not in system and "room=unknown" in system
    completion = p.build_training_completion({"name": "set_timer", "arguments": {"duration_seconds": 60}})
    assert completion.startswith(" <tool_call>\n") and completion.endswith("\n</tool_call>")
    assert json.loads(p.parse_response(completion))["tool_calls"] == [{"name": "set_timer", "arguments": {"duration_seconds": 60}}]


# -- round trips on a scripted engine ------------------------------------------------------------------------
def test_text_mode_round_trip():
    reply = 'I will check.\n<tool_call>{"name": "get_weather", "arguments": {"city": "Rome"}, ' \
            '"failure_message": "No weather now."}</tool_call>'
    engine = FakeEngine([reply], allowed_options=ENGINE_OPTIONS)
    with Jarvis(engine=engine, model="qwen2.5-7b-instruct") as j:
        out = j.ask_full("weather in rome?", prompt_provider="qwen25mediumuntrained", tools=[WEATHER, TIMER],
                         node_context=CONTEXT, timezone="Europe/Rome", available_commands=COMMANDS).to_dict()
    (call,) = engine.calls
    assert [m.role for m in call.messages] == [Role.SYSTEM, Role.USER]
    assert call.messages[0].content == _prompt("Qwen25MediumUntrained")
    assert call.messages[1].content == "weather in rome?"  # Qwen 2.5 has no suffix
    assert call.tools is None and call.options == {"response_format": {"type": "text"}}
    assert out["content"] == "" and out["finish_reason"] == "tool_calls"
    assert [(c["name"], json.loads(c["arguments"])) for c in out["tool_calls"]] == [("get_weather", {"city": "Rome"})]
    assert out["jarvis_json"]["tool_calls"][0]["failure_message"] == "No weather now."


def test_text_mode_qwen3_suffix_and_think_stripping():
    engine = FakeEngine(["<think>\n\n</think>\n\nIt is sunny."], allowed_options=ENGINE_OPTIONS)
    with Jarvis(engine=engine, model="qwen3-30b-a3b") as j:
        answer = j.ask("hello", prompt_provider="Qwen3LargeUntrained", tools=[WEATHER])
    assert engine.calls[0].messages[-1].content == "hello /no_think"
    assert answer == "It is sunny."


def test_text_mode_cut_off_thinking_is_not_spoken():
    engine = FakeEngine([Completion(content="<think>Let me consider", finish_reason="length")],
                        allowed_options=ENGINE_OPTIONS)
    with Jarvis(engine=engine, model="m") as j:
        out = j.ask_full("hi", prompt_provider="Qwen3_8B_Compressed").to_dict()
    assert out["content"] == "" and out["finish_reason"] == "length" and "tool_calls" not in out


def test_native_mode_round_trip():
    structured = Completion(content="", tool_calls=[ToolCall("call_1", "get_weather", '{"city": "Oslo"}')])
    engine = FakeEngine([structured], allowed_options=ENGINE_OPTIONS)
    provider = get_provider("Qwen3_5_9B_Compressed")
    with Jarvis(engine=engine, model="qwen3.5-9b") as j:
        out = j.ask_full("weather in oslo", prompt_provider="auto", tools=[WEATHER], node_context=CONTEXT).to_dict()
    (call,) = engine.calls
    assert call.messages[0].content == provider.build_system_prompt(CONTEXT, None, [WEATHER], None)
    assert call.messages[1].content == "weather in oslo /no_think"
    assert call.tools == provider.build_tools([WEATHER]) and "response_format" not in call.options
    assert out["prompt_provider"] == "Qwen3_5_9B_Compressed"
    assert out["tool_calls"] == [{"id": "call_1", "name": "get_weather", "arguments": '{"city": "Oslo"}'}]
    assert JarvisReply.from_object(out["jarvis_json"]) == JarvisReply()


def test_an_agent_driven_by_a_qwen_provider():
    from jarvis_core.prompts import PromptDrivenAgent, PromptSession
    from jarvis_core.tools import BaseTool, ToolPolicy
    from jarvis_core.types import ToolSpec

    class Calculator(BaseTool):
        spec = ToolSpec("calculator", "Multiply", {"type": "object", "properties": {"expression": {"type": "string"}}})
        policy = ToolPolicy(isolation="inline", timeout=5.0)

        def run(self, expression: str) -> str:
            a, _, b = expression.partition("*")
            return str(int(a) * int(b))

    engine = FakeEngine(['<think>\n</think><tool_call>{"name": "calculator", "arguments": {"expression": "6*7"}}</tool_call>',
                         "<think></think>It is 42."], allowed_options=ENGINE_OPTIONS)
    session = PromptSession(get_provider("Qwen3LargeUntrained"))
    result = PromptDrivenAgent(engine, model="qwen3-30b-a3b", tools=[Calculator()], prompt_session=session).run("6*7?")
    assert result.content == "It is 42." and result.tool_results[0].content == "42"
    first, second = engine.calls
    assert '"name":"calculator"' in first.messages[0].content and first.messages[1].content == "6*7? /no_think"
    assert first.options == {"response_format": {"type": "text"}} and first.tools is None
    assert [c.name for c in second.messages[2].tool_calls] == ["calculator"] and second.messages[3].content == "42"


# -- lazy tool loading and forced tool calls, as the session answers them ----------------------------------------
def _qwen_call(name: str, **arguments) -> str:
    return f'<tool_call>\n{json.dumps({"name": name, "arguments": arguments})}\n</tool_call>'


def test_lazy_qwen_fetches_definitions_then_calls_the_real_tool():
    engine = FakeEngine([_qwen_call("get_tools", names=["get_weather"]), _qwen_call("get_weather", city="Rome")],
                        allowed_options=ENGINE_OPTIONS)
    with Jarvis(engine=engine, model="qwen2.5-14b-instruct") as j:
        out = j.ask_full("weather in rome?", prompt_provider="Qwen25_14B_Untrained", tools=[WEATHER, TIMER]).to_dict()
    assert [(c["name"], json.loads(c["arguments"])) for c in out["tool_calls"]] == [("get_weather", {"city": "Rome"})]
    assert out["tools_loaded"] == ["get_weather"] and out["model_calls"] == 2
    assert [json.loads(line)["function"]["name"] for line in _tools_block(engine.calls[0].messages[0].content)] == \
        ["get_tools"]
    answer = engine.calls[1].messages[-1]
    assert answer.role is Role.TOOL
    fetched = json.loads(answer.content)["tools"]
    assert [t["function"]["name"] for t in fetched] == ["get_weather"]
    assert "allow_direct_answer" not in answer.content  # Jarvis extras stay out of the definitions


def test_forced_qwen_is_asked_again_once_when_it_answers_in_words():
    engine = FakeEngine(["It is sunny in Rome.", _qwen_call("get_weather", city="Rome")], allowed_options=ENGINE_OPTIONS)
    with Jarvis(engine=engine, model="qwen2.5-7b-instruct") as j:
        out = j.ask_full("weather in rome?", prompt_provider="Qwen25Compressed", tools=[WEATHER]).to_dict()
    assert out["tool_calls"][0]["name"] == "get_weather" and out["model_calls"] == 2
    assert engine.calls[1].messages[-1].content == TOOL_CALL_REQUIRED


def test_an_agent_on_the_lazy_qwen_provider_runs_the_fetched_tool():
    from jarvis_core.tools import BaseTool, ToolPolicy
    from jarvis_core.types import ToolSpec

    class Weather(BaseTool):
        spec = ToolSpec.from_openai(WEATHER)
        policy = ToolPolicy(isolation="inline", timeout=5.0)

        def run(self, city: str) -> str:
            return f"sunny in {city}"

    engine = FakeEngine([_qwen_call("get_tools", names=["get_weather"]), _qwen_call("get_weather", city="Rome"),
                         "Sunny in Rome."], allowed_options=ENGINE_OPTIONS)
    session = PromptSession(get_provider("Qwen25_14B_Untrained"))
    result = PromptDrivenAgent(engine, model="qwen2.5-14b", tools=[Weather()], prompt_session=session).run("weather?")
    assert result.content == "Sunny in Rome."
    assert [(r.name, r.ok) for r in result.tool_results] == [("get_tools", True), ("get_weather", True)]
    assert result.tool_results[1].content == "sunny in Rome"


# -- backend-default rules --------------------------------------------------------------------------------
@pytest.mark.parametrize("model, provider", [
    ("Qwen/Qwen2.5-7B-Instruct", "Qwen25MediumUntrained"),
    ("qwen2.5:7b", "Qwen25MediumUntrained"),
    ("Qwen/Qwen2.5-72B-Instruct", "Qwen25_32B_Untrained"),
    ("Qwen/Qwen2.5-1.5B-Instruct", "Qwen25_3B_Compressed"),
    ("Qwen/Qwen2.5-Coder-7B-Instruct", "Qwen25MediumUntrained"),
    ("qwen2.5-coder:32b", "Qwen25_32B_Untrained"),
    ("Qwen/Qwen2.5-VL-7B-Instruct", None),
    ("Qwen/Qwen3-8B", "Qwen3_8B_Compressed"),
    ("qwen3:4b", "Qwen3_8B_Compressed"),
    ("Qwen/Qwen3-30B-A3B", "Qwen3LargeUntrained"),
    ("Qwen/Qwen3-235B-A22B-Instruct-2507", "Qwen3LargeUntrained"),
    ("Qwen/Qwen3-Coder-30B-A3B-Instruct", None),
    ("qwen3-coder:30b", None),
    ("Qwen/Qwen3-VL-8B-Instruct", None),
    ("Qwen/Qwen3-Embedding-8B", None),
    ("unsloth/Qwen3.5-9B-GGUF", "Qwen3_5_9B_Compressed"),
])
def test_backend_default_rules_by_model_id(model, provider):
    resolved = check_default_provider(model, provider, plugin="prompts-qwen", distribution="jarvis-prompts-qwen")
    if "coder" in model.lower() and model.lower().startswith(("qwen/qwen3", "qwen3")):
        assert resolved.tool_parser == "qwen3_xml"  # the format the Qwen 3 providers do not read
