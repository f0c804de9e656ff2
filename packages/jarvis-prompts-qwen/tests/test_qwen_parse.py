"""Every Qwen case of the recorded reference data passes through our providers of the same names, and the
edge cases the data does not cover behave as documented."""

from __future__ import annotations

import pathlib

import pytest

from jarvis_core.prompts import get_provider
from jarvis_core.testing import check_prompt_case, load_prompt_cases, parse_reply
from jarvis_prompts_qwen.plugin import PROVIDERS

CASES = load_prompt_cases(pathlib.Path(__file__).parent / "data" / "prompt_provider_cases.json")
QWEN_CASES = [c for c in CASES if c["provider"].startswith("Qwen")]
TEXT_PROVIDERS = [n for n in PROVIDERS if n != "Qwen3_5_9B_Compressed"]
THINKING = ["Qwen3_8B_Compressed", "Qwen3LargeUntrained", "Qwen3_14B_Compressed"]


def test_the_data_has_the_qwen_cases_of_three_providers():
    assert len(QWEN_CASES) == 11
    assert {c["provider"] for c in QWEN_CASES} == {"Qwen25MediumUntrained", "Qwen3LargeUntrained", "Qwen3_8B_Compressed"}


@pytest.mark.parametrize("case", QWEN_CASES, ids=[c["note"][:50] for c in QWEN_CASES])
def test_reference_case(case):
    check_prompt_case(case)


@pytest.mark.parametrize("name", TEXT_PROVIDERS)
@pytest.mark.parametrize("case", [c for c in QWEN_CASES if c["provider"] == "Qwen25MediumUntrained"],
                         ids=lambda c: c["note"][:40])
def test_every_text_provider_reads_the_qwen25_cases(name, case):
    """The Qwen 2.5 reading is the base of every text-mode provider (Qwen 3 only strips thinking first)."""
    check_prompt_case({**case, "provider": name})


@pytest.mark.parametrize("name", TEXT_PROVIDERS)
def test_edge_cases(name):
    assert parse_reply(name, "") is None
    two = parse_reply(name, '<tool_call>{"name": "a", "arguments": {"resolved_datetimes": "today"}}</tool_call>'
                       '<tool_call>{"name": "b", "arguments": {}}</tool_call>')
    assert two["tool_calls"] == [{"name": "a", "arguments": {"resolved_datetimes": ["today"]}},
                                 {"name": "b", "arguments": {}}]
    plus = parse_reply(name, 'Sure.\n<tool_call>{"name": "a", "arguments": {}}</tool_call>\nAnything else?')
    assert plus == {"message": "", "tool_calls": [{"name": "a", "arguments": {}}], "error": None}
    cut = parse_reply(name, 'On it. <tool_call>{"name": "get_weather", "arguments": {"ci')
    assert cut["tool_calls"] == [] and cut["message"] == "On it." and "cut off" in cut["error"]
    done = parse_reply(name, '<tool_call>{"name": "get_weather", "arguments": {"city": "Rome"}}')
    assert done["tool_calls"] == [{"name": "get_weather", "arguments": {"city": "Rome"}}]
    fenced = parse_reply(name, '```json\n{"name": "get_weather", "arguments": {"city": "Lima"}}\n```')
    assert fenced["tool_calls"] == [{"name": "get_weather", "arguments": {"city": "Lima"}}]
    assert parse_reply(name, '{"message": "hi", "tool_calls": [], "error": null}') is None  # Jarvis JSON passes through


@pytest.mark.parametrize("name", THINKING)
def test_thinking_is_stripped_before_reading(name):
    raw = '<think>the user wants weather</think><message><tool_call>{"name": "w", "arguments": {}}</tool_call></message>'
    assert parse_reply(name, raw)["tool_calls"] == [{"name": "w", "arguments": {}}]
    assert parse_reply(name, "<think>never closed") is None
    assert get_provider(name).sanitize_text("<think>x</think> Hello") == "Hello"


def test_qwen25_keeps_think_tags_as_text():
    """Qwen 2.5 does not think: a think tag is the model's text, not noise to strip."""
    assert parse_reply("Qwen25MediumUntrained", "<think>x</think>Hi")["message"] == "<think>x</think>Hi"


def test_native_provider_does_notparse_reply():
    assert get_provider("Qwen3_5_9B_Compressed").parse_response('<tool_call>{"name": "a", "arguments": {}}</tool_call>') is None
