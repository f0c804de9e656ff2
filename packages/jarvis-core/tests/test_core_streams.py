"""SSE and NDJSON decoding: framing edge cases, [DONE], empty choices, usage-only chunks, mid-stream errors.

Through the byte decoders the engines use (``SSEByteDecoder``, ``LineByteDecoder``) and ``decode_json``.
"""

from __future__ import annotations

import json
import pathlib
from typing import Iterator, List

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jarvis_core.engine.streams import LineByteDecoder, SSEByteDecoder, decode_json
from jarvis_core.errors import (
    AuthenticationError,
    ContextLengthError,
    RateLimitError,
    ServerError,
    StreamError,
)

DATA = pathlib.Path(__file__).resolve().parents[3] / "tests" / "data"
SSE = {t["id"]: t for t in json.loads((DATA / "openai_sse_transcripts.json").read_text())}
OLLAMA = {t["id"]: t for t in json.loads((DATA / "ollama_transcripts.json").read_text())}


def events(text: str):
    dec = SSEByteDecoder(events=True)
    return [(e.event, e.data) for e in dec.feed(text.encode()) + dec.flush()]


def sse_json(text: str, engine_id: str = "") -> Iterator[object]:
    """The JSON payloads of an OpenAI-style stream, up to [DONE], decoded one by one (as engines do)."""
    dec = SSEByteDecoder(until_done=True)
    for data in dec.feed(text.encode()) + dec.flush():
        yield decode_json(data, engine_id=engine_id)


def ndjson(lines: List[str], engine_id: str = "") -> Iterator[object]:
    dec = LineByteDecoder()
    for line in dec.feed("\n".join(lines).encode()) + dec.flush():
        if line.strip():
            yield decode_json(line, engine_id=engine_id)


# -- SSE framing --------------------------------------------------------------------------------------
def test_crlf_lf_and_cr_line_endings():
    assert events("data: a\r\n\r\ndata: b\n\ndata: c\r\r") == [("message", "a"), ("message", "b"), ("message", "c")]


def test_comments_and_keepalives_are_ignored():
    assert events(": keep-alive\n\n:ping\ndata: x\n: inside\n\n") == [("message", "x")]


def test_data_without_space_and_exactly_one_space_stripped():
    assert events("data:x\n\ndata:  two spaces\n\n") == [("message", "x"), ("message", " two spaces")]


def test_multi_line_data_joined_with_newline():
    assert events("data: {\ndata: \"a\": 1\ndata: }\n\n") == [("message", '{\n"a": 1\n}')]


def test_event_names_reset_after_each_event():
    got = events("event: message_start\ndata: 1\n\ndata: 2\n\n")
    assert got == [("message_start", "1"), ("message", "2")]


def test_event_without_data_is_not_dispatched():
    assert events("event: ping\n\nid: 5\nretry: 100\n\ndata: y\n\n") == [("message", "y")]


def test_final_event_without_blank_line_is_kept():
    assert events("data: first\n\ndata: last") == [("message", "first"), ("message", "last")]


def test_field_without_colon_and_unknown_fields():
    assert events("data\n\nfoo: bar\ndata: z\n\n") == [("message", ""), ("message", "z")]


def test_events_show_their_name_and_data():
    dec = SSEByteDecoder(events=True)
    (ev,) = dec.feed(b"data: a\n\n")
    assert "SSEEvent('message'" in repr(ev) and dec.flush() == []


# -- SSE JSON -----------------------------------------------------------------------------------------
def test_done_stops_and_later_events_are_not_read():
    assert list(sse_json('data: {"a": 1}\n\ndata: [DONE]\n\ndata: {"after": true}\n\n')) == [{"a": 1}]


@pytest.mark.parametrize("cut", [1, 3, 7, 1000])
def test_sse_decoder_until_done_stops_at_the_marker_and_reads_on(cut):
    body = b'data: {"a": 1}\n\ndata: [DONE] \r\n\r\ndata: {"after": true}\n\n: ping\n\ndata: [DONE]\n\n'
    dec = SSEByteDecoder(until_done=True)
    out = [p for i in range(0, len(body), cut) for p in dec.feed(body[i:i + cut])] + dec.flush()
    assert out == ['{"a": 1}'] and dec.done
    plain = SSEByteDecoder()
    assert plain.feed(body) + plain.flush() == ['{"a": 1}', "[DONE] ", '{"after": true}', "[DONE]"]
    assert not plain.done
    unfinished = SSEByteDecoder(until_done=True)
    assert unfinished.feed(b'data: {"a": 1}\n\n') + unfinished.flush() == ['{"a": 1}'] and not unfinished.done


def test_empty_choices_and_usage_only_chunks_pass_through():
    t = SSE["llamacpp_reasoning_content_timings"]
    payloads = list(sse_json("\n\n".join(t["response"]["events"]) + "\n\n"))
    usage_only = payloads[-1]
    assert usage_only["choices"] == [] and usage_only["usage"]["total_tokens"] == 59
    reasoning = "".join(p["choices"][0]["delta"].get("reasoning_content") or "" for p in payloads if p["choices"])
    assert reasoning == t["expected_aggregate"]["reasoning"]


def test_synthetic_framing_transcript_parses():
    t = SSE["synthetic_sse_framing"]
    payloads = list(sse_json(t["response"]["raw_sse"]))
    content = "".join(p["choices"][0]["delta"].get("content") or "" for p in payloads if p["choices"])
    assert content == t["expected_aggregate"]["content"]


def test_vllm_error_mid_stream_raises_typed_error():
    text = "\n\n".join(SSE["vllm_error_mid_stream"]["response"]["events"]) + "\n\n"
    got = []
    with pytest.raises(ServerError, match="engine core has died") as info:
        for payload in sse_json(text, engine_id="vllm"):
            got.append(payload)
    assert info.value.engine_id == "vllm" and info.value.status_code == 500
    assert "".join(p["choices"][0]["delta"].get("content") or "" for p in got) == "Once upon"


def test_old_vllm_flat_error_object_is_an_error():
    flat = {"object": "error", "message": "This model's maximum context length is 4096 tokens", "type": "BadRequestError",
            "param": None, "code": 400}
    with pytest.raises(ContextLengthError):
        list(sse_json(f"data: {json.dumps(flat)}\n\n"))


@pytest.mark.parametrize(
    ("payload", "error"),
    [
        ({"error": {"message": "Rate limit reached", "code": 429}}, RateLimitError),
        ({"error": {"message": "prompt is too long for the context window"}}, ContextLengthError),
        ({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}, ServerError),
        ({"type": "error", "error": {"type": "authentication_error", "message": "bad key"}}, AuthenticationError),
        ({"error": "an error was encountered while running the model"}, StreamError),
    ],
)
def test_error_payloads_become_typed_errors(payload, error):
    with pytest.raises(error):
        decode_json(json.dumps(payload), engine_id="x")


def test_null_error_field_is_not_an_error():
    assert decode_json('{"error": null, "choices": []}') == {"error": None, "choices": []}


def test_malformed_json_is_a_stream_error_with_excerpt():
    with pytest.raises(StreamError, match=r"malformed JSON.*not json"):
        list(sse_json("data: {not json\n\n", engine_id="e"))


# -- NDJSON -------------------------------------------------------------------------------------------
def test_ndjson_skips_blank_lines_and_decodes_each_line():
    assert list(ndjson(['{"a": 1}', "", "   ", '{"b": 2}\r'])) == [{"a": 1}, {"b": 2}]


def test_ollama_stream_transcript():
    t = OLLAMA["chat_stream"]
    objs = list(ndjson(t["response"]["ndjson_lines"]))
    assert "".join(o["message"]["content"] for o in objs) == t["expected_normalized"]["content"]
    assert objs[-1]["done"] is True


def test_ollama_error_mid_stream_raises_after_partial_content():
    got: List[dict] = []
    with pytest.raises(StreamError, match="error was encountered"):
        for obj in ndjson(OLLAMA["error_mid_stream"]["response"]["ndjson_lines"], engine_id="ollama"):
            got.append(obj)
    assert "".join(o["message"]["content"] for o in got) == OLLAMA["error_mid_stream"]["expected_normalized"]["content"]


def _feed_cost(make, pieces: List[bytes], repeats: int = 5) -> float:
    """The least CPU time (of ``repeats`` runs) a fresh decoder takes to take ``pieces``."""
    import time

    best = float("inf")
    for _ in range(repeats):
        decoder = make()
        started = time.process_time()
        for piece in pieces:
            decoder.feed(piece)
        best = min(best, time.process_time() - started)
        if best > 5:  # far past linear already; no need to repeat a quadratic run
            break
    return best


@pytest.mark.parametrize("shape", ["line", "sse_line", "sse_multiline_event"])
def test_assembling_a_long_line_or_event_is_linear(shape):
    # A line (or one event of many data: lines) that never ends, in 16 KiB reads. Quadratic assembly made
    # each doubling cost four times as much; linear assembly costs about 4x for 4x the input. Compared with
    # itself in the same run (least of 5 runs each), so the machine's speed does not matter; 8x leaves room
    # for noise.
    from jarvis_core.engine.streams import LineByteDecoder, SSEByteDecoder

    piece = b"A" * 16384 if shape != "sse_multiline_event" else (b"data: " + b"A" * 1018 + b"\n") * 16
    first = b"data: " if shape == "sse_line" else b""
    make = {"line": lambda: LineByteDecoder(max_line=1 << 30)}.get(shape, lambda: SSEByteDecoder(max_line=1 << 30))
    small = _feed_cost(make, [first] + [piece] * 512)  # 8 MiB: measured 8-13 ms
    large = _feed_cost(make, [first] + [piece] * 2048)  # 32 MiB: measured 4.0-4.5x that; quadratic was 15-46x
    assert large / max(small, 1e-3) < 8, f"4x the input cost {large / small:.1f}x the time ({small:.3f}s, {large:.3f}s)"



# -- NDJSON values -------------------------------------------------------------------------------------
def test_ndjson_decoder_gives_the_values_of_complete_lines_across_reads():
    from jarvis_core.engine.streams import NDJSONByteDecoder

    dec = NDJSONByteDecoder()
    body = '{"a": 1}\n\n  \r\n {"b": "é"} \r\n[1, 2]\n{"c": nu'.encode()
    out = []
    for i in range(0, len(body), 3):  # split anywhere, also inside a character and a CRLF
        out += dec.feed(body[i:i + 3])
    assert out == [{"a": 1}, {"b": "é"}, [1, 2]]  # blank lines skipped, whitespace around a value allowed
    assert list(dec.feed(b"ll}")) == [] and not dec.feed(b"")
    assert list(dec.flush()) == [{"c": None}]  # the last line needs no line ending


@pytest.mark.parametrize("line", ['{"a": 1} {"b": 2}', '{"a": 1', "not json", '{"a": 1},'])
def test_ndjson_decoder_rejects_a_line_that_is_not_one_value(line):
    from jarvis_core.engine.streams import NDJSONByteDecoder

    dec = NDJSONByteDecoder(engine_id="eng")
    batch = dec.feed(line.encode() + b"\n")  # decoded as it is iterated
    with pytest.raises(StreamError, match="eng sent malformed JSON"):
        list(batch)


# -- SSE against a reference: the specification's line-by-line algorithm ---------------------------------
def reference_sse(text: str, until_done: bool):
    """The SSE specification's event dispatch, line by line, written plainly (no fast paths)."""
    out, data, name = [], None, None
    for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n")[:-1]:
        if line == "":
            if data is not None:
                value = "\n".join(data)
                if until_done and value.strip() == "[DONE]":
                    return out
                out.append((name or "message", value))
            data, name = None, None
            continue
        field, _, value = line.partition(":")
        value = value[1:] if value[:1] == " " else value
        if field == "data":
            data = (data or []) + [value]
        elif field == "event" and line[:6] == "event:":
            name = value
    return out


_BLOCKS = st.sampled_from([
    'data: {"a": 1}\n\n', "data: x\n\n", "data:nospace\n\n", "data: \n\n", "data\n\n", ": comment\n\n",
    "\n", "\n\n\n", "event: e\ndata: named\n\n", "data: one\ndata: two\n\n", "data: [DONE]\n\n",
    "data: a\r\n\r\n", "data: b\r\r", "id: 7\ndata: c\n\n", "retry: 5\n\n", "data: \u20ac\n\n",
    "event: lonely\n\n", "data: tail",
])


@settings(max_examples=200, deadline=None)
@given(st.lists(_BLOCKS, max_size=14), st.lists(st.integers(min_value=1, max_value=30), max_size=12),
       st.booleans(), st.booleans())
def test_sse_decoder_matches_the_reference_however_the_bytes_are_split(blocks, cuts, until_done, named):
    text = "".join(blocks)
    body = text.encode()
    pieces, i = [], 0
    for n in cuts:
        pieces.append(body[i:i + n])
        i += n
    pieces.append(body[i:])
    dec = SSEByteDecoder(until_done=until_done, events=named)
    got = [item for piece in pieces for item in dec.feed(piece)] + dec.flush()
    want = reference_sse(text + "\n\n" if not text.endswith("\n\n") else text, until_done)
    if named:
        assert [(e.event, e.data) for e in got] == want
    else:
        assert got == [data for _, data in want]
    assert dec.done == (until_done and any(d.strip() == "[DONE]" for _, d in reference_sse(text + "\n\n", False)))
