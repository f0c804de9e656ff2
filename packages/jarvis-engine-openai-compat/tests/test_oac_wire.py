"""The OpenAI chat wire codec (jarvis_core.engine.openai_wire), driven by the recorded streams and edge cases."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jarvis_core.engine.openai_wire import ChatStreamDecoder, build_chat_payload, parse_chat_completion
from jarvis_core.engine.streams import SSEByteDecoder
from jarvis_core.errors import ContextLengthError, MalformedResponseError, ServerError, StreamError
from jarvis_core.types import Message, StreamChunk, ToolSpec, Usage


def decode(body_parts, engine_id="t"):
    """Run byte pieces through SSEByteDecoder + ChatStreamDecoder the way the engine does."""
    sse, dec, out = SSEByteDecoder(until_done=True), ChatStreamDecoder(engine_id=engine_id), []
    for raw in [p for part in body_parts for p in sse.feed(part)] + sse.flush():
        out += dec.feed(json.loads(raw))
    return out + dec.finish(done=sse.done or dec.finish_reason is not None)


# -- request payloads -------------------------------------------------------------------------------
def test_payload_leaves_unset_values_out_and_asks_for_stream_usage():
    tool = ToolSpec("get_weather", "weather", {"type": "object", "properties": {"city": {"type": "string"}}})
    body = build_chat_payload([Message.user("hi")], model="m", temperature=0, max_tokens=5, tools=[tool],
                              stream=True, options={"top_p": None, "seed": 7})
    assert body["temperature"] == 0  # an explicit 0 is a value
    assert body["max_tokens"] == 5 and body["seed"] == 7 and "top_p" not in body
    assert body["messages"] == [{"role": "user", "content": "hi"}]
    assert body["tools"][0]["function"]["name"] == "get_weather"
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}


def test_payload_non_stream_and_options():
    body = build_chat_payload([{"role": "user", "content": "x"}], model="m", max_tokens_field="max_completion_tokens",
                              max_tokens=9)
    assert body == {"model": "m", "messages": [{"role": "user", "content": "x"}], "max_completion_tokens": 9}
    streamed = build_chat_payload([], model="m", stream=True, include_usage=False)
    assert "stream_options" not in streamed


# -- whole responses --------------------------------------------------------------------------------
def _response(message, finish="stop", **extra):
    return {"id": "chatcmpl-1", "model": "m", "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            **extra}


def test_parse_text_usage_and_llamacpp_timings():
    c = parse_chat_completion(_response({"role": "assistant", "content": "Paris."},
                                        usage={"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5},
                                        timings={"predicted_n": 2}), engine_id="llamacpp")
    assert (c.content, c.finish_reason, c.usage, c.model) == ("Paris.", "stop", Usage(3, 2, 5), "m")
    assert c.metadata["timings"] == {"predicted_n": 2} and c.metadata["id"] == "chatcmpl-1"


@pytest.mark.parametrize("field", ["reasoning_content", "reasoning"])
def test_parse_reasoning_fields(field):
    c = parse_chat_completion(_response({"role": "assistant", "content": "4", field: "2+2"}))
    assert (c.reasoning, c.content) == ("2+2", "4")


def test_parse_nested_and_flat_tool_calls():
    nested = {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": '{"a": 1}'}}
    flat = {"id": "call_2", "name": "g", "arguments": {"b": [1, 2]}}  # LiteLLM-style, arguments as an object
    c = parse_chat_completion(_response({"role": "assistant", "content": None, "tool_calls": [nested, flat]},
                                        finish="stop"))
    assert [(t.id, t.name, json.loads(t.arguments)) for t in c.tool_calls] == [
        ("call_1", "f", {"a": 1}), ("call_2", "g", {"b": [1, 2]})]
    assert c.finish_reason == "tool_calls"  # "stop" with calls, as some servers say
    assert c.content is None


@pytest.mark.parametrize("raw, normalized", [(None, "stop"), ("length", "length"), ("function_call", "tool_calls"),
                                             ("content_filter", "content_filter"), ("eos", "stop")])
def test_parse_finish_reason_is_normalized(raw, normalized):
    assert parse_chat_completion(_response({"content": "x"}, finish=raw)).finish_reason == normalized


def test_parse_error_payloads_raise_typed_errors():
    with pytest.raises(ContextLengthError):
        parse_chat_completion({"error": {"message": "This model's maximum context length is 8 tokens", "code": 400}})
    with pytest.raises(StreamError):  # older vLLM's flat error object
        parse_chat_completion({"object": "error", "message": "boom", "type": "X"})
    with pytest.raises(MalformedResponseError, match="no choices"):
        parse_chat_completion({"id": "x", "choices": []})
    with pytest.raises(MalformedResponseError, match="expected a JSON object, got list"):
        parse_chat_completion(["not", "an", "object"])
    with pytest.raises(MalformedResponseError, match="tool_calls must be a list"):
        parse_chat_completion({"choices": [{"message": {"tool_calls": "call it"}}]})


# -- streams ----------------------------------------------------------------------------------------
def test_every_recorded_stream_aggregates_as_expected(sse_transcripts, oac):
    for t in sse_transcripts:
        body = oac.transcript_bytes(t)
        if t["expected_aggregate"].get("error"):
            with pytest.raises(ServerError, match="engine core has died"):
                decode([body])
            continue
        assert oac.aggregate(decode([body])) == oac.expected(t), t["id"]


@pytest.mark.parametrize("size", [1, 2, 3, 7, 64])
def test_streams_split_anywhere_give_the_same_result(sse_transcripts, oac, size):
    for t in sse_transcripts:
        if t["expected_aggregate"].get("error"):
            continue
        chunks = decode(oac.split_every(oac.transcript_bytes(t), size))
        assert oac.aggregate(chunks) == oac.expected(t), (t["id"], size)


def test_stream_emits_one_final_chunk_with_calls_usage_and_metadata(sse_transcripts, oac):
    t = next(t for t in sse_transcripts if t["id"] == "llamacpp_reasoning_content_timings")
    chunks = decode([oac.transcript_bytes(t)])
    final = chunks[-1]
    assert [c for c in chunks if c.finish_reason] == [final]
    assert final.usage == Usage(21, 38, 59) and final.metadata["timings"]["predicted_n"] == 38
    assert final.metadata["model"] == "Qwen3-8B-Q4_K_M.gguf"
    assert all(isinstance(c, StreamChunk) for c in chunks)


def test_vllm_same_index_twice_in_one_delta_and_index_less_fragments():
    dec = ChatStreamDecoder()
    dec.feed({"model": "m", "choices": [{"index": 0, "delta": {"tool_calls": [
        {"id": "a", "type": "function", "index": 0, "function": {"name": "f"}},
        {"index": 0, "function": {"arguments": '{"x": '}}]}}]})
    dec.feed({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": "1}"}}]}}]})
    dec.feed({"choices": [{"index": 0, "delta": {"tool_calls": [{"id": "b", "function": {"name": "g", "arguments": "{}"}}]},
                           "finish_reason": "tool_calls"}]})
    final = dec.finish()[-1]
    assert [(c.id, c.name, c.arguments) for c in final.tool_calls] == [("a", "f", '{"x": 1}'), ("b", "g", "{}")]
    assert final.finish_reason == "tool_calls"


def test_role_only_empty_and_usage_only_chunks_yield_nothing():
    dec = ChatStreamDecoder()
    assert dec.feed({"model": "m", "choices": [{"index": 0, "delta": {"role": "assistant", "content": None}}]}) == []
    assert dec.feed({"choices": [{"index": 0, "delta": {"content": ""}}]}) == []
    assert dec.feed({"choices": [], "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}) == []
    assert dec.feed({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}) == []
    assert dec.finish()[-1].usage == Usage(1, 1, 2)


def test_cumulative_usage_last_one_wins():
    dec = ChatStreamDecoder()
    for n in (1, 2, 3):
        dec.feed({"choices": [{"index": 0, "delta": {"content": "x"}}],
                  "usage": {"prompt_tokens": 5, "completion_tokens": n, "total_tokens": 5 + n}})
    dec.feed({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    assert dec.finish()[-1].usage == Usage(5, 3, 8)


def test_stream_broken_before_finish_is_a_stream_error():
    dec = ChatStreamDecoder(engine_id="vllm")
    dec.feed({"choices": [{"index": 0, "delta": {"content": "Once"}}]})
    with pytest.raises(StreamError, match="ended before"):
        dec.finish(done=False)
    with pytest.raises(StreamError):
        ChatStreamDecoder().feed(["not a dict"])


def test_length_cut_tool_call_is_flagged():
    dec = ChatStreamDecoder()
    dec.feed({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "c", "function": {"name": "f",
                                                                                                   "arguments": '{"a'}}]}}]})
    dec.feed({"choices": [{"index": 0, "delta": {}, "finish_reason": "length"}], "__tool_call_incomplete": True})
    final = dec.finish()[-1]
    assert final.finish_reason == "length" and final.metadata["tool_call_incomplete"] is True
    assert final.tool_calls[0].arguments == '{"a'  # kept as sent: the caller sees it is cut off


# -- SSE framing --------------------------------------------------------------------------------------
def test_sse_bytes_framing_edge_cases():
    d = SSEByteDecoder()
    assert d.feed(b": ping\r\n\r\ndata:{\"a\":1}\r") == []
    assert d.feed(b"\n\r\n") == ['{"a":1}']  # CRLF split across reads: one event, no spurious blank line
    assert d.feed(b"data: x\ndata: y\n\n") == ["x\ny"]  # multi-line data
    assert d.feed(b"event: e\nid: 3\nretry: 5\ndata: z\r\r") == ["z"]  # CR-only line endings
    euro = "data: \u20ac\n\n".encode()
    assert d.feed(euro[:7]) == [] and d.feed(euro[7:]) == ["\u20ac"]  # a UTF-8 character split across reads
    assert d.feed(b"data: [DONE]") == [] and d.flush() == ["[DONE]"]  # last event without its blank line


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(min_value=1, max_value=40), min_size=1, max_size=40))
def test_sse_bytes_split_points_do_not_matter(sizes):
    body = (": c\r\n\r\ndata: {\"k\": \"v\u00e9\"}\r\n\r\ndata:2\n\ndata: a\ndata: b\r\r" * 3).encode()
    pieces, i = [], 0
    for n in sizes:
        pieces.append(body[i:i + n])
        i += n
    pieces.append(body[i:])
    d = SSEByteDecoder()
    got = [p for piece in pieces for p in d.feed(piece)] + d.flush()
    whole = SSEByteDecoder()
    assert got == whole.feed(body) + whole.flush() == ['{"k": "v\u00e9"}', "2", "a\nb"] * 3


# -- decoding payloads as they came: a repeated text delta decodes only its string ---------------------
def _payloads(body: bytes) -> list:
    sse = SSEByteDecoder(until_done=True)
    return sse.feed(body) + sse.flush()


def _both_ways(payloads):
    """What the engines get from ``decode``/``decode_text`` and what the full ``json.loads`` path gives."""
    full, fast, full_text, fast_text = (ChatStreamDecoder() for _ in range(4))
    want = [full.delta(json.loads(p)) for p in payloads]
    got = [fast.decode(p) for p in payloads]
    want_text = [full_text.text(json.loads(p)) for p in payloads]
    got_text = [fast_text.decode_text(p) for p in payloads]
    return (got, fast.finish(), got_text), (want, full.finish(), want_text)


def _same_final(a, b):
    # Tool calls without a server id get a fresh one on each decoder; everything else must match.
    def anonymous(chunks):
        return [c.replace(tool_calls=tuple((t.name, t.arguments) for t in c.tool_calls)) for c in chunks]
    return anonymous(a) == anonymous(b)


def test_decode_gives_what_the_full_path_gives_for_every_recorded_stream(sse_transcripts, oac):
    for t in sse_transcripts:
        if t["expected_aggregate"].get("error"):
            continue
        (got, got_final, got_text), (want, want_final, want_text) = _both_ways(_payloads(oac.transcript_bytes(t)))
        assert got == want and got_text == want_text, t["id"]
        assert _same_final(got_final, want_final), t["id"]


def _text_delta(text, sep=(",", ":"), **extra):
    return json.dumps({"id": "c1", "object": "chat.completion.chunk", "created": 7, "model": "m",
                       "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None, **extra}]},
                      separators=sep, ensure_ascii=False)


@settings(max_examples=80, deadline=None)
@given(st.lists(st.text(max_size=12), min_size=1, max_size=12), st.booleans(), st.booleans())
def test_decode_of_repeated_text_deltas_matches_json_loads(texts, spaced, ascii_only):
    sep = (", ", ": ") if spaced else (",", ":")
    payloads = [json.dumps(json.loads(_text_delta(t, sep)), separators=sep, ensure_ascii=ascii_only) for t in texts]
    payloads.append(_text_delta("", sep, finish_reason="stop").replace('"finish_reason":null,', ""))
    (got, got_final, got_text), (want, want_final, want_text) = _both_ways(payloads)
    assert got == want and got_text == want_text and got_final == want_final
    assert [c.content for c in got if c is not None] == [t for t in texts if t]


def test_decode_reads_in_full_what_differs_outside_the_string():
    dec = ChatStreamDecoder()
    assert dec.decode(_text_delta("a")).content == "a"
    assert dec.decode(_text_delta("b")).content == "b"  # the shortcut
    # Same bytes up to and including the string, then a finish reason: decoded in full, so it counts.
    stop = _text_delta("c").replace('"finish_reason":null', '"finish_reason":"stop"')
    assert dec.decode(stop).content == "c"
    assert dec.finish_reason == "stop"
    # A string that is not valid JSON where the text goes is malformed JSON, not a delta.
    with pytest.raises(StreamError, match="malformed JSON"):
        dec.decode(_text_delta("a").replace('"a"', '"bad \\x escape"'))
    with pytest.raises(StreamError, match="malformed JSON"):
        dec.decode(_text_delta("a").replace('"a"', '"a\tb"'))  # a raw control character


def test_decode_learns_nothing_from_a_payload_with_two_content_keys():
    # Were the first "content" taken for the delta's text, the second payload would read "b".
    first = '{"model":"m","note":{"content":"a"},"choices":[{"delta":{"content":"a"}}]}'
    second = '{"model":"m","note":{"content":"b"},"choices":[{"delta":{"content":"a"}}]}'
    dec = ChatStreamDecoder()
    assert dec.decode(first).content == "a"
    assert dec.decode(second).content == "a"


def test_decode_without_a_model_and_of_an_error_payload():
    no_model = '{"choices":[{"delta":{"content":"%s"}}]}'
    dec = ChatStreamDecoder()
    assert [dec.decode(no_model % t).content for t in "xyz"] == ["x", "y", "z"]
    with pytest.raises(ServerError):
        dec.decode('{"model":"m","error":{"message":"boom","code":500},"choices":[{"delta":{"content":"x"}}]}')
