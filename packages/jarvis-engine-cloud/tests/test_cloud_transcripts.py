"""Every recorded transcript, replayed over loopback HTTP through the real engine.

For each transcript the engine is pointed at a :class:`ReplayServer` (base-URL override), makes the call
the transcript records, and must (1) send the recorded request body, headers and path, and (2) turn the
recorded answer into exactly ``expected_normalized``, streamed or not.
"""

from __future__ import annotations

import asyncio
import json
import pathlib

import pytest

from jarvis_core.errors import ContextLengthError, ModelNotFoundError
from jarvis_core.testing import Exchange, ReplayServer, body_matches, exchange_from_transcript

DATA = pathlib.Path(__file__).parent / "data"
#: Recordings of real servers that several packages' tests replay, kept once at the repository's tests/data.
SHARED = pathlib.Path(__file__).resolve().parents[3] / "tests" / "data"
ALL = {
    t["id"]: t
    for path in (SHARED / "cloud_transcripts.json", DATA / "openai_cloud_transcripts.json")
    for t in json.loads(path.read_text(encoding="utf-8"))
}
OK_IDS = sorted(i for i, t in ALL.items() if t["response"]["status"] < 400)
ERROR_IDS = sorted(i for i, t in ALL.items() if t["response"]["status"] >= 400)


def _run(cloud, t):
    provider, kw = cloud.call_of(t)
    stream = kw.pop("stream")
    options = kw.pop("options")
    with ReplayServer([exchange_from_transcript(t)]) as server:
        engine = cloud.engine(provider, server.url)
        if stream:
            async def collect():
                try:
                    return [c async for c in engine.stream_full(**kw, **options)]
                finally:
                    await engine.aclose()

            result = cloud.aggregate(asyncio.run(collect()))
        else:
            with engine:
                result = cloud.normalized(engine.generate(**kw, **options))
        requests = server.requests
    return result, requests


def test_every_transcript_is_covered():
    providers = {t["provider"] for t in ALL.values()}
    assert providers == {"anthropic", "gemini", "openai"}
    assert len(OK_IDS) >= 18 and ERROR_IDS


@pytest.mark.parametrize("tid", OK_IDS)
def test_transcript_normalizes_to_expected(cloud, tid):
    t = ALL[tid]
    result, requests = _run(cloud, t)
    cloud.assert_matches(result, t["expected_normalized"])
    assert len(requests) == 1 and requests[0].exchange is not None, "exactly one request, matched"


@pytest.mark.parametrize("tid", OK_IDS)
def test_transcript_request_is_what_the_provider_expects(cloud, tid):
    t = ALL[tid]
    _, requests = _run(cloud, t)
    sent = requests[0]
    recorded = t["request"]["body"]
    if t["provider"] == "anthropic":
        assert sent.json == recorded, json.dumps(sent.json)
        assert sent.headers["x-api-key"] == "sk-test-cloud-0000"
        assert sent.headers["anthropic-version"] == "2023-06-01"
    elif t["provider"] == "gemini":
        # generationConfig may carry more (maxOutputTokens is always sent); everything recorded must match.
        assert body_matches(recorded, sent.json), json.dumps(sent.json)
        assert sent.headers["x-goog-api-key"] == "sk-test-cloud-0000"
        assert "key" not in sent.query and "sk-test" not in sent.target, "the Gemini key never goes in the URL"
    else:
        assert body_matches(recorded, sent.json), json.dumps(sent.json)
        assert sent.headers["authorization"] == "Bearer sk-test-cloud-0000"


def test_anthropic_not_found_is_typed_and_not_retried(cloud):
    t = ALL["anthropic_http_error_not_found"]
    with pytest.raises(ModelNotFoundError) as info:
        _run(cloud, t)
    assert info.value.status_code == 404
    assert "claude-9-nonexistent" in str(info.value)
    assert cloud.sleeps.delays == [], "a 404 is never retried"


def test_openai_context_length_is_typed_and_not_retried(cloud):
    t = ALL["openai_http_error_context_length"]
    with pytest.raises(ContextLengthError) as info:
        _run(cloud, t)
    assert info.value.status_code == 400
    assert cloud.sleeps.delays == []


@pytest.mark.parametrize("tid", ["anthropic_text", "gemini_text", "openai_text"])
def test_streaming_and_plain_answers_agree_on_the_text(cloud, tid):
    """The same answer served as a stream (one word per event) aggregates to the plain answer."""
    t = ALL[tid]
    provider, kw = cloud.call_of(t)
    kw.pop("stream"), kw.pop("options")
    plain, _ = _run(cloud, t)
    words = plain["content"].split(" ")
    pieces = [w + (" " if i < len(words) - 1 else "") for i, w in enumerate(words)]
    if provider == "anthropic":
        events = (
            ['event: message_start\ndata: {"type":"message_start","message":{"model":"m","usage":{"input_tokens":12,"output_tokens":1}}}']
            + ['event: content_block_start\ndata: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}']
            + ["event: content_block_delta\ndata: " + json.dumps({"type": "content_block_delta", "index": 0,
                                                                   "delta": {"type": "text_delta", "text": p}}) for p in pieces]
            + ['event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":11}}',
               'event: message_stop\ndata: {"type":"message_stop"}']
        )
        path = "/v1/messages"
    elif provider == "gemini":
        events = ["data: " + json.dumps({"candidates": [{"content": {"role": "model", "parts": [{"text": p}]},
                                                         **({"finishReason": "STOP"} if i == len(pieces) - 1 else {})}],
                                         "usageMetadata": {"promptTokenCount": 2, "candidatesTokenCount": 9, "totalTokenCount": 11}})
                  for i, p in enumerate(pieces)]
        path = "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    else:
        events = ["data: " + json.dumps({"model": "gpt", "choices": [{"index": 0, "delta": {"content": p}, "finish_reason": None}]})
                  for p in pieces]
        events += ['data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}', "data: [DONE]"]
        path = "/v1/chat/completions"

    with ReplayServer([Exchange("POST", path, sse=events)]) as server:
        engine = cloud.engine(provider, server.url)

        async def collect():
            try:
                return [c async for c in engine.stream_full(**kw)]
            finally:
                await engine.aclose()

        chunks = asyncio.run(collect())
    assert [c.content for c in chunks if c.content] == pieces, "one delta per event, in order"
    assert "".join(c.content or "" for c in chunks) == plain["content"]
