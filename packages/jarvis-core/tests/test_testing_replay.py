"""The loopback replay server and the transcript loaders of jarvis_core.testing."""

from __future__ import annotations

import json
import pathlib
import threading

import httpx
import pytest

from jarvis_core.engine.streams import LineByteDecoder, SSEByteDecoder
from jarvis_core.testing import (
    UNMATCHED_STATUS,
    Exchange,
    ReplayServer,
    body_matches,
    exchanges_from_transcripts,
    load_transcripts,
    split_raw_sse,
)

#: Recordings of real servers that several packages' tests replay, kept once at the repository's tests/data.
DATA = pathlib.Path(__file__).resolve().parents[3] / "tests" / "data"


def sse_events(body: str):
    """The server-sent events of a whole body, as the engines' decoder reads them."""
    dec = SSEByteDecoder(events=True)
    return dec.feed(body.encode()) + dec.flush()


def sse_json(body: str):
    """The JSON payloads of an OpenAI-style SSE body, up to ``[DONE]``."""
    dec = SSEByteDecoder(until_done=True)
    return [json.loads(p) for p in dec.feed(body.encode()) + dec.flush()]


def ndjson(body: str):
    dec = LineByteDecoder()
    return [json.loads(line) for line in dec.feed(body.encode()) + dec.flush() if line.strip()]


@pytest.fixture(scope="module")
def ollama():
    return load_transcripts(DATA / "ollama_transcripts.json")


@pytest.fixture(scope="module")
def openai_sse():
    return load_transcripts(DATA / "openai_sse_transcripts.json")


@pytest.fixture(scope="module")
def cloud():
    return load_transcripts(DATA / "cloud_transcripts.json")


# -- serving ------------------------------------------------------------------------------------------
def test_json_exchange_and_recorded_request():
    with ReplayServer([Exchange("POST", "/v1/chat", json={"ok": True}, headers={"X-Req": "7"})]) as server:
        assert server.url.startswith("http://127.0.0.1:")
        r = httpx.post(server.url + "/v1/chat?a=1", json={"model": "m", "n": [1, 2]}, headers={"X-Test": "yes"})
        assert r.status_code == 200
        assert r.json() == {"ok": True}
        assert r.headers["x-req"] == "7"
        assert r.headers["content-type"] == "application/json"
        (req,) = server.requests
        assert (req.method, req.path, dict(req.query)) == ("POST", "/v1/chat", {"a": "1"})
        assert req.json == {"model": "m", "n": [1, 2]}
        assert req.headers["x-test"] == "yes"
        assert req.target == "/v1/chat?a=1"
        assert req.exchange == "POST /v1/chat"


def test_unmatched_request_names_what_was_asked_and_what_is_recorded():
    with ReplayServer([Exchange("GET", "/api/tags", json={}, name="tags")]) as server:
        r = httpx.post(server.url + "/api/chat", json={})
        assert r.status_code == UNMATCHED_STATUS
        message = r.json()["error"]["message"]
        assert "POST /api/chat" in message
        assert "GET /api/tags [tags]" in message
        assert [q.path for q in server.unmatched] == ["/api/chat"]


def test_no_exchanges_answers_everything_with_the_error():
    with ReplayServer() as server:
        r = httpx.get(server.url + "/anything")
        assert r.status_code == UNMATCHED_STATUS
        assert "recorded: nothing" in r.json()["error"]["message"]


def test_ndjson_arrives_line_by_line_while_the_rest_is_held():
    gate = threading.Event()
    lines = [{"i": 0}, {"i": 1}, {"i": 2}]
    with ReplayServer([Exchange("POST", "/s", ndjson=lines, hold=gate)]) as server:
        with httpx.Client(base_url=server.url) as client, client.stream("POST", "/s") as r:
            assert r.headers["transfer-encoding"] == "chunked"
            it = r.iter_lines()
            first = next(it)  # arrives although the server still holds the rest
            assert json.loads(first) == {"i": 0}
            gate.set()
            assert [json.loads(x) for x in it if x] == [{"i": 1}, {"i": 2}]


def test_sse_events_are_framed_with_blank_lines():
    events = ['data: {"a": 1}', "event: ping\ndata: x", "data: [DONE]"]
    with ReplayServer([Exchange("POST", "/e", sse=events)]) as server:
        r = httpx.post(server.url + "/e")
        assert r.headers["content-type"] == "text/event-stream"
        assert r.text == 'data: {"a": 1}\n\nevent: ping\ndata: x\n\ndata: [DONE]\n\n'
        parsed = [(e.event, e.data) for e in sse_events(r.text)]
        assert parsed == [("message", '{"a": 1}'), ("ping", "x"), ("message", "[DONE]")]


def test_raw_chunks_are_sent_byte_for_byte():
    chunks = [b"\x00\x01", "caf\u00e9\r\n", b""]
    with ReplayServer([Exchange("GET", "/raw", raw=chunks)]) as server:
        r = httpx.get(server.url + "/raw")
        assert r.content == b"\x00\x01" + "caf\u00e9\r\n".encode()
    with ReplayServer([Exchange("GET", "/t", raw="plain", status=201)]) as server:
        r = httpx.get(server.url + "/t")
        assert (r.status_code, r.text, r.headers["content-length"]) == (201, "plain", "5")


def test_break_after_cuts_the_stream_without_its_end():
    with ReplayServer([Exchange("POST", "/s", ndjson=[{"i": 0}, {"i": 1}, {"i": 2}], break_after=2)]) as server:
        got = []
        with pytest.raises(httpx.RemoteProtocolError), httpx.stream("POST", server.url + "/s") as r:
            for line in r.iter_lines():
                got.append(json.loads(line))
        assert got == [{"i": 0}, {"i": 1}]


def test_break_after_zero_on_a_json_body():
    with ReplayServer([Exchange("GET", "/j", json={"x": 1}, break_after=0)]) as server:
        with pytest.raises(httpx.RemoteProtocolError):
            httpx.get(server.url + "/j")


def test_drop_closes_without_a_response():
    with ReplayServer([Exchange("GET", "/d", drop=True)]) as server:
        with pytest.raises(httpx.RemoteProtocolError):
            httpx.get(server.url + "/d")


def test_hang_times_out_and_the_server_still_stops():
    server = ReplayServer([Exchange("*", None, hang=True)]).start()
    thread = server._thread
    try:
        with pytest.raises(httpx.ReadTimeout):
            httpx.get(server.url + "/x", timeout=httpx.Timeout(0.2, connect=2.0))
    finally:
        server.stop()
    assert thread is not None and not thread.is_alive()
    server.stop()  # idempotent


def test_stop_ends_a_held_stream_in_progress():
    gate = threading.Event()  # never set
    server = ReplayServer([Exchange("POST", "/s", ndjson=[1, 2, 3], hold=gate)]).start()
    with httpx.Client(base_url=server.url) as client, client.stream("POST", "/s") as r:
        it = r.iter_lines()
        assert next(it) == "1"
        server.stop()
        with pytest.raises(httpx.RemoteProtocolError):
            list(it)


def test_times_scripts_a_sequence():
    exchanges = [
        Exchange("POST", "/c", status=429, json={"error": "slow down"}, headers={"Retry-After": "2"}, times=1),
        Exchange("POST", "/c", json={"ok": 1}),
    ]
    with ReplayServer(exchanges) as server, httpx.Client(base_url=server.url) as client:
        first = client.post("/c")
        assert (first.status_code, first.headers["retry-after"]) == (429, "2")
        assert client.post("/c").json() == {"ok": 1}
        assert client.post("/c").json() == {"ok": 1}


def test_used_up_exchanges_are_reported():
    with ReplayServer([Exchange("GET", "/once", json=1, times=1)]) as server:
        assert httpx.get(server.url + "/once").json() == 1
        r = httpx.get(server.url + "/once")
        assert r.status_code == UNMATCHED_STATUS
        assert "(used up)" in r.json()["error"]["message"]


def test_body_subset_and_predicate_matching():
    exchanges = [
        Exchange("POST", "/chat", match={"stream": True}, raw="streamed"),
        Exchange("POST", "/chat", match=lambda body: body is not None and body.get("n", 0) > 5, raw="big"),
        Exchange("POST", "/chat", raw="default"),
    ]
    with ReplayServer(exchanges) as server, httpx.Client(base_url=server.url) as client:
        assert client.post("/chat", json={"model": "m", "stream": True}).text == "streamed"
        assert client.post("/chat", json={"n": 9}).text == "big"
        assert client.post("/chat", json={"n": 1, "stream": False}).text == "default"
        assert client.post("/chat", content=b"not json").text == "default"


def test_body_matches_rules():
    assert body_matches({"a": {"b": 1}}, {"a": {"b": 1, "c": 2}, "d": 3})
    assert not body_matches({"a": {"b": 2}}, {"a": {"b": 1}})
    assert body_matches({"m": [{"role": "user"}]}, {"m": [{"role": "user", "content": "x"}]})
    assert not body_matches({"m": [{"role": "user"}]}, {"m": [{"role": "user"}, {"role": "user"}]})
    assert not body_matches({"a": 1}, None)


def test_method_and_query_matching():
    exchanges = [
        Exchange("GET", "/m?alt=sse", raw="sse"),
        Exchange("*", "/m", raw="any"),
    ]
    with ReplayServer(exchanges) as server, httpx.Client(base_url=server.url) as client:
        assert client.get("/m", params={"alt": "sse", "key": "k"}).text == "sse"
        assert client.get("/m").text == "any"
        assert client.delete("/m").text == "any"


def test_keep_alive_one_connection_and_close_is_observed():
    with ReplayServer([Exchange("GET", "/x", json=1)]) as server:
        with httpx.Client(base_url=server.url) as client:
            for _ in range(5):
                client.get("/x")
            assert server.connection_count == 1
            assert server.open_connections == 1
        assert server.wait_until(lambda s: s.open_connections == 0)
        assert len(server.requests) == 5


async def test_async_client_streams_incrementally():
    gate = threading.Event()
    with ReplayServer([Exchange("POST", "/s", sse=['data: {"n": 1}', 'data: {"n": 2}'], hold=gate)]) as server:
        async with httpx.AsyncClient(base_url=server.url) as client, client.stream("POST", "/s") as r:
            it = r.aiter_lines()
            assert await it.__anext__() == 'data: {"n": 1}'
            gate.set()
            rest = [line async for line in it]
            assert rest == ["", 'data: {"n": 2}', ""]


def test_chunked_request_body_is_read():
    with ReplayServer([Exchange("POST", "/u", json="ok")]) as server:
        r = httpx.post(server.url + "/u", content=iter([b'{"a":', b" 1}"]))
        assert r.json() == "ok"
        assert server.requests[0].json == {"a": 1}
        assert server.requests[0].headers.get("transfer-encoding") == "chunked"


def test_exchange_validation():
    with pytest.raises(ValueError, match="several bodies"):
        Exchange("GET", "/", json={}, raw="x")
    with pytest.raises(ValueError, match="break_after"):
        Exchange("GET", "/", break_after=-1)
    with pytest.raises(TypeError):
        ReplayServer([{"method": "GET"}])  # type: ignore[list-item]
    with pytest.raises(RuntimeError, match="not running"):
        ReplayServer().url  # noqa: B018


def test_json_null_body_is_a_body():
    with ReplayServer([Exchange("GET", "/n", json=None)]) as server:
        r = httpx.get(server.url + "/n")
        assert r.text == "null" and r.headers["content-type"] == "application/json"


# -- transcripts --------------------------------------------------------------------------------------
def test_ollama_ndjson_transcript_replays(ollama):
    exchanges = exchanges_from_transcripts(ollama, ["chat_stream", "tags"])
    recorded = {t["id"]: t for t in ollama}
    with ReplayServer(exchanges) as server, httpx.Client(base_url=server.url) as client:
        r = client.post("/api/chat", json={"model": "whatever"})
        assert r.headers["content-type"] == "application/x-ndjson"
        objs = ndjson(r.text)
        assert [json.dumps(o, separators=(",", ":")) for o in objs] == [
            json.dumps(json.loads(x), separators=(",", ":")) for x in recorded["chat_stream"]["response"]["ndjson_lines"]
        ]
        assert objs[-1]["done"] is True
        tags = client.get("/api/tags").json()
        assert tags == recorded["tags"]["response"]["body"]
        assert server.requests[0].exchange == "chat_stream"


def test_ollama_error_transcript_keeps_status(ollama):
    (ex,) = exchanges_from_transcripts(ollama, ["error_model_not_found"])
    assert ex.status == 404 and ex.meta["id"] == "error_model_not_found"
    with ReplayServer([ex]) as server:
        r = httpx.post(server.url + "/api/chat", json={})
        assert r.status_code == 404
        assert "not found" in r.json()["error"]


def test_openai_events_transcript_replays(openai_sse):
    (ex,) = exchanges_from_transcripts(openai_sse, ["openai_parallel_tool_calls"])
    recorded = next(t for t in openai_sse if t["id"] == "openai_parallel_tool_calls")["response"]["events"]
    with ReplayServer([ex]) as server:
        payloads = sse_json(httpx.post(server.url + "/v1/chat/completions", json={}).text)
    assert len(payloads) == sum(1 for e in recorded if e.strip() != "data: [DONE]")
    assert payloads[-1]["usage"]["total_tokens"] > 0


def test_raw_sse_transcript_keeps_crlf_and_comments(openai_sse):
    transcript = next(t for t in openai_sse if t["id"] == "synthetic_sse_framing")
    (ex,) = exchanges_from_transcripts([transcript])
    assert "".join(ex.raw) == transcript["response"]["raw_sse"]
    with ReplayServer([ex]) as server:
        body = httpx.post(server.url + "/v1/chat/completions", json={}).content.decode()
    assert body == transcript["response"]["raw_sse"]
    assert "\r\n" in body and body.startswith(": keep-alive")
    text = "".join(p["choices"][0]["delta"].get("content") or "" for p in sse_json(body) if p["choices"])
    assert text == transcript["expected_aggregate"]["content"]


def test_split_raw_sse_keeps_every_byte():
    raw = "data: a\r\n\r\n: c\n\ndata: b\r\rtrailing"
    assert split_raw_sse(raw) == ["data: a\r\n\r\n", ": c\n\n", "data: b\r\r", "trailing"]


def test_cloud_transcripts_match_on_url_path_and_query(cloud):
    exchanges = exchanges_from_transcripts(cloud, ["gemini_stream_text", "anthropic_text"])
    assert exchanges[0].path == "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    assert exchanges[1].path == "/v1/messages"
    with ReplayServer(exchanges) as server, httpx.Client(base_url=server.url) as client:
        r = client.post("/v1beta/models/gemini-2.5-flash:streamGenerateContent", params={"alt": "sse"}, json={})
        events = sse_events(r.text)
        assert json.loads(events[0].data)["candidates"][0]["content"]["parts"][0]["text"] == "One"
        assert client.post("/v1/messages", json={}).json()["type"] == "message"
        # no alt=sse: the streamed exchange does not match
        assert client.post("/v1beta/models/gemini-2.5-flash:streamGenerateContent").status_code == UNMATCHED_STATUS


def test_cloud_sse_events_carry_event_names(cloud):
    (ex,) = exchanges_from_transcripts(cloud, ["anthropic_stream_text_then_tool_use"])
    with ReplayServer([ex]) as server:
        r = httpx.post(server.url + "/v1/messages", json={})
    events = sse_events(r.text)
    recorded = next(t for t in cloud if t["id"] == "anthropic_stream_text_then_tool_use")["response"]["sse_events"]
    assert [e.event for e in events] == [e["event"] for e in recorded]
    assert [json.loads(e.data) for e in events] == [e["data"] for e in recorded]


def test_path_override_and_any_path(cloud):
    (anywhere,) = exchanges_from_transcripts(cloud, ["gemini_text"], any_path=True)
    (moved,) = exchanges_from_transcripts(cloud, ["gemini_text"], path="/custom")
    with ReplayServer([moved]) as server:
        assert httpx.post(server.url + "/custom", json={}).status_code == 200
        assert httpx.post(server.url + "/other", json={}).status_code == UNMATCHED_STATUS
    with ReplayServer([anywhere]) as server:
        assert httpx.post(server.url + "/a/b/c", json={}).json()["candidates"]


def test_loader_overrides_and_body_match(ollama):
    exchanges = exchanges_from_transcripts(
        ollama, ["chat_non_stream", "chat_stream"], match_body=None, times=1
    )
    assert all(ex.times == 1 for ex in exchanges)
    (streamed,) = exchanges_from_transcripts(ollama, ["chat_stream"], match_body={"stream": True}, break_after=1)
    assert streamed.break_after == 1 and streamed.match == {"stream": True}


def test_loader_unknown_id_lists_known(ollama):
    with pytest.raises(KeyError, match=r"no transcript.*'nope'.*chat_stream"):
        exchanges_from_transcripts(ollama, ["nope"])


def test_every_recorded_transcript_loads(ollama, openai_sse, cloud):
    for transcripts in (ollama, openai_sse, cloud):
        exchanges = exchanges_from_transcripts(transcripts)
        assert len(exchanges) == len(transcripts)
        for ex in exchanges:
            assert ex.chunks(), f"{ex.name} has no body"
