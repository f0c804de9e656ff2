"""Value types: round trips through dicts and JSON, finish_reason normalization, helpers."""

from __future__ import annotations

import json

import attrs
import cattrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jarvis_core.types import (
    FINISH_REASONS,
    AgentContext,
    AgentResult,
    Completion,
    Message,
    Role,
    StreamChunk,
    ToolCall,
    ToolResult,
    ToolSpec,
    Usage,
    from_dict,
    from_json,
    normalize_finish_reason,
    to_dict,
    to_json,
)

text = st.text(max_size=40)
opt_text = st.none() | text
counts = st.integers(min_value=0, max_value=10**9)
json_scalars = st.none() | st.booleans() | st.integers(-(10**6), 10**6) | st.text(max_size=10)
metadata = st.dictionaries(st.text(max_size=8), json_scalars, max_size=3)

tool_calls = st.builds(ToolCall, id=text, name=text, arguments=st.builds(json.dumps, metadata))
usages = st.builds(Usage, prompt_tokens=counts, completion_tokens=counts)
messages = st.builds(
    Message,
    role=st.sampled_from(Role),
    content=opt_text,
    tool_calls=st.lists(tool_calls, max_size=2).map(tuple),
    tool_call_id=opt_text,
    name=opt_text,
    reasoning=opt_text,
)
completions = st.builds(
    Completion,
    content=opt_text,
    reasoning=opt_text,
    tool_calls=st.lists(tool_calls, max_size=2).map(tuple),
    usage=usages,
    model=text,
    finish_reason=st.sampled_from(FINISH_REASONS),
    metadata=metadata,
)
chunks = st.builds(
    StreamChunk,
    content=opt_text,
    reasoning=opt_text,
    tool_calls=st.lists(tool_calls, max_size=2).map(tuple),
    finish_reason=st.none() | st.sampled_from(FINISH_REASONS),
    usage=st.none() | usages,
    metadata=metadata,
    parsed=st.none() | metadata,
)
specs = st.builds(
    ToolSpec,
    name=text,
    description=text,
    parameters=st.fixed_dictionaries({"type": st.just("object"), "properties": st.just({})}),
)
results = st.builds(
    ToolResult, tool_call_id=text, name=text, content=text, ok=st.booleans(), truncated=st.booleans(),
    duration_s=st.floats(min_value=0, max_value=1e6, allow_nan=False),
)
contexts = st.builds(
    AgentContext, messages=st.lists(messages, max_size=2).map(tuple), tools=st.lists(specs, max_size=2).map(tuple),
    metadata=metadata,
)
agent_results = st.builds(
    AgentResult, content=text, messages=st.lists(messages, max_size=2).map(tuple),
    tool_results=st.lists(results, max_size=2).map(tuple), turns=st.integers(0, 50), usage=usages, metadata=metadata,
)

ALL = [
    (ToolCall, tool_calls), (Usage, usages), (Message, messages), (Completion, completions), (StreamChunk, chunks),
    (ToolSpec, specs), (ToolResult, results), (AgentContext, contexts), (AgentResult, agent_results),
]


@pytest.mark.parametrize(("cls", "strategy"), ALL, ids=[c.__name__ for c, _ in ALL])
def test_round_trip_dict_and_json(cls, strategy):
    @settings(max_examples=40, deadline=None)
    @given(strategy)
    def check(value):
        as_dict = to_dict(value)
        assert from_dict(cls, as_dict) == value
        encoded = to_json(value)
        assert json.loads(encoded) == json.loads(json.dumps(as_dict))  # plain JSON types only
        assert from_json(cls, encoded) == value

    check()


def test_dict_shapes_are_plain():
    msg = Message.assistant("hi", [ToolCall("c1", "f", '{"a": 1}')])
    assert to_dict(msg) == {
        "role": "assistant", "content": "hi",
        "tool_calls": [{"id": "c1", "name": "f", "arguments": '{"a": 1}'}],
        "tool_call_id": None, "name": None, "reasoning": None,
    }
    assert to_dict(Usage(2, 3)) == {"prompt_tokens": 2, "completion_tokens": 3, "total_tokens": 5}


def test_from_dict_rejects_unknown_keys_and_wrong_types():
    with pytest.raises(cattrs.errors.ClassValidationError):
        from_dict(Usage, {"prompt_tokens": 1, "bogus": 2})
    with pytest.raises((cattrs.errors.ClassValidationError, ValueError)):
        from_dict(Message, {"role": "wizard", "content": "x"})
    with pytest.raises(cattrs.errors.ClassValidationError):
        from_dict(Usage, {"prompt_tokens": "many"})


def test_lists_of_values_round_trip():
    calls = [ToolCall("a", "f"), ToolCall("b", "g", '{"x": [1]}')]
    assert [from_dict(ToolCall, d) for d in to_dict(calls)] == calls


# -- finish reasons -----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("stop", "stop"), ("STOP", "stop"), ("end_turn", "stop"), ("eos", "stop"), ("stop_sequence", "stop"),
        ("length", "length"), ("max_tokens", "length"), ("MAX_TOKENS", "length"), ("model_length", "length"),
        ("tool_calls", "tool_calls"), ("tool_use", "tool_calls"), ("function_call", "tool_calls"),
        ("content_filter", "content_filter"), ("SAFETY", "content_filter"), ("RECITATION", "content_filter"),
        ("refusal", "content_filter"), ("error", "error"), ("abort", "error"),
        ("MALFORMED_FUNCTION_CALL", "error"), ("load", "stop"), ("unload", "stop"), ("OTHER", "stop"),
        (None, "stop"), ("something-new", "stop"),
    ],
)
def test_normalize_finish_reason(raw, expected):
    assert normalize_finish_reason(raw) == expected


def test_tool_calls_turn_stop_or_unknown_into_tool_calls():
    assert normalize_finish_reason("STOP", has_tool_calls=True) == "tool_calls"  # Gemini
    assert normalize_finish_reason(None, has_tool_calls=True) == "tool_calls"  # Ollama
    assert normalize_finish_reason("weird", has_tool_calls=True) == "tool_calls"
    assert normalize_finish_reason("length", has_tool_calls=True) == "length"  # a cut-off call stays "length"


@given(st.none() | st.text(max_size=20), st.booleans())
def test_normalize_always_lands_in_the_closed_set(raw, has_calls):
    assert normalize_finish_reason(raw, has_tool_calls=has_calls) in FINISH_REASONS


def test_completion_normalizes_on_construction():
    assert Completion(finish_reason="end_turn").finish_reason == "stop"
    assert Completion(finish_reason="max_tokens").finish_reason == "length"
    assert Completion(finish_reason=None).finish_reason == "stop"


# -- helpers ------------------------------------------------------------------------------------------
def test_completion_to_dict_is_the_openjarvis_shape():
    plain = Completion(content=None, usage=Usage(1, 2), model="m")
    assert plain.to_dict() == {
        "content": "", "usage": {"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3}, "model": "m",
        "finish_reason": "stop",
    }
    call = ToolCall("c", "f", "{}")
    full = Completion(content="x", reasoning="r", tool_calls=[call], finish_reason="tool_calls")
    assert full.to_dict()["tool_calls"] == [{"id": "c", "name": "f", "arguments": "{}"}]
    assert full.to_dict()["reasoning"] == "r"
    assert full.to_message() == Message(Role.ASSISTANT, "x", tool_calls=(call,), reasoning="r")


def test_message_constructors_and_role_coercion():
    assert Message("user", "hi") == Message.user("hi")
    assert Message.system("s").role is Role.SYSTEM and str(Role.TOOL) == "tool"
    assert Message.tool("out", "c1", name="f") == Message(Role.TOOL, "out", tool_call_id="c1", name="f")
    assert Message("assistant", None, tool_calls=[ToolCall("c", "f")]).tool_calls == (ToolCall("c", "f"),)
    with pytest.raises(ValueError):
        Message("robot", "x")


def test_values_are_frozen():
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        Usage().prompt_tokens = 3  # type: ignore[misc]


def test_tool_call_helpers():
    call = ToolCall("c1", "get_weather", '{"location": "Paris"}')
    assert call.parsed_arguments() == {"location": "Paris"}
    assert call.to_openai() == {
        "id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": '{"location": "Paris"}'}
    }
    assert ToolCall("c", "f", "").parsed_arguments() == {}
    with pytest.raises(ValueError):
        ToolCall("c", "f", "{not json").parsed_arguments()


def test_tool_spec_openai_shapes():
    spec = ToolSpec("f", "does f", {"type": "object", "properties": {"a": {"type": "integer"}}})
    wrapped = spec.to_openai()
    assert wrapped["type"] == "function" and wrapped["function"]["name"] == "f"
    assert ToolSpec.from_openai(wrapped) == spec
    assert ToolSpec.from_openai(wrapped["function"]) == spec
    assert ToolSpec.from_openai({"name": "g"}) == ToolSpec("g")


def test_tool_result_to_message():
    assert ToolResult("c1", "f", "42").to_message() == Message.tool("42", "c1", name="f")


def test_usage_total_defaults_to_sum_but_can_be_given():
    assert Usage(3, 4).total_tokens == 7
    assert Usage(3, 4, total_tokens=10).total_tokens == 10  # providers that count thinking tokens separately


def test_stream_chunk_is_an_immutable_value_with_a_fast_delta():
    import copy
    import pickle

    from jarvis_core.types import NO_METADATA

    chunk = StreamChunk("a", tool_calls=[ToolCall("c1", "f")], usage=Usage(1, 2))
    assert chunk.tool_calls == (ToolCall("c1", "f"),) and chunk.metadata == {} and chunk.finish_reason is None
    assert StreamChunk.delta("a") == StreamChunk("a") and StreamChunk.delta("a").metadata is NO_METADATA
    assert StreamChunk.delta(None, "r") == StreamChunk(reasoning="r")
    with pytest.raises(AttributeError):
        chunk.content = "b"
    with pytest.raises(TypeError):
        NO_METADATA["x"] = 1
    assert chunk.replace(content="b", finish_reason="stop") == StreamChunk(
        "b", tool_calls=chunk.tool_calls, finish_reason="stop", usage=Usage(1, 2))
    with pytest.raises(TypeError):
        chunk.replace(bogus=1)
    assert chunk != tuple(chunk) and StreamChunk() != (None, None, (), None, None, {}, None)  # only equal to chunks
    assert pickle.loads(pickle.dumps(chunk)) == chunk and copy.deepcopy(chunk) == chunk
    assert repr(StreamChunk("a")) == (
        "StreamChunk(content='a', reasoning=None, tool_calls=(), finish_reason=None, usage=None, metadata={}, "
        "parsed=None)")
    with pytest.raises(cattrs.errors.ClassValidationError):
        from_dict(StreamChunk, {"content": "a", "bogus": 1})
    assert to_dict(StreamChunk.delta("a")) == {"content": "a", "reasoning": None, "tool_calls": [],
                                               "finish_reason": None, "usage": None, "metadata": {},
                                               "parsed": None}
