"""The core's one tool-call id generator, and the one "arguments as a JSON object" conversion."""

from __future__ import annotations

import re

import pytest

from jarvis_core.engine.messages import arguments_object, coerce_message
from jarvis_core.engine.openai_wire import ChatStreamDecoder, parse_chat_completion
from jarvis_core.errors import BadRequestError
from jarvis_core.types import ToolCall, new_call_id


def _reply(calls):
    return {"choices": [{"message": {"role": "assistant", "content": None, "tool_calls": calls},
                         "finish_reason": "tool_calls"}]}


def test_generated_ids_are_unique_and_openai_shaped():
    ids = {new_call_id() for _ in range(1000)}
    assert len(ids) == 1000 and all(re.fullmatch(r"call_[0-9a-f]{24}", i) for i in ids)
    assert re.fullmatch(r"[A-Za-z0-9]{9}", new_call_id("mistral"))


def test_calls_without_ids_get_fresh_ones_in_every_turn():
    """A server that sends no ids must not make turn 2's call look like turn 1's (``call_0`` twice)."""
    call = {"type": "function", "function": {"name": "f", "arguments": "{}"}}
    turns = [parse_chat_completion(_reply([call, call])) for _ in range(2)]
    ids = [c.id for t in turns for c in t.tool_calls]
    assert len(set(ids)) == 4
    history = [coerce_message({"role": "assistant", "content": None, "tool_calls": [call]}) for _ in range(2)]
    assert history[0].tool_calls[0].id != history[1].tool_calls[0].id


def test_a_streamed_call_without_id_keeps_the_id_it_was_given():
    dec = ChatStreamDecoder()
    dec.feed({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"name": "f", "arguments": "{}"}}]}}]})
    first = dec.tool_calls()[0].id
    assert first.startswith("call_") and dec.tool_calls()[0].id == first
    (final,) = dec.finish(done=True)[-1:]
    assert final.tool_calls[0].id == first


def test_arguments_object():
    assert arguments_object(ToolCall("c1", "f", ' {"a": 1} '), engine_id="e", server="S") == {"a": 1}
    assert arguments_object(ToolCall("c1", "f", ""), engine_id="e", server="S") == {}
    for bad in ("[1, 2]", "not json", '"text"'):
        with pytest.raises(BadRequestError, match=r"e: the arguments of tool call 'c1' \(f\).*S only accepts an object"):
            arguments_object(ToolCall("c1", "f", bad), engine_id="e", server="S")
