"""A planted key must never show: not in exceptions, log records (httpx and httpcore at DEBUG included),
events on the default bus, nor any repr, on every path: success, auth failure, rate limit, server error,
mid-stream error, connection refused. The fake servers echo the key back in their errors on purpose."""

from __future__ import annotations

import asyncio
import json
import logging
import traceback
from typing import Any, List

import pytest

from jarvis_core.errors import JarvisError
from jarvis_core.events import default_bus
from jarvis_core.testing import Exchange, ReplayServer, closed_port_url
from jarvis_core.types import Message

KEY = "sk-PLANTED-7f3a9c1e5b2d4f6a8c0e"
MSGS = [Message.system("sys"), Message.user("hi")]
MODELS = {"anthropic": "claude-x", "gemini": "gemini-x", "openai": "gpt-x"}
PATHS = {"anthropic": "/v1/messages", "gemini": "/v1beta/models/gemini-x:", "openai": "/v1/chat/completions"}


def ok_exchanges(provider: str) -> List[Exchange]:
    if provider == "anthropic":
        body = {"model": "claude-x", "content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn", "usage": {}}
        stream = [
            'event: message_start\ndata: {"type":"message_start","message":{"model":"claude-x","usage":{"input_tokens":1}}}',
            'event: content_block_start\ndata: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}',
            'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"ok"}}',
            'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":1}}',
            'event: message_stop\ndata: {"type":"message_stop"}',
        ]
        return [Exchange("POST", "/v1/messages", match={"stream": True}, sse=stream), Exchange("POST", "/v1/messages", json=body)]
    if provider == "gemini":
        body = {"candidates": [{"content": {"parts": [{"text": "ok"}]}, "finishReason": "STOP"}]}
        return [Exchange("POST", "/v1beta/models/gemini-x:streamGenerateContent", sse=["data: " + json.dumps(body)]),
                Exchange("POST", "/v1beta/models/gemini-x:generateContent", json=body)]
    body = {"model": "gpt-x", "choices": [{"index": 0, "message": {"content": "ok"}, "finish_reason": "stop"}]}
    stream = ['data: {"choices":[{"index":0,"delta":{"content":"ok"},"finish_reason":"stop"}]}', "data: [DONE]"]
    return [Exchange("POST", "/v1/chat/completions", match={"stream": True}, sse=stream),
            Exchange("POST", "/v1/chat/completions", json=body)]


def echo_error(status: int, provider: str) -> Exchange:
    message = f"Incorrect API key provided: {KEY}. You can find your API key at https://example.invalid"
    body = {"type": "error", "error": {"type": "x", "message": message}} if provider == "anthropic" else {
        "error": {"code": status, "message": message, "status": "X", "key": KEY}}
    return Exchange("*", None, status=status, json=body, headers={"x-echo": KEY})


def mid_stream_error(provider: str) -> List[Exchange]:
    text = f"stream failed for key {KEY}"
    if provider == "anthropic":
        events = ['event: message_start\ndata: {"type":"message_start","message":{"model":"claude-x","usage":{}}}',
                  'event: content_block_start\ndata: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}',
                  'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"a"}}',
                  "event: error\ndata: " + json.dumps({"type": "error", "error": {"type": "api_error", "message": text}})]
    elif provider == "gemini":
        events = ['data: {"candidates":[{"content":{"parts":[{"text":"a"}]}}]}',
                  "data: " + json.dumps({"error": {"code": 500, "message": text}})]
    else:
        events = ['data: {"choices":[{"index":0,"delta":{"content":"a"}}]}', "data: " + json.dumps({"error": {"message": text}})]
    return [Exchange("*", None, sse=events)]


def run_everything(engine: Any, model: str, caught: List[BaseException]) -> None:
    """generate, stream_full, list_models and health, keeping every exception."""
    try:
        engine.generate(MSGS, model=model, max_tokens=5)
    except JarvisError as exc:
        caught.append(exc)

    async def stream():
        try:
            async for _ in engine.stream_full(MSGS, model=model):
                pass
        finally:
            await engine.aclose()

    try:
        asyncio.run(stream())
    except JarvisError as exc:
        caught.append(exc)
    try:
        engine.list_models()
    except JarvisError as exc:
        caught.append(exc)
    engine.health()


def exception_texts(exc: BaseException) -> List[str]:
    texts = []
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        texts += [str(exc), repr(exc), repr(exc.args), repr(vars(exc)), "".join(traceback.format_exception(exc))]
        exc = exc.__cause__ or exc.__context__
    return texts


SCENARIOS = {
    "success": lambda p: ok_exchanges(p),
    "auth_failure": lambda p: [echo_error(401, p)],
    "gemini_style_bad_key": lambda p: [echo_error(400, p)],
    "rate_limit": lambda p: [echo_error(429, p)],
    "server_error": lambda p: [echo_error(500, p)],
    "mid_stream_error": mid_stream_error,
    "connection_refused": None,
}


@pytest.mark.parametrize("provider", ["anthropic", "gemini", "openai"])
@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_planted_key_never_shows(cloud, caplog, provider, scenario):
    caplog.set_level(logging.DEBUG)
    for name in ("httpx", "httpcore", "jarvis_engine_cloud", "jarvis_core"):
        logging.getLogger(name).setLevel(logging.DEBUG)
    events: List[Any] = []
    unsubscribe = default_bus().subscribe(events.append)
    caught: List[BaseException] = []
    try:
        make = SCENARIOS[scenario]
        if make is None:
            engine = cloud.engine(provider, closed_port_url(), key=KEY)
            run_everything(engine, MODELS[provider], caught)
            reprs = [repr(engine), str(engine)]
        else:
            with ReplayServer(make(provider)) as server:
                engine = cloud.engine(provider, server.url, key=KEY)
                run_everything(engine, MODELS[provider], caught)
                reprs = [repr(engine), str(engine), repr(vars(engine))]
                reprs += [repr(c) + repr(vars(c)) for c in engine._clients.values()]
                assert server.requests, "the engine did talk to the server"
                sent_keys = {r.headers.get("x-api-key") or r.headers.get("x-goog-api-key") or r.headers.get("authorization")
                             for r in server.requests}
                assert sent_keys <= {KEY, f"Bearer {KEY}"}, "the real key was sent (so it was there to leak)"
    finally:
        unsubscribe()
    if scenario != "success":
        assert caught, "the failure paths raised"
    if scenario in ("rate_limit", "server_error"):
        assert events, "retries were announced"
    haystack = reprs + [t for exc in caught for t in exception_texts(exc)]
    haystack += [r.getMessage() + repr(r.args) + repr(vars(r)) for r in caplog.records] + [caplog.text]
    haystack += [repr(e) + repr(dict(e.data)) for e in events]
    assert caplog.records, "logging was captured"
    leaks = [text for text in haystack if KEY in text]
    assert not leaks, f"the key leaked in: {leaks[0][:300]}"
