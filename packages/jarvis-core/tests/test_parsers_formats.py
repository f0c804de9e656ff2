"""Every recorded case in tool_call_formats.json, whole and streamed (split everywhere and at random)."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from jarvis_core.parsers import OutputParser, get_tool_parser, parse_output

DATA = Path(__file__).parent / "data" / "tool_call_formats.json"
CASES = json.loads(DATA.read_text("utf-8"))
WHOLE = [c for c in CASES if c["kind"] != "streaming_snapshot"]
SNAPSHOTS = [c for c in CASES if c["kind"] == "streaming_snapshot"]


def _parsers(case):
    """(tool parser, reasoning parser, options) for a case, as vLLM would run it."""
    options = dict(case.get("chat_template_kwargs") or {})
    if case["kind"] == "reasoning":
        return None, case["parser"], options
    return case["parser"], case.get("reasoning_parser"), options


def _parse_whole(case):
    tool, reasoning, options = _parsers(case)
    return parse_output(case["raw"], tool_parser=tool, reasoning_parser=reasoning, tools=case.get("request_tools"), **options)


def _parse_pieces(case, pieces):
    tool, reasoning, options = _parsers(case)
    parser = OutputParser(tool, reasoning, tools=case.get("request_tools"), **options)
    for piece in pieces:
        parser.feed(piece)
    parser.finish()
    return parser.result


def _calls(result):
    return [(c.name, c.arguments) for c in result.tool_calls]


def _check_expected(case, result):
    assert result.content == case["expected_content"]
    assert result.reasoning == case["expected_reasoning"]
    expected = case["expected_tool_calls"]
    assert [c.name for c in result.tool_calls] == [e["name"] for e in expected]
    for call, exp in zip(result.tool_calls, expected, strict=True):
        if exp["arguments"] is None:  # a format that passes invalid JSON through verbatim
            assert call.arguments == exp["arguments_raw"]
        else:
            assert json.loads(call.arguments) == exp["arguments"]
        if "id" in exp:
            assert call.id == exp["id"]
    ids = [c.id for c in result.tool_calls]
    assert len(set(ids)) == len(ids) and all(ids)


@pytest.mark.parametrize("case", WHOLE, ids=[c["id"] for c in WHOLE])
def test_case_whole(case):
    _check_expected(case, _parse_whole(case))


@pytest.mark.parametrize("case", WHOLE, ids=[c["id"] for c in WHOLE])
def test_case_split_at_every_boundary(case):
    whole = _parse_whole(case)
    raw = case["raw"]
    for cut in range(len(raw) + 1):
        got = _parse_pieces(case, [raw[:cut], raw[cut:]])
        assert (got.content, got.reasoning, _calls_no_ids(got)) == (whole.content, whole.reasoning, _calls_no_ids(whole)), cut


@pytest.mark.parametrize("case", WHOLE, ids=[c["id"] for c in WHOLE])
def test_case_random_pieces_and_single_chars(case):
    whole = _parse_whole(case)
    raw = case["raw"]
    rng = random.Random(case["id"])
    splits = [list(raw)]
    for _ in range(30):
        pieces, i = [], 0
        while i < len(raw):
            n = rng.randint(1, 12)
            pieces.append(raw[i : i + n])
            i += n
        splits.append(pieces)
    for pieces in splits:
        got = _parse_pieces(case, pieces)
        assert (got.content, got.reasoning, _calls_no_ids(got)) == (whole.content, whole.reasoning, _calls_no_ids(whole))
        _check_expected(case, got)


def _calls_no_ids(result):
    return [(c.name, json.loads(c.arguments) if _is_json(c.arguments) else c.arguments) for c in result.tool_calls]


def _is_json(text):
    try:
        json.loads(text)
        return True
    except ValueError:
        return False


@pytest.mark.parametrize("case", SNAPSHOTS, ids=[c["id"] for c in SNAPSHOTS])
def test_streaming_snapshot(case):
    """Mid-stream state: what has been emitted so far, and the headers/arguments of calls in progress."""
    exp = case["streaming_expectation"]
    for pieces in ([case["raw"]], list(case["raw"])):
        parser = get_tool_parser(case["parser"], case.get("request_tools"))
        for piece in pieces:
            parser.feed(piece)
        snap = parser.snapshot()
        assert snap.content == exp["content_emitted_so_far"] == case["expected_content"]
        assert [(p.index, p.name) for p in snap.tool_calls] == [
            (h["index"], h["name"]) for h in exp["tool_call_headers_emitted"]
        ]
        assert {str(p.index): p.arguments for p in snap.tool_calls if p.arguments} == exp["arguments_emitted_so_far"]
        assert parser.result.tool_calls == ()  # nothing is final before finish()
        assert snap.tool_calls == parser.snapshot().tool_calls  # ids are stable across snapshots


def test_preview_ids_are_the_final_ids():
    parser = get_tool_parser("hermes")
    parser.feed('<tool_call>\n{"name": "f", "arguments": {"a": 1}}\n</tool_call>')
    preview = parser.snapshot().tool_calls
    parser.finish()
    assert [p.id for p in preview] == [c.id for c in parser.result.tool_calls]
