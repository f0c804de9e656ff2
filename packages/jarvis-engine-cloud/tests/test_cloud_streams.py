"""Streaming over loopback HTTP: every event type, mid-stream errors, broken streams, true asynchrony."""

from __future__ import annotations

import asyncio
import json

import pytest

from jarvis_core.errors import ContextLengthError, EngineError, RateLimitError, ServerError, StreamError
from jarvis_core.testing import Exchange, ReplayServer
from jarvis_core.types import Message

MSGS = [Message.user("hi")]
ANTHROPIC = "/v1/messages"
GEMINI = "/v1beta/models/gemini-x:streamGenerateContent?alt=sse"
OPENAI = "/v1/chat/completions"


def ev(name, data):
    return f"event: {name}\ndata: {json.dumps(data)}"


def start(model="claude-x"):
    return ev("message_start", {"type": "message_start", "message": {
        "id": "msg_1", "model": model, "usage": {"input_tokens": 10, "cache_read_input_tokens": 5, "output_tokens": 1}}})


def block(index, content_block):
    return ev("content_block_start", {"type": "content_block_start", "index": index, "content_block": content_block})


def delta(index, d):
    return ev("content_block_delta", {"type": "content_block_delta", "index": index, "delta": d})


def stop(index):
    return ev("content_block_stop", {"type": "content_block_stop", "index": index})


def end(reason, output_tokens):
    return [ev("message_delta", {"type": "message_delta", "delta": {"stop_reason": reason}, "usage": {"output_tokens": output_tokens}}),
            ev("message_stop", {"type": "message_stop"})]


def gem(parts, finish=None, usage=None):
    cand = {"content": {"role": "model", "parts": parts}}
    if finish:
        cand["finishReason"] = finish
    payload = {"candidates": [cand]}
    if usage:
        payload["usageMetadata"] = usage
    return payload


def collect(engine, model, **kw):
    async def run():
        try:
            return [c async for c in engine.stream_full(MSGS, model=model, **kw)]
        finally:
            await engine.aclose()

    return asyncio.run(run())


def test_anthropic_every_event_type(cloud):
    events = [
        start(), ev("ping", {"type": "ping"}),
        block(0, {"type": "thinking", "thinking": "", "signature": ""}),
        delta(0, {"type": "thinking_delta", "thinking": "Let me think."}),
        delta(0, {"type": "signature_delta", "signature": "SIG=="}), stop(0),
        block(1, {"type": "redacted_thinking", "data": "OPAQUE"}), stop(1),
        block(2, {"type": "text", "text": ""}), delta(2, {"type": "text_delta", "text": "Checking."}), stop(2),
        ev("ping", {"type": "ping"}),
        block(3, {"type": "tool_use", "id": "toolu_now", "name": "now", "input": {}}),
        delta(3, {"type": "input_json_delta", "partial_json": ""}), stop(3),
        block(4, {"type": "tool_use", "id": "toolu_w", "name": "get_weather", "input": {}}),
        delta(4, {"type": "input_json_delta", "partial_json": ""}),
        delta(4, {"type": "input_json_delta", "partial_json": '{"loc'}),
        delta(4, {"type": "input_json_delta", "partial_json": 'ation": "Oslo"}'}), stop(4),
        ev("some_future_event", {"type": "some_future_event"}),
        *end("tool_use", 40),
    ]
    with ReplayServer([Exchange("POST", ANTHROPIC, sse=events)]) as server:
        chunks = collect(cloud.engine("anthropic", server.url), "claude-x")
    assert [c.reasoning for c in chunks if c.reasoning] == ["Let me think."], "signatures are not reasoning"
    assert "".join(c.content or "" for c in chunks) == "Checking."
    last = chunks[-1]
    assert [(c.id, c.name, json.loads(c.arguments)) for c in last.tool_calls] == [
        ("toolu_now", "now", {}), ("toolu_w", "get_weather", {"location": "Oslo"})]
    assert last.finish_reason == "tool_calls"
    assert (last.usage.prompt_tokens, last.usage.completion_tokens) == (15, 40)
    assert last.metadata["thinking_blocks"] == [
        {"type": "thinking", "thinking": "Let me think.", "signature": "SIG=="},
        {"type": "redacted_thinking", "data": "OPAQUE"},
    ]


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        ({"type": "overloaded_error", "message": "Overloaded"}, ServerError),
        ({"type": "rate_limit_error", "message": "Rate limited"}, RateLimitError),
        ({"type": "api_error", "message": "Internal server error"}, ServerError),
        ({"type": "invalid_request_error", "message": "prompt is too long: 210000 tokens"}, ContextLengthError),
        ({"type": "brand_new_error", "message": "Something new"}, StreamError),
    ],
)
def test_anthropic_error_event_mid_stream(cloud, error, expected):
    events = [start(), block(0, {"type": "text", "text": ""}), delta(0, {"type": "text_delta", "text": "Hel"}),
              ev("error", {"type": "error", "error": error})]
    with ReplayServer([Exchange("POST", ANTHROPIC, sse=events)]) as server:
        with pytest.raises(expected) as info:
            collect(cloud.engine("anthropic", server.url, max_retries=0), "claude-x")
    assert error["message"] in str(info.value)


def test_anthropic_stream_without_message_stop_is_broken(cloud):
    events = [start(), block(0, {"type": "text", "text": ""}), delta(0, {"type": "text_delta", "text": "Hel"})]
    with ReplayServer([Exchange("POST", ANTHROPIC, sse=events)]) as server:
        with pytest.raises(StreamError, match="message_stop"):
            collect(cloud.engine("anthropic", server.url), "claude-x")


@pytest.mark.parametrize("provider", ["anthropic", "gemini", "openai"])
def test_connection_cut_mid_stream_raises_stream_error(cloud, provider):
    streams = {
        "anthropic": (ANTHROPIC, "claude-x", [start(), block(0, {"type": "text", "text": ""}),
                                              delta(0, {"type": "text_delta", "text": "a"}), *end("end_turn", 2)]),
        "gemini": (GEMINI, "gemini-x", ["data: " + json.dumps(gem([{"text": "a"}])),
                                        "data: " + json.dumps(gem([{"text": "b"}], "STOP"))]),
        "openai": (OPENAI, "gpt-x", ['data: {"choices":[{"index":0,"delta":{"content":"a"}}]}',
                                     'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}', "data: [DONE]"]),
    }
    path, model, events = streams[provider]
    with ReplayServer([Exchange("POST", path, sse=events, break_after=1)]) as server:
        with pytest.raises(StreamError):
            collect(cloud.engine(provider, server.url), model)


def test_gemini_stream_crlf_thoughts_and_last_usage(cloud):
    chunks_raw = [
        "data: " + json.dumps(gem([{"text": "Considering", "thought": True}],
                                  usage={"promptTokenCount": 4, "candidatesTokenCount": 0, "thoughtsTokenCount": 20,
                                         "totalTokenCount": 24})) + "\r\n\r\n",
        ": keep-alive comment\r\n\r\n",
        "data:" + json.dumps(gem([{"text": "", "thoughtSignature": "U0lH"}, {"text": "Yes"}])) + "\r\n\r\n",
        "data: " + json.dumps(gem([{"text": "."}], "STOP", {"promptTokenCount": 4, "candidatesTokenCount": 2,
                                                           "thoughtsTokenCount": 20, "totalTokenCount": 26})) + "\r\n\r\n",
    ]
    with ReplayServer([Exchange("POST", GEMINI, raw=chunks_raw, headers={"Content-Type": "text/event-stream"})]) as server:
        chunks = collect(cloud.engine("gemini", server.url), "gemini-x")
    assert [c.reasoning for c in chunks if c.reasoning] == ["Considering"]
    assert [c.content for c in chunks if c.content] == ["Yes", "."]
    assert chunks[-1].finish_reason == "stop"
    assert (chunks[-1].usage.prompt_tokens, chunks[-1].usage.completion_tokens, chunks[-1].usage.total_tokens) == (4, 22, 26)


def test_gemini_error_chunk_mid_stream(cloud):
    events = ["data: " + json.dumps(gem([{"text": "a"}])),
              'data: {"error": {"code": 500, "message": "Internal error encountered.", "status": "INTERNAL"}}']
    with ReplayServer([Exchange("POST", GEMINI, sse=events)]) as server:
        with pytest.raises(ServerError, match="Internal error"):
            collect(cloud.engine("gemini", server.url), "gemini-x")


def test_gemini_stream_without_finish_reason_is_broken(cloud):
    with ReplayServer([Exchange("POST", GEMINI, sse=["data: " + json.dumps(gem([{"text": "a"}]))])]) as server:
        with pytest.raises(StreamError, match="finishReason"):
            collect(cloud.engine("gemini", server.url), "gemini-x")


def test_gemini_parallel_streamed_calls_get_distinct_ids(cloud):
    call = {"functionCall": {"name": "get_weather", "args": {"location": "X"}}}
    events = ["data: " + json.dumps(gem([call])), "data: " + json.dumps(gem([call], "STOP"))]
    with ReplayServer([Exchange("POST", GEMINI, sse=events)]) as server:
        chunks = collect(cloud.engine("gemini", server.url), "gemini-x")
    calls = chunks[-1].tool_calls
    assert len(calls) == 2 and calls[0].id != calls[1].id and chunks[-1].finish_reason == "tool_calls"


def test_openai_error_payload_mid_stream(cloud):
    events = ['data: {"choices":[{"index":0,"delta":{"content":"a"}}]}',
              'data: {"error": {"message": "The server had an error", "type": "server_error", "code": 500}}']
    with ReplayServer([Exchange("POST", OPENAI, sse=events)]) as server:
        with pytest.raises(EngineError, match="server had an error"):
            collect(cloud.engine("openai", server.url), "gpt-x")


def test_openai_stream_asks_for_usage(cloud):
    events = ['data: {"choices":[{"index":0,"delta":{"content":"a"},"finish_reason":"stop"}]}', "data: [DONE]"]
    with ReplayServer([Exchange("POST", OPENAI, sse=events)]) as server:
        collect(cloud.engine("openai", server.url), "gpt-x")
        sent = server.requests[0].json
    assert sent["stream"] is True and sent["stream_options"] == {"include_usage": True}


def test_streaming_does_not_block_the_event_loop(cloud):
    """While the engine waits for the next event, other coroutines run (no sync iteration inside async)."""
    events = [start(), block(0, {"type": "text", "text": ""})]
    events += [delta(0, {"type": "text_delta", "text": w}) for w in ("one ", "two ", "three")]
    events += end("end_turn", 3)
    order = []
    with ReplayServer([Exchange("POST", ANTHROPIC, sse=events, delay=0.05)]) as server:
        engine = cloud.engine("anthropic", server.url)

        async def ticker(done):
            while not done.is_set():
                order.append("tick")
                await asyncio.sleep(0.005)

        async def main():
            done = asyncio.Event()
            task = asyncio.create_task(ticker(done))
            try:
                async for chunk in engine.stream_full(MSGS, model="claude-x"):
                    if chunk.content:
                        order.append("chunk")
            finally:
                done.set()
                await task
                await engine.aclose()

        asyncio.run(main())
    first, last = order.index("chunk"), len(order) - 1 - order[::-1].index("chunk")
    assert "tick" in order[first:last], "the loop kept running between chunks"
