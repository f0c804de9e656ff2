"""Property tests: parsers never raise on any text, streams equal whole parses, and work is linear."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jarvis_core.parsers import (
    ReasoningResult,
    ToolParseResult,
    get_reasoning_parser,
    get_tool_parser,
    reasoning_parser_names,
    tool_parser_names,
)
from jarvis_core.parsers.deepseek import BEGIN, CALL, CALL_END, SEP

TOOL_NAMES = tool_parser_names()
REASONING_NAMES = reasoning_parser_names()
ALIASES = {"qwen3_coder", "llama4_json", "glm47"}  # same classes as qwen3_xml, llama3_json, glm45
CASES = json.loads((Path(__file__).parent / "data" / "tool_call_formats.json").read_text("utf-8"))

# Pieces of every format, so random text often looks almost right (the interesting case).
FRAGMENTS = [
    "<tool_call>", "</tool_call>", "<tool_", "{", "}", "[", "]", '"name"', ": ", '"get"', '"arguments"',
    '"parameters"', ",", "<function=f>", "</function>", "<parameter=a>", "</parameter>", "\n", " ", "'",
    "<|python_tag|>", "<|python_start|>", "<|python_end|>", "f(a=1)", "True", "None", "[TOOL_CALLS]",
    "[ARGS]", "[CALL_ID]", BEGIN, CALL, CALL_END, SEP, "function", "```json", "```",
    "<|tool_calls_section_begin|>", "<|tool_call_begin|>", "functions.f:0", "<|tool_call_argument_begin|>",
    "<|tool_call_end|>", "<|tool_calls_section_end|>", "<arg_key>", "</arg_key>", "<arg_value>", "</arg_value>",
    "<|tool_call|>", "<think>", "</think>", "[THINK]", "[/THINK]", "Here is my thought process:",
    "Here is my response:", "<|channel|>", "analysis", "final", "commentary", " to=functions.f", "<|message|>",
    "<|end|>", "<|call|>", "<|start|>", "assistant", "<|constrain|>", "json", "\\", '"', "é", "😀",
]
TEXT = st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=4)), max_size=40).map("".join)
TOOLS = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {
    "a": {"type": "integer"}, "b": {"type": "object"}, "c": {"type": "boolean"}}}}}]
FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _key(result):
    calls = [(c.name, c.arguments) for c in getattr(result, "tool_calls", ())]
    return result.content, getattr(result, "reasoning", None), calls


def _stream(parser, text, cuts):
    points = sorted({c % (len(text) + 1) for c in cuts})
    prev = 0
    for p in [*points, len(text)]:
        parser.feed(text[prev:p])
        prev = p
    parser.finish()
    return parser.result


@pytest.mark.parametrize("name", TOOL_NAMES)
@FUZZ
@given(text=TEXT, cuts=st.lists(st.integers(min_value=0, max_value=10_000), max_size=8), typed=st.booleans())
def test_tool_parser_never_raises_and_streams_equal_whole(name, text, cuts, typed):
    tools = TOOLS if typed else None
    whole = get_tool_parser(name).parse(text, tools=tools)
    assert isinstance(whole, ToolParseResult)
    for call in whole.tool_calls:
        assert isinstance(call.arguments, str) and call.name
    ids = [c.id for c in whole.tool_calls]
    assert len(set(ids)) == len(ids)
    streamed = _stream(get_tool_parser(name, tools), text, cuts)
    assert _key(streamed) == _key(whole) or _ids_only_differ(streamed, whole)


def _ids_only_differ(a, b):
    return (a.content, a.reasoning, [(c.name, c.arguments) for c in a.tool_calls]) == (
        b.content, b.reasoning, [(c.name, c.arguments) for c in b.tool_calls])


@pytest.mark.parametrize("name", REASONING_NAMES)
@FUZZ
@given(text=TEXT, cuts=st.lists(st.integers(min_value=0, max_value=10_000), max_size=8), thinking=st.booleans())
def test_reasoning_parser_never_raises_and_streams_equal_whole(name, text, cuts, thinking):
    whole = get_reasoning_parser(name, enable_thinking=thinking).parse(text)
    assert isinstance(whole, ReasoningResult)
    streamed = _stream(get_reasoning_parser(name, enable_thinking=thinking), text, cuts)
    assert _key(streamed) == _key(whole)


@pytest.mark.parametrize("name", TOOL_NAMES)
def test_text_is_never_lost_without_calls(name):
    """When no call is found, the content is the whole output (nothing silently dropped)."""
    for text in ("plain answer", "<tool_call>{oops", "[TOOL_CALLS] nope", "[not a call", "{bad json"):
        result = get_tool_parser(name).parse(text)
        if not result.tool_calls:
            # mistral's failure path drops its [TOOL_CALLS] token (as vLLM does); the words stay
            assert result.content in (text, text.strip(), text.replace("[TOOL_CALLS]", "").strip())


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_truncated_outputs_never_raise(case):
    raw = case["raw"]
    for end in range(len(raw) + 1):
        get_tool_parser(case["parser"] if case["kind"] != "reasoning" else "hermes").parse(raw[:end])
        if case["kind"] == "reasoning":
            get_reasoning_parser(case["parser"]).parse(raw[:end])


# -- linearity, by counting work (function calls, Python and C) rather than by timing ----------------------

def _count_calls(fn):
    count = 0

    def prof(frame, event, arg):
        nonlocal count
        if event in ("call", "c_call"):
            count += 1

    sys.setprofile(prof)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return count


def _feed_in_pieces(make, text, size=8):
    def run():
        parser = make()
        for i in range(0, len(text), size):
            parser.feed(text[i : i + size])
        parser.finish()

    return run


def _inputs(n):
    """Outputs of about n characters that exercise each parser's streaming and holding paths."""
    words = ("lorem ipsum <tool_ca dolor {sit} [amet] </thi " * (n // 48 + 1))[:n]
    args = json.dumps({"text": "x" * n})
    return {
        "plain": words,
        "hermes_call": f'<tool_call>{{"name": "f", "arguments": {args}}}</tool_call>',
        "think": "<think>" + words + "</think>" + words,
        "many_markers": "<tool_call>" * (n // 11),
    }


@pytest.mark.parametrize("name", [n for n in TOOL_NAMES if n not in ALIASES])
def test_tool_parsers_do_linear_work(name):
    small, large = _inputs(4_000), _inputs(16_000)
    for key in small:
        a = _count_calls(_feed_in_pieces(lambda: get_tool_parser(name), small[key]))
        b = _count_calls(_feed_in_pieces(lambda: get_tool_parser(name), large[key]))
        assert b <= 4 * a * 1.25 + 200, (key, a, b)


@pytest.mark.parametrize("name", [n for n in REASONING_NAMES if n not in ALIASES])
def test_reasoning_parsers_do_linear_work(name):
    small, large = _inputs(4_000), _inputs(16_000)
    for key in small:
        a = _count_calls(_feed_in_pieces(lambda: get_reasoning_parser(name), small[key]))
        b = _count_calls(_feed_in_pieces(lambda: get_reasoning_parser(name), large[key]))
        assert b <= 4 * a * 1.25 + 200, (key, a, b)


def test_long_whitespace_before_a_decision_is_linear():
    """Leading whitespace is held while a parser waits to see how the output opens."""
    for name in ("pythonic", "granite", "llama4_pythonic"):
        a = _count_calls(_feed_in_pieces(lambda n=name: get_tool_parser(n, stream_friendly=True), " " * 4_000 + "[f(a=1)]"))
        b = _count_calls(_feed_in_pieces(lambda n=name: get_tool_parser(n, stream_friendly=True), " " * 16_000 + "[f(a=1)]"))
        assert b <= 5 * a, (name, a, b)


# -- sizes: while text streams through, what a parser keeps to search again stays bounded ---------------

STREAMING_TOOL = ["hermes", "granite4", "qwen3_xml", "mistral", "deepseek_v3", "kimi_k2", "glm45", "openai"]


@pytest.mark.parametrize("name", STREAMING_TOOL)
def test_streamed_content_holds_back_only_a_partial_marker(name):
    """Plain text with near-miss markers streams out; the re-searched remainder never exceeds a marker."""
    parser = get_tool_parser(name)
    text = _inputs(20_000)["plain"]
    for i in range(0, len(text), 7):
        parser.feed(text[i : i + 7])
        assert len(parser.held_text()) < 40
    parser.finish()
    assert parser.result.content == text


@pytest.mark.parametrize("name", ["deepseek_r1", "qwen3", "mistral", "kimi_k2", "minimax_m2"])
def test_streamed_reasoning_holds_back_only_a_partial_marker(name):
    parser = get_reasoning_parser(name)
    text = _inputs(20_000)["think"].replace("<think>", "[THINK]" if name == "mistral" else "<think>")
    if name == "mistral":
        text = text.replace("</think>", "[/THINK]")
    for i in range(0, len(text), 7):
        parser.feed(text[i : i + 7])
        assert len(parser.held_text()) < 40
    parser.finish()
    assert parser.result.reasoning and parser.result.content
