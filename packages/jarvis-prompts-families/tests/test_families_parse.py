"""Every Hermes, Llama, Mistral and Gemma case of the recorded reference data passes through our provider of
the same name, and the tolerances each family's reader documents hold."""

from __future__ import annotations

import json
import pathlib

import pytest

from jarvis_core.prompts import get_provider
from jarvis_prompts_families.plugin import PROVIDERS

CASES = json.loads((pathlib.Path(__file__).parent / "data" / "prompt_provider_cases.json").read_text(encoding="utf-8"))
FAMILY_CASES = [c for c in CASES if not c["provider"].startswith("Qwen")]
TEXT_TAG = [n for n in PROVIDERS if n != "LlamaSmallUntrained"]
LLAMA_FUNCTION = ["Llama31MediumUntrained", "Llama32_3B_Compressed", "Llama33ThinkingMediumUntrained"]


def _parse(name: str, raw: str):
    out = get_provider(name).parse_response(raw)
    return None if out is None else json.loads(out)


def test_the_data_has_the_family_cases_and_we_register_every_provider_they_name():
    assert len(CASES) == 27 and len(FAMILY_CASES) == 16
    assert {c["provider"] for c in FAMILY_CASES} <= set(PROVIDERS)
    assert {get_provider(n).model_family for n in {c["provider"] for c in FAMILY_CASES}} == {
        "hermes", "llama", "mistral", "gemma"}


@pytest.mark.parametrize("case", FAMILY_CASES, ids=[f"{c['provider']}: {c['note'][:40]}" for c in FAMILY_CASES])
def test_reference_case(case):
    assert _parse(case["provider"], case["raw"]) == case["expected_jarvis_json"]


@pytest.mark.parametrize("name", TEXT_TAG)
def test_every_text_provider_reads_tool_call_tags_jarvis_json_and_text(name):
    two = _parse(name, '<tool_call>{"name": "a", "arguments": {"x": 1}}</tool_call>'
                       '<tool_call>{"name": "b", "arguments": {}}</tool_call>')
    assert two == {"message": "", "tool_calls": [{"name": "a", "arguments": {"x": 1}}, {"name": "b", "arguments": {}}],
                   "error": None}
    assert _parse(name, "Hello there.") == {"message": "Hello there.", "tool_calls": [], "error": None}
    assert _parse(name, '{"message": "hi", "tool_calls": [], "error": null}') is None  # passes through
    assert _parse(name, "") is None
    cut = _parse(name, 'On it. <tool_call>{"name": "get_weather", "arguments": {"ci')
    assert cut["tool_calls"] == [] and "cut off" in cut["error"]


def test_hermes_keeps_date_keys_as_written_and_mlx_wraps_them():
    raw = '<tool_call>{"name": "t", "arguments": {"resolved_datetimes": "today", "n": "5"}}</tool_call>'
    assert _parse("HermesMediumUntrained", raw)["tool_calls"][0]["arguments"] == {"resolved_datetimes": "today", "n": "5"}
    assert _parse("HermesMediumMlx", raw)["tool_calls"][0]["arguments"] == {"resolved_datetimes": ["today"], "n": 5}
    assert _parse("HermesMediumMlx", raw.replace('"5"', '"5.5"'))["tool_calls"][0]["arguments"]["n"] == "5.5"
    assert get_provider("HermesMediumUntrained").sanitize_text("<scratch_pad>plan</scratch_pad> Hi") == "Hi"


@pytest.mark.parametrize("name", LLAMA_FUNCTION)
def test_llama_function_tags_tolerate_drift(name):
    calls = lambda raw: _parse(name, raw)["tool_calls"]  # noqa: E731
    assert calls('<function=t>{"param": {"a": 1}}</function>') == [{"name": "t", "arguments": {"a": 1}}]
    assert calls('<function=t>{\\"a\\": 1}</function>') == [{"name": "t", "arguments": {"a": 1}}]
    assert calls('<function=t>{"a": 1}"</function>') == [{"name": "t", "arguments": {"a": 1}}]
    assert calls('<function = t>{"a": 1}</function >') == [{"name": "t", "arguments": {"a": 1}}]
    assert calls('Sure! <function=t>{"a": 1}</function> done') == [{"name": "t", "arguments": {"a": 1}}]
    assert calls('<function=t>{"a": 1, "failure_message": "x"}</function>') == [
        {"name": "t", "arguments": {"a": 1, "failure_message": "x"}}]
    # nothing readable: the text is the message, never a made-up call
    assert _parse(name, "<function=t>not json</function>")["tool_calls"] == []


def test_llama33_thinking_cut_off_is_an_empty_reply_with_an_error_and_tool_call_comes_first():
    out = _parse("Llama33ThinkingMediumUntrained", "<think>Let me think about the")
    assert out["message"] == "" and out["tool_calls"] == [] and "cut off" in out["error"]
    both = _parse("Llama33ThinkingMediumUntrained",
                  '<tool_call>{"name": "a", "arguments": {}}</tool_call><function=b>{}</function>')
    assert both["tool_calls"] == [{"name": "a", "arguments": {}}]
    assert _parse("Llama33ThinkingMediumUntrained", "<think>x</think>Hi")["message"] == "Hi"


def test_llama_small_replies_in_jarvis_json_read_downstream():
    p = get_provider("LlamaSmallUntrained")
    assert p.get_response_format() is None  # the shared Jarvis JSON schema
    assert p.parse_response('{"message": "hi", "tool_calls": [], "error": null}') is None


def test_mistral_native_forms_and_tool_call_first():
    calls = lambda name, raw: _parse(name, raw)["tool_calls"]  # noqa: E731
    for name in ("Mistral7bMediumUntrained", "MixtralLargeUntrained", "Ministral14bLargeUntrained"):
        assert calls(name, '[TOOL_CALLS]get_weather[ARGS]{"city": "Rome"}') == [
            {"name": "get_weather", "arguments": {"city": "Rome"}}]
        assert calls(name, '<tool_call>{"name": "a", "arguments": {}}</tool_call>') == [{"name": "a", "arguments": {}}]
        assert _parse(name, "[TOOL_CALLS] nonsense")["tool_calls"] == []
    assert _parse("Ministral14bLargeUntrained", "Hello.<|im_end|><|im_start|>user\nmore")["message"] == "Hello."


@pytest.mark.parametrize("name", ["Gemma3MediumUntrained", "Gemma3Compressed", "Gemma4_31B_Untrained"])
def test_gemma3_and_4_strip_turn_tokens(name):
    out = _parse(name, '<start_of_turn>model\n<tool_call>{"name": "a", "arguments": {}}</tool_call><end_of_turn>')
    assert out["tool_calls"] == [{"name": "a", "arguments": {}}]
    assert _parse(name, "Hi there<end_of_turn>")["message"] == "Hi there"


def test_gemma4_unclosed_thinking_channel_is_not_spoken():
    assert _parse("Gemma4_31B_Untrained", "<|channel>thought\nstill going") is None
    assert get_provider("Gemma4_31B_Untrained").sanitize_text("<|channel>thought\nx<channel|>Hello") == "Hello"
