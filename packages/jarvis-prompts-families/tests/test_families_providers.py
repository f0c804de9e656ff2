"""The family providers' prompts, flags and capabilities, a round trip per family through ``Jarvis.ask`` on a
scripted engine, training examples, and the backend-default rules that name them."""

from __future__ import annotations

import json

import pytest

from jarvis_core import Jarvis
from jarvis_core.prompts import PromptProvider, get_provider
from jarvis_core.prompts.blocks import DATE_KEYS
from jarvis_core.testing import (
    SAMPLE_COMMANDS,
    SAMPLE_CONTEXT,
    FakeEngine,
    check_default_provider,
    check_shared_prompt,
)
from jarvis_core.types import Role
from jarvis_prompts_families.plugin import MODEL_RULES, PROVIDERS

WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "Current weather for a city",
    "parameters": {"type": "object", "properties": {
        "city": {"type": "string", "description": "the city, e.g. Paris"},
        "date": {"type": "string", "format": "date", "description": "which day"}}, "required": ["city"]},
    "allow_direct_answer": False, "antipatterns": ["questions about climate history"]}}
TIMER = {"name": "set_timer", "description": "Start a countdown",
         "parameters": {"type": "object", "properties": {"duration_seconds": {"type": "integer", "minimum": 1}}}}
CONTEXT, COMMANDS = SAMPLE_CONTEXT, list(SAMPLE_COMMANDS)
ENGINE_OPTIONS = {"response_format"}
FAMILIES = {"Hermes": "hermes", "Llama": "llama", "Mistral": "mistral", "Mixtral": "mistral",
            "Ministral": "ministral", "Gemma": "gemma"}
COMPRESSED = [n for n in PROVIDERS if "Compressed" in n]


def _prompt(name: str, context=CONTEXT, tools=(WEATHER, TIMER), commands=COMMANDS) -> str:
    return get_provider(name).build_system_prompt(context, "Europe/Rome", list(tools), commands)


@pytest.mark.parametrize("name", list(PROVIDERS))
def test_every_provider_is_a_provider_with_its_name_capabilities_and_the_shared_prompt(name):
    p = get_provider(name.lower())
    assert isinstance(p, PromptProvider) and p.name == name
    caps = p.get_capabilities()
    family = next(v for k, v in FAMILIES.items() if name.startswith(k))
    assert caps["provider_name"] == name and caps["model_family"] == family
    assert caps["training_tier"] == ("trained" if name == "HermesMediumTrained" else "untrained")
    assert caps["size_tier"] in ("small", "medium", "large")
    assert caps["use_tool_classifier"] is True and caps["supports_native_tools"] is False
    assert p.get_response_format() == (None if name == "LlamaSmallUntrained" else {"type": "text"})
    prompt = check_shared_prompt(name, [WEATHER, TIMER])
    assert all(f'"{key}"' in prompt for key in DATE_KEYS)
    assert "get_weather" in prompt and "set_timer" in prompt
    assert "allow_direct_answer" not in prompt  # Jarvis extras stay out of the schemas
    no_tools = _prompt(name, tools=())
    assert "<tools>" not in no_tools and "Functions:" not in no_tools and "Example:" not in no_tools


def test_stable_prefix_does_not_depend_on_the_speaker():
    for name in PROVIDERS:
        a, b = _prompt(name), _prompt(name, context={**CONTEXT, "speaker_name": "sam"})
        cut = a.index("You are speaking with")
        assert a[:cut] == b[:cut]


@pytest.mark.parametrize("name", COMPRESSED)
def test_compressed_prompts_show_compacted_schemas(name):
    """The compressed variants go through the shared compactor: no parameter descriptions, no format hints."""
    full, short = _prompt(name.replace("Compressed", "MediumUntrained") if "Llama" not in name
                          else "Llama31MediumUntrained"), _prompt(name)
    assert "the city, e.g. Paris" in full and '"format":"date"' in full
    assert "the city, e.g. Paris" not in short and '"format"' not in short and '"minimum"' not in short
    assert "Current weather for a city" in short  # the tool's own description picks the tool
    assert len(short) < len(full)


def test_call_formats_differ_by_family():
    assert "<function=example_function_name>" in _prompt("Llama31MediumUntrained")
    assert "<tool_call>" not in _prompt("Llama31MediumUntrained")
    assert "get_weather(city: string, date: string): Current weather for a city" in _prompt("Llama32_3B_Compressed")
    assert "<tool_call>" in _prompt("Llama33ThinkingMediumUntrained")
    gemma = _prompt("Gemma2MediumUntrained")
    assert 'Example:\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "<city>"}}\n</tool_call>' in gemma
    assert "Example:" not in _prompt("HermesMediumUntrained")
    assert '"tool_calls"' in _prompt("LlamaSmallUntrained")


def test_flags_and_suffixes():
    assert get_provider("Llama33ThinkingMediumUntrained").user_message_suffix == "/no_think"
    assert get_provider("MixtralLargeUntrained").force_tool_calls is True
    assert not any(get_provider(n).force_tool_calls for n in PROVIDERS if n != "MixtralLargeUntrained")
    assert all(get_provider(n).user_message_suffix == "" for n in PROVIDERS if n != "Llama33ThinkingMediumUntrained")


@pytest.mark.parametrize("name, call", [
    ("HermesMediumUntrained", ' <tool_call>\n{"name": "set_timer", "arguments": {"duration_seconds": 60}}\n</tool_call>'),
    ("Llama31MediumUntrained", ' <function=set_timer>{"duration_seconds": 60}</function>'),
    ("Llama33ThinkingMediumUntrained",
     ' <tool_call>\n{"name": "set_timer", "arguments": {"duration_seconds": 60}}\n</tool_call>'),
    ("LlamaSmallUntrained", ' {"message": "", "tool_calls": [{"name": "set_timer", "arguments": {"duration_seconds": 60}}], "error": null}'),
])
def test_training_completion_is_the_models_own_format_and_reads_back(name, call):
    p = get_provider(name)
    completion = p.build_training_completion({"name": "set_timer", "arguments": {"duration_seconds": 60}})
    assert completion == call
    read = p.parse_response(completion)
    reply = json.loads(read if read is not None else completion)
    assert reply["tool_calls"] == [{"name": "set_timer", "arguments": {"duration_seconds": 60}}]
    system = p.build_training_system_prompt()
    assert "room=unknown" in system and "<tools>" not in system


@pytest.mark.parametrize("name, raw, model", [
    ("HermesMediumUntrained", '<scratch_pad>weather</scratch_pad><tool_call>{"name": "get_weather", '
                              '"arguments": {"city": "Rome"}, "failure_message": "No weather."}</tool_call>',
     "NousResearch/Hermes-3-Llama-3.1-8B"),
    ("Llama31MediumUntrained", '<function=get_weather>{"city": "Rome"}</function>', "meta-llama/Llama-3.1-8B-Instruct"),
    ("Mistral7bMediumUntrained", '[TOOL_CALLS] [{"name": "get_weather", "arguments": {"city": "Rome"}, "id": "a1b2c3d4e"}]',
     "mistralai/Mistral-7B-Instruct-v0.3"),
    ("Gemma3MediumUntrained", '```json\n{"name": "get_weather", "arguments": {"city": "Rome"}}\n```', "google/gemma-3-12b-it"),
])
def test_text_mode_round_trip_per_family(name, raw, model):
    engine = FakeEngine([raw], allowed_options=ENGINE_OPTIONS)
    with Jarvis(engine=engine, model=model) as j:
        out = j.ask_full("weather in rome?", prompt_provider="auto", tools=[WEATHER, TIMER], node_context=CONTEXT,
                         timezone="Europe/Rome", available_commands=COMMANDS).to_dict()
    (call,) = engine.calls
    assert out["prompt_provider"] == name
    assert [m.role for m in call.messages] == [Role.SYSTEM, Role.USER]
    assert call.messages[0].content == _prompt(name)
    assert call.tools is None and call.options == {"response_format": {"type": "text"}}
    assert out["content"] == "" and out["finish_reason"] == "tool_calls"
    assert [(c["name"], json.loads(c["arguments"])) for c in out["tool_calls"]] == [("get_weather", {"city": "Rome"})]


def test_forced_mixtral_is_asked_again_once_when_it_answers_in_words():
    engine = FakeEngine(["It is sunny in Rome.", '<tool_call>{"name": "get_weather", "arguments": {"city": "Rome"}}'
                                                 '</tool_call>'], allowed_options=ENGINE_OPTIONS)
    with Jarvis(engine=engine, model="m") as j:
        out = j.ask_full("weather in rome?", prompt_provider="MixtralLargeUntrained", tools=[WEATHER]).to_dict()
    assert len(engine.calls) == 2 and out["tool_calls"][0]["name"] == "get_weather"


def test_llama33_suffix_reaches_the_user_turn():
    engine = FakeEngine(["<think>\n</think>Hello!"], allowed_options=ENGINE_OPTIONS)
    with Jarvis(engine=engine, model="m") as j:
        assert j.ask("hi", prompt_provider="Llama33ThinkingMediumUntrained") == "Hello!"
    assert engine.calls[0].messages[-1].content == "hi /no_think"


# -- backend-default rules --------------------------------------------------------------------------------
@pytest.mark.parametrize("model, provider", [
    ("NousResearch/Hermes-3-Llama-3.1-8B", "HermesMediumUntrained"),
    ("hermes3:8b", "HermesMediumUntrained"),
    ("NousResearch/Hermes-2-Pro-Mistral-7B", "HermesMediumUntrained"),
    ("meta-llama/Llama-3.1-8B-Instruct", "Llama31MediumUntrained"),
    ("llama3.1:8b", "Llama31MediumUntrained"),
    ("meta-llama/Llama-3.3-70B-Instruct", "Llama31MediumUntrained"),
    ("meta-llama/Llama-3.2-3B-Instruct", "Llama32_3B_Compressed"),
    ("meta-llama/Llama-3.2-11B-Vision-Instruct", None),
    ("mistralai/Mistral-7B-Instruct-v0.3", "Mistral7bMediumUntrained"),
    ("mistral:7b", "Mistral7bMediumUntrained"),
    ("mistralai/Mixtral-8x7B-Instruct-v0.1", "MixtralLargeUntrained"),
    ("mistralai/Ministral-3-14B-Instruct-2512", "Ministral14bLargeUntrained"),
    ("google/gemma-2-9b-it", "Gemma2MediumUntrained"),
    ("gemma2:2b", "Gemma2Compressed"),
    ("google/gemma-3-12b-it", "Gemma3MediumUntrained"),
    ("gemma3:1b", "Gemma3Compressed"),
    ("google/gemma-3n-E4B-it", None),
    ("google/gemma-4-31b-it", "Gemma4_31B_Untrained"),
])
def test_backend_default_rules_by_model_id(model, provider):
    check_default_provider(model, provider, plugin="prompts-families", distribution="jarvis-prompts-families")


def test_every_rule_names_a_registered_provider():
    assert {provider for _pattern, provider in MODEL_RULES} <= set(PROVIDERS)
