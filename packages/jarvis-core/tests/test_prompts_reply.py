"""Jarvis JSON and the shared reply-reading blocks: whatever a model writes becomes a reply, never an error."""

from __future__ import annotations

import json
import pathlib
import random

import pytest

from jarvis_core.prompts import JarvisReply, JarvisToolCall
from jarvis_core.prompts.output import (
    fenced_body,
    normalize_array_params,
    parse_tagged_calls,
    strip_blocks,
    strip_think,
)

#: The reference parse_response cases (all families), the core's own copy.
CASES = pathlib.Path(__file__).resolve().parent / "data" / "prompt_provider_cases.json"


def _dict(reply):
    return None if reply is None else reply.to_dict()


# -- the typed value ------------------------------------------------------------------------------------
def test_reply_round_trips_through_json_and_keeps_failure_message():
    reply = JarvisReply(message="ok", tool_calls=[JarvisToolCall("set_timer", {"s": 5}, "no timer")])
    again = JarvisReply.parse(reply.to_json())
    assert again == reply
    assert again.to_dict()["tool_calls"][0]["failure_message"] == "no timer"


def test_tool_calls_become_engine_calls_with_fresh_ids_and_json_arguments():
    calls = JarvisReply.calls([JarvisToolCall("a", {"x": 1}), JarvisToolCall("a", {"x": 2})]).to_tool_calls()
    assert [c.name for c in calls] == ["a", "a"]
    assert [json.loads(c.arguments) for c in calls] == [{"x": 1}, {"x": 2}]
    assert calls[0].id.startswith("call_") and calls[0].id != calls[1].id


@pytest.mark.parametrize("obj, expected", [
    ({"tool_calls": [{"function": {"name": "f", "arguments": '{"a": 1}'}}]}, [("f", {"a": 1})]),
    ({"tool_call": {"name": "f", "parameters": {"b": 2}}}, [("f", {"b": 2})]),
    ({"tool_calls": [{"name": "f", "arguments": [1, 2]}, {"name": "", "arguments": {}}, "junk",
                     {"name": "g"}]}, [("g", {})]),
    ({"tool_calls": [{"name": "f", "arguments": "not json"}]}, []),
])
def test_lenient_call_shapes(obj, expected):
    reply = JarvisReply.from_object(obj)
    assert [(c.name, dict(c.arguments)) for c in reply.tool_calls] == expected


def test_parse_is_none_for_text_that_is_not_jarvis_json():
    for text in ("", "hello", "[1, 2]", '{"foo": 1}', '{"message": "x"} trailing', "{bad"):
        assert JarvisReply.parse(text) is None, text


def test_from_text_finds_jarvis_json_in_prose_else_keeps_the_text():
    found = JarvisReply.from_text('Sure: {"message": "hi", "tool_calls": [], "error": null} done')
    assert found == JarvisReply.text("hi")
    assert JarvisReply.from_text("  just words \n") == JarvisReply.text("just words")
    assert JarvisReply.from_text(None) == JarvisReply.text("")


def test_nothing_a_model_writes_raises():
    rng = random.Random(12)
    alphabet = '{}[]":,<>/ \\ntool_call<think></think>namearguments0123abc`'
    pieces = ['<tool_call>', '</tool_call>', '{"name": "f", "arguments": {', '}}', '<think>', '</think>', '```json\n',
              '```', '{"tool_calls": [', '"message"', "[[[[", "{" * 50]
    for _ in range(400):
        text = "".join(rng.choice(pieces) if rng.random() < 0.3 else rng.choice(alphabet) for _ in range(rng.randint(0, 60)))
        JarvisReply.from_text(text)
        JarvisReply.parse(text)
        parse_tagged_calls(strip_think(text))
    JarvisReply.from_text("{" * 100_000)  # deep nesting and long brace runs are bounded


# -- shared blocks ------------------------------------------------------------------------------------
@pytest.mark.parametrize("raw, expected", [
    ("<think>plan</think>answer", "answer"),
    ("<think>\n\n</think>\n\nHello", "Hello"),
    ("<think>cut off before the end", ""),
    ("reasoning opened by the template</think>answer", "answer"),
    ("a<think>x</think>b<think>y</think>c", "abc"),
    ("no thinking at all", "no thinking at all"),
])
def test_strip_think(raw, expected):
    assert strip_think(raw) == expected


def test_strip_blocks_leaves_an_unclosed_block():
    assert strip_blocks("<scratch_pad>x</scratch_pad>Hi<scratch_pad>y", "<scratch_pad>", "</scratch_pad>") == \
        "Hi<scratch_pad>y"


def test_array_params_wrap_a_single_string_only():
    out = normalize_array_params({"resolved_datetimes": "today", "other": "x"})
    assert out == {"resolved_datetimes": ["today"], "other": "x"}
    assert normalize_array_params({"resolved_datetimes": ["a", "b"]}) == {"resolved_datetimes": ["a", "b"]}


def test_fenced_body():
    assert fenced_body('text ```json\n{"a": 1}\n``` more') == '{"a": 1}'
    assert fenced_body("```\nplain\n```") == "plain"
    assert fenced_body("no fence") is None


# -- edge cases of the tagged-call skeleton -------------------------------------------------------------
def test_empty_output_is_none():
    assert parse_tagged_calls("") is None
    assert parse_tagged_calls("  \n ") is None


def test_cut_off_call_with_complete_json_is_still_a_call():
    reply = parse_tagged_calls('<tool_call>{"name": "get_weather", "arguments": {"city": "Oslo"}}')
    assert _dict(reply) == {"message": "", "tool_calls": [{"name": "get_weather", "arguments": {"city": "Oslo"}}],
                            "error": None}


def test_cut_off_call_with_incomplete_json_says_so():
    reply = parse_tagged_calls('Checking.\n<tool_call>{"name": "get_weather", "argu')
    assert reply is not None and reply.tool_calls == ()
    assert reply.message == "Checking."
    assert "cut off" in (reply.error or "")


def test_closed_calls_before_a_cut_off_one_are_kept():
    raw = '<tool_call>{"name": "a", "arguments": {}}</tool_call><tool_call>{"name": "b", "argu'
    assert [c.name for c in parse_tagged_calls(raw).tool_calls] == ["a"]


def test_two_calls_and_a_call_plus_text():
    two = parse_tagged_calls('<tool_call>{"name": "a", "arguments": {"x": 1}}</tool_call>\n'
                             '<tool_call>{"name": "b", "arguments": {"resolved_datetimes": "today"}}</tool_call>')
    assert [(c.name, dict(c.arguments)) for c in two.tool_calls] == [("a", {"x": 1}), ("b", {"resolved_datetimes": ["today"]})]
    plus = parse_tagged_calls('<tool_call>{"name": "a", "arguments": {}}</tool_call> Done, anything else?')
    assert plus.message == "" and [c.name for c in plus.tool_calls] == ["a"]


# -- other families' reference cases that the shared blocks cover ----------------------------------------
def _case(provider: str, contains: str):
    cases = json.loads(CASES.read_text(encoding="utf-8"))
    return next(c for c in cases if c["provider"] == provider and contains in c["raw"])


def test_llama33_thinking_case_think_stripped_then_tool_call():
    case = _case("Llama33ThinkingMediumUntrained", "<think>")
    assert _dict(parse_tagged_calls(strip_think(case["raw"]))) == case["expected_jarvis_json"]


def test_gemma3_fenced_bare_call_case():
    case = _case("Gemma3MediumUntrained", "```json\n{")
    assert _dict(parse_tagged_calls(case["raw"])) == case["expected_jarvis_json"]


def test_hermes_scratch_pad_case_with_strip_blocks():
    case = _case("HermesMediumUntrained", "Hello, how")
    stripped = strip_blocks(case["raw"], "<scratch_pad>", "</scratch_pad>")
    assert _dict(parse_tagged_calls(stripped)) == case["expected_jarvis_json"]


def test_array_normalisation_of_the_mlx_case():
    case = _case("HermesMediumMlx", "resolved_datetimes")
    args = parse_tagged_calls(case["raw"]).tool_calls[0].arguments
    assert args["resolved_datetimes"] == case["expected_jarvis_json"]["tool_calls"][0]["arguments"]["resolved_datetimes"]
