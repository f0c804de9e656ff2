"""Every Hermes, Llama, Mistral and Gemma case of the recorded reference data passes through our provider of
the same name, and the tolerances each family's reader documents hold."""

from __future__ import annotations

import pathlib

import pytest

from jarvis_core.prompts import get_provider
from jarvis_core.testing import check_prompt_case, load_prompt_cases, parse_reply, prompt_case_id
from jarvis_prompts_families.plugin import PROVIDERS

CASES = load_prompt_cases(pathlib.Path(__file__).parent / "data" / "prompt_provider_cases.json")
FAMILY_CASES = [c for c in CASES if not c["provider"].startswith("Qwen")]
TEXT_TAG = [n for n in PROVIDERS if n != "LlamaSmallUntrained"]
LLAMA_FUNCTION = ["Llama31MediumUntrained", "Llama32_3B_Compressed", "Llama33ThinkingMediumUntrained"]


def test_the_data_has_the_family_cases_and_we_register_every_provider_they_name():
    assert len(CASES) == 27 and len(FAMILY_CASES) == 16
    assert {c["provider"] for c in FAMILY_CASES} <= set(PROVIDERS)
    assert {get_provider(n).model_family for n in {c["provider"] for c in FAMILY_CASES}} == {
        "hermes", "llama", "mistral", "gemma"}


@pytest.mark.parametrize("case", FAMILY_CASES, ids=prompt_case_id)
def test_reference_case(case):
    check_prompt_case(case)


@pytest.mark.parametrize("name", TEXT_TAG)
def test_every_text_provider_reads_tool_call_tags_jarvis_json_and_text(name):
    two = parse_reply(name, '<tool_call>{"name": "a", "arguments": {"x": 1}}</tool_call>'
                       '<tool_call>{"name": "b", "arguments": {}}</tool_call>')
    assert two == {"message": "", "tool_calls": [{"name": "a", "arguments": {"x": 1}}, {"name": "b", "arguments": {}}],
                   "error": None}
    assert parse_reply(name, "Hello there.") == {"message": "Hello there.", "tool_calls": [], "error": None}
    assert parse_reply(name, '{"message": "hi", "tool_calls": [], "error": null}') is None  # passes through
    assert parse_reply(name, "") is None
    cut = parse_reply(name, 'On it. <tool_call>{"name": "get_weather", "arguments": {"ci')
    assert cut["tool_calls"] == [] and "cut off" in cut["error"]


def test_hermes_keeps_date_keys_as_written_and_mlx_wraps_them():
    raw = '<tool_call>{"name": "t", "arguments": {"resolved_datetimes": "today", "n": "5"}}</tool_call>'
    assert parse_reply("HermesMediumUntrained", raw)["tool_calls"][0]["arguments"] == {"resolved_datetimes": "today", "n": "5"}
    assert parse_reply("HermesMediumMlx", raw)["tool_calls"][0]["arguments"] == {"resolved_datetimes": ["today"], "n": 5}
    assert parse_reply("HermesMediumMlx", raw.replace('"5"', '"5.5"'))["tool_calls"][0]["arguments"]["n"] == "5.5"
    assert get_provider("HermesMediumUntrained").sanitize_text("<scratch_pad>plan</scratch_pad> Hi") == "Hi"


@pytest.mark.parametrize("name", LLAMA_FUNCTION)
def test_llama_function_tags_tolerate_drift(name):
    calls = lambda raw: parse_reply(name, raw)["tool_calls"]  # noqa: E731
    assert calls('<function=t>{"param": {"a": 1}}</function>') == [{"name": "t", "arguments": {"a": 1}}]
    assert calls('<function=t>{\\"a\\": 1}</function>') == [{"name": "t", "arguments": {"a": 1}}]
    assert calls('<function=t>{"a": 1}"</function>') == [{"name": "t", "arguments": {"a": 1}}]
    assert calls('<function = t>{"a": 1}</function >') == [{"name": "t", "arguments": {"a": 1}}]
    assert calls('Sure! <function=t>{"a": 1}</function> done') == [{"name": "t", "arguments": {"a": 1}}]
    assert calls('<function=t>{"a": 1, "failure_message": "x"}</function>') == [
        {"name": "t", "arguments": {"a": 1, "failure_message": "x"}}]
    # nothing readable: the text is the message, never a made-up call
    assert parse_reply(name, "<function=t>not json</function>")["tool_calls"] == []


def test_llama33_thinking_cut_off_is_an_empty_reply_with_an_error_and_tool_call_comes_first():
    out = parse_reply("Llama33ThinkingMediumUntrained", "<think>Let me think about the")
    assert out["message"] == "" and out["tool_calls"] == [] and "cut off" in out["error"]
    both = parse_reply("Llama33ThinkingMediumUntrained",
                  '<tool_call>{"name": "a", "arguments": {}}</tool_call><function=b>{}</function>')
    assert both["tool_calls"] == [{"name": "a", "arguments": {}}]
    assert parse_reply("Llama33ThinkingMediumUntrained", "<think>x</think>Hi")["message"] == "Hi"


def test_llama_small_replies_in_jarvis_json_read_downstream():
    p = get_provider("LlamaSmallUntrained")
    assert p.get_response_format() is None  # the shared Jarvis JSON schema
    assert p.parse_response('{"message": "hi", "tool_calls": [], "error": null}') is None


def test_mistral_native_forms_and_tool_call_first():
    calls = lambda name, raw: parse_reply(name, raw)["tool_calls"]  # noqa: E731
    for name in ("Mistral7bMediumUntrained", "MixtralLargeUntrained", "Ministral14bLargeUntrained"):
        assert calls(name, '[TOOL_CALLS]get_weather[ARGS]{"city": "Rome"}') == [
            {"name": "get_weather", "arguments": {"city": "Rome"}}]
        assert calls(name, '<tool_call>{"name": "a", "arguments": {}}</tool_call>') == [{"name": "a", "arguments": {}}]
        assert parse_reply(name, "[TOOL_CALLS] nonsense")["tool_calls"] == []
    assert parse_reply("Ministral14bLargeUntrained", "Hello.<|im_end|><|im_start|>user\nmore")["message"] == "Hello."


@pytest.mark.parametrize("name", ["Gemma3MediumUntrained", "Gemma3Compressed", "Gemma4_31B_Untrained"])
def test_gemma3_and_4_strip_turn_tokens(name):
    out = parse_reply(name, '<start_of_turn>model\n<tool_call>{"name": "a", "arguments": {}}</tool_call><end_of_turn>')
    assert out["tool_calls"] == [{"name": "a", "arguments": {}}]
    assert parse_reply(name, "Hi there<end_of_turn>")["message"] == "Hi there"


def test_gemma4_unclosed_thinking_channel_is_not_spoken():
    assert parse_reply("Gemma4_31B_Untrained", "<|channel>thought\nstill going") is None
    assert get_provider("Gemma4_31B_Untrained").sanitize_text("<|channel>thought\nx<channel|>Hello") == "Hello"
