"""Bounded retries on 429 and 5xx, over real loopback HTTP, with the sleeps recorded instead of waited."""

from __future__ import annotations

import asyncio
import json

import pytest

from jarvis_core.errors import (
    AuthenticationError,
    BadRequestError,
    EngineHTTPError,
    RateLimitError,
    ServerError,
)
from jarvis_core.events import EventType, default_bus
from jarvis_core.testing import Exchange, ReplayServer
from jarvis_core.types import Message

MSGS = [Message.user("hi")]
ANTHROPIC_OK = {"model": "claude-x", "content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn",
                "usage": {"input_tokens": 1, "output_tokens": 1}}
OVERLOADED = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
GEMINI_429 = {"error": {"code": 429, "message": "Resource has been exhausted", "status": "RESOURCE_EXHAUSTED", "details": [
    {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "7s"}]}}
GEMINI_OK = {"candidates": [{"content": {"parts": [{"text": "ok"}]}, "finishReason": "STOP"}]}
OPENAI_OK = {"model": "gpt-x", "choices": [{"index": 0, "message": {"content": "ok"}, "finish_reason": "stop"}]}


def sse(*events):
    return [f"event: {name}\ndata: {json.dumps(data)}" for name, data in events]


TEXT_STREAM = sse(
    ("message_start", {"type": "message_start", "message": {"model": "claude-x", "usage": {"input_tokens": 3, "output_tokens": 1}}}),
    ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
    ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "ok"}}),
    ("content_block_stop", {"type": "content_block_stop", "index": 0}),
    ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 2}}),
    ("message_stop", {"type": "message_stop"}),
)


@pytest.fixture
def retry_events():
    seen = []
    unsubscribe = default_bus().subscribe(seen.append, EventType.REQUEST_RETRY)
    yield seen
    unsubscribe()


def test_rate_limit_honours_retry_after_then_succeeds(cloud, retry_events):
    with ReplayServer([
        Exchange("POST", "/v1/messages", status=429, headers={"retry-after": "2"}, times=1,
                 json={"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}}),
        Exchange("POST", "/v1/messages", json=ANTHROPIC_OK),
    ]) as server, cloud.engine("anthropic", server.url) as engine:
        assert engine.generate(MSGS, model="claude-x").content == "ok"
        assert len(server.requests) == 2
    assert cloud.sleeps.delays == [2.0]
    (event,) = retry_events
    assert event.data["provider"] == "anthropic" and event.data["status"] == 429 and event.data["attempt"] == 1
    assert event.data["error"] == "RateLimitError" and event.data["delay"] == 2.0


def test_overloaded_529_backs_off_exponentially(cloud, retry_events):
    with ReplayServer([
        Exchange("POST", "/v1/messages", status=529, json=OVERLOADED, times=2),
        Exchange("POST", "/v1/messages", json=ANTHROPIC_OK),
    ]) as server, cloud.engine("anthropic", server.url) as engine:
        engine.retry.jitter = lambda: 1.0  # the upper end of the jitter range: exactly base * 2**attempt
        assert engine.generate(MSGS, model="claude-x").content == "ok"
    assert cloud.sleeps.delays == [0.5, 1.0]
    assert [e.data["attempt"] for e in retry_events] == [1, 2]


def test_jitter_stays_within_half_to_full_backoff(cloud):
    with ReplayServer([Exchange("POST", "/v1/messages", status=500, json={"error": {"message": "boom"}})]) as server:
        engine = cloud.engine("anthropic", server.url)
        engine.retry.jitter = lambda: 0.0
        with pytest.raises(ServerError):
            engine.generate(MSGS, model="claude-x")
        engine.close()
    assert cloud.sleeps.delays == [0.25, 0.5, 1.0]


def test_retries_are_bounded(cloud, retry_events):
    with ReplayServer([Exchange("POST", "/v1/messages", status=503, json={"error": {"message": "unavailable"}})]) as server:
        with cloud.engine("anthropic", server.url) as engine, pytest.raises(ServerError) as info:
            engine.generate(MSGS, model="claude-x")
        assert len(server.requests) == 4, "one attempt plus max_retries=3"
    assert info.value.status_code == 503
    assert len(cloud.sleeps.delays) == 3 and len(retry_events) == 3


def test_max_retries_zero_disables_retrying(cloud):
    with ReplayServer([Exchange("POST", "/v1/messages", status=503, json={})]) as server:
        with cloud.engine("anthropic", server.url, max_retries=0) as engine, pytest.raises(ServerError):
            engine.generate(MSGS, model="claude-x")
        assert len(server.requests) == 1


@pytest.mark.parametrize(
    ("status", "error"),
    [(400, BadRequestError), (401, AuthenticationError), (403, AuthenticationError), (404, EngineHTTPError)],
)
def test_other_4xx_are_never_retried(cloud, status, error):
    body = {"type": "error", "error": {"type": "x", "message": f"status {status}"}}
    with ReplayServer([Exchange("POST", "/v1/messages", status=status, json=body)]) as server:
        with cloud.engine("anthropic", server.url) as engine, pytest.raises(error):
            engine.generate(MSGS, model="claude-x")
        assert len(server.requests) == 1
    assert cloud.sleeps.delays == []


def test_gemini_retry_delay_from_error_details(cloud):
    path = "/v1beta/models/gemini-x:generateContent"
    with ReplayServer([
        Exchange("POST", path, status=429, json=GEMINI_429, times=1),
        Exchange("POST", path, json=GEMINI_OK),
    ]) as server, cloud.engine("gemini", server.url) as engine:
        assert engine.generate(MSGS, model="gemini-x").content == "ok"
    assert cloud.sleeps.delays == [7.0]


def test_openai_retry_after_ms_and_503_retry_after(cloud):
    with ReplayServer([
        Exchange("POST", "/v1/chat/completions", status=429, headers={"retry-after-ms": "250"}, times=1,
                 json={"error": {"message": "Rate limit reached", "type": "requests"}}),
        Exchange("POST", "/v1/chat/completions", status=503, headers={"retry-after": "3"}, times=1,
                 json={"error": {"message": "overloaded"}}),
        Exchange("POST", "/v1/chat/completions", json=OPENAI_OK),
    ]) as server, cloud.engine("openai", server.url) as engine:
        assert engine.generate(MSGS, model="gpt-x").content == "ok"
    assert cloud.sleeps.delays == [0.25, 3.0]


@pytest.mark.parametrize("provider, path, answer, model", [
    ("anthropic", "/v1/messages", ANTHROPIC_OK, "claude-x"),
    ("gemini", "/v1beta/models/gemini-x:generateContent", GEMINI_OK, "gemini-x"),
    ("openai", "/v1/chat/completions", OPENAI_OK, "gpt-x"),
])
def test_agenerate_retries_like_generate_and_waits_on_the_loop(cloud, retry_events, provider, path, answer, model):
    with ReplayServer([
        Exchange("POST", path, status=429, headers={"retry-after": "2"}, times=1, json={"error": {"message": "slow"}}),
        Exchange("POST", path, json=answer),
    ]) as server:
        engine = cloud.engine(provider, server.url)

        async def ask():
            try:
                return await engine.agenerate(MSGS, model=model)
            finally:
                await engine.aclose()

        assert asyncio.run(ask()).content == "ok"
        assert len(server.requests) == 2 and server.requests[0].body == server.requests[1].body
    assert cloud.sleeps.delays == [2.0] and cloud.sleeps.awaited == 1
    (event,) = retry_events
    assert event.data["provider"] == ("google" if provider == "gemini" else provider) and event.data["attempt"] == 1


def test_a_retry_after_too_long_to_wait_is_raised(cloud):
    with ReplayServer([Exchange("POST", "/v1/messages", status=429, headers={"retry-after": "3600"},
                                json={"type": "error", "error": {"type": "rate_limit_error", "message": "daily quota"}})]) as server:
        with cloud.engine("anthropic", server.url) as engine, pytest.raises(RateLimitError) as info:
            engine.generate(MSGS, model="claude-x")
        assert len(server.requests) == 1
    assert info.value.retry_after == 3600.0 and "3600" in str(info.value)


def _stream(engine, model="claude-x"):
    async def collect():
        try:
            return [c async for c in engine.stream_full(MSGS, model=model)]
        finally:
            await engine.aclose()

    return asyncio.run(collect())


def test_stream_retries_an_error_status(cloud, retry_events):
    with ReplayServer([
        Exchange("POST", "/v1/messages", status=529, json=OVERLOADED, times=1),
        Exchange("POST", "/v1/messages", sse=TEXT_STREAM),
    ]) as server:
        chunks = _stream(cloud.engine("anthropic", server.url))
        assert len(server.requests) == 2
    assert "".join(c.content or "" for c in chunks) == "ok"
    assert len(retry_events) == 1 and len(cloud.sleeps.delays) == 1


def test_stream_retries_an_error_event_before_any_output(cloud):
    early_error = TEXT_STREAM[:1] + sse(("error", OVERLOADED))
    with ReplayServer([
        Exchange("POST", "/v1/messages", sse=early_error, times=1),
        Exchange("POST", "/v1/messages", sse=TEXT_STREAM),
    ]) as server:
        chunks = _stream(cloud.engine("anthropic", server.url))
        assert len(server.requests) == 2
    assert "".join(c.content or "" for c in chunks) == "ok"


def test_stream_never_retries_after_output(cloud):
    late_error = TEXT_STREAM[:3] + sse(("error", OVERLOADED))
    with ReplayServer([Exchange("POST", "/v1/messages", sse=late_error)]) as server:
        engine = cloud.engine("anthropic", server.url)
        seen = []

        async def collect():
            try:
                async for chunk in engine.stream_full(MSGS, model="claude-x"):
                    seen.append(chunk)
            finally:
                await engine.aclose()

        with pytest.raises(ServerError) as info:
            asyncio.run(collect())
        assert len(server.requests) == 1
    assert [c.content for c in seen] == ["ok"], "the caller got the output before the error"
    assert info.value.status_code == 529 and cloud.sleeps.delays == []


GEMINI_UNAVAILABLE = {"error": {"code": 503, "message": "The model is overloaded.", "status": "UNAVAILABLE"}}


@pytest.mark.parametrize(("provider", "model", "path", "events"), [
    ("anthropic", "claude-x", "/v1/messages", TEXT_STREAM[:3] + sse(("error", OVERLOADED))),
    ("gemini", "gemini-x", "/v1beta/models/gemini-x:streamGenerateContent",
     [f"data: {json.dumps({'candidates': [{'content': {'parts': [{'text': 'ok'}]}}]})}",
      f"data: {json.dumps(GEMINI_UNAVAILABLE)}"]),
    ("openai", "gpt-x", "/v1/chat/completions",
     [f"data: {json.dumps({'model': 'gpt-x', 'choices': [{'index': 0, 'delta': {'content': 'ok'}}]})}",
      f"data: {json.dumps({'error': {'message': 'overloaded', 'type': 'server_error', 'code': 503}})}"]),
], ids=["anthropic", "gemini", "openai"])
def test_output_and_an_error_in_one_read_give_the_output_then_the_error(cloud, provider, model, path, events):
    # The whole stream in one body without chunks: the client reads the output and the error together.
    body = "".join(event + "\n\n" for event in events).encode()
    with ReplayServer([Exchange("POST", path, raw=body, headers={"content-type": "text/event-stream"})]) as server:
        engine = cloud.engine(provider, server.url)
        seen = []

        async def collect():
            try:
                async for chunk in engine.stream_full(MSGS, model=model):
                    seen.append(chunk)
            finally:
                await engine.aclose()

        with pytest.raises(EngineHTTPError):
            asyncio.run(collect())
        assert len(server.requests) == 1, "a stream that gave output is never sent again"
    assert [c.content for c in seen] == ["ok"]
    assert cloud.sleeps.delays == []
