"""The ``gemma4`` reasoning parser the family table names: Gemma 4's thinking channel split from the answer,
whole and streamed at every cut, and what a Gemma 4 model id gets from the backend defaults."""

from __future__ import annotations

import pytest

from jarvis_core.defaults.adapter import ModelAdapter
from jarvis_core.parsers import get_reasoning_parser
from jarvis_core.types import Completion

CASES = [
    # (raw output, reasoning, content)
    ("<|channel>thought\nThe user wants 6*7.<channel|>It is 42.", "The user wants 6*7.", "It is 42."),
    ("<|channel>thought\nshort<channel|>\nAnswer.", "short", "\nAnswer."),
    ("<|channel>thought<channel|>Just the answer.", None, "Just the answer."),
    ("No thinking at all.", None, "No thinking at all."),
    ("<|channel>thought\nstill thinking when cut off", "still thinking when cut off", None),
    ("<|channel>thoughtful words<channel|>done", "thoughtful words", "done"),
    ("<|channel>plan: a, b<channel|>ok", "plan: a, b", "ok"),
    ("Hi<channel|> there", None, "Hi there"),
]


def _whole(raw: str):
    result = get_reasoning_parser("gemma4").parse(raw)
    return result.reasoning, result.content


def _streamed(raw: str, cut: int):
    parser = get_reasoning_parser("gemma4")
    for piece in (raw[:cut], raw[cut:]):
        if piece:
            parser.feed(piece)
    parser.finish()
    return parser.result.reasoning, parser.result.content


@pytest.mark.parametrize("raw, reasoning, content", CASES)
def test_whole_output(raw, reasoning, content):
    assert _whole(raw) == (reasoning, content)


@pytest.mark.parametrize("raw, reasoning, content", CASES)
def test_streamed_split_at_every_boundary_gives_the_same_result(raw, reasoning, content):
    for cut in range(len(raw) + 1):
        assert _streamed(raw, cut) == (reasoning, content), cut


def test_one_character_at_a_time():
    raw = CASES[0][0]
    parser = get_reasoning_parser("gemma4")
    for ch in raw:
        parser.feed(ch)
    parser.finish()
    assert (parser.result.reasoning, parser.result.content) == CASES[0][1:]


@pytest.mark.filterwarnings("ignore:tool parser 'gemma4'")  # Gemma 4's tool-call format is not shipped yet
def test_a_gemma_4_model_gets_the_parser_from_the_family_table_and_its_text_is_split():
    adapter = ModelAdapter.for_model("google/gemma-4-31b-it", "llamacpp")
    assert adapter.reasoning_parser == "gemma4"
    out = adapter.postprocess(Completion(content="<|channel>thought\nSum it.<channel|>5", finish_reason="stop"))
    assert out.reasoning == "Sum it." and out.content == "5"
