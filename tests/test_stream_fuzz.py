"""Fuzzing each engine's stream path: random byte streams, split at random points, with oversized lines.

The bytes go through the engines' real code (``HTTPEngine.astream_batches``, the byte decoders, each
engine's stream loop) via an httpx test transport that hands them out in the generated pieces. Whatever
comes in, only two outcomes are allowed: a normal end, or a typed jarvis error. Anything else (a
``JSONDecodeError``, ``KeyError``, ``TypeError``, ``UnicodeError``...) is a bug.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any, AsyncIterator, Callable, Dict, List

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jarvis_core.errors import JarvisError
from jarvis_core.types import Message

MAX_LINE = 4096
MSGS = [Message.user("hi")]


class _Pieces(httpx.AsyncByteStream):
    def __init__(self, pieces: List[bytes]) -> None:
        self.pieces = pieces

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for piece in self.pieces:
            yield piece


def _transport(pieces: List[bytes], content_type: str) -> httpx.MockTransport:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": content_type}, stream=_Pieces(pieces))

    return httpx.MockTransport(handler)


def _ollama(t: httpx.MockTransport) -> Any:
    from jarvis_engine_ollama.engine import OllamaEngine

    return OllamaEngine(host="http://fuzz:1", async_transport=t, max_line_bytes=MAX_LINE)


def _llamacpp(t: httpx.MockTransport) -> Any:
    from jarvis_engine_openai_compat.engines import LlamaCppEngine

    return LlamaCppEngine(host="http://fuzz:1", async_transport=t, max_line_bytes=MAX_LINE)


def _cloud(provider: str) -> Callable[[httpx.MockTransport], Any]:
    def make(t: httpx.MockTransport) -> Any:
        from jarvis_engine_cloud.engine import CloudEngine

        return CloudEngine(openai_api_key="sk-fuzz-0000000000", anthropic_api_key="sk-fuzz-1111111111",
                           gemini_api_key="fuzz-2222222222", max_retries=0, environ={}, async_transport=t,
                           max_line_bytes=MAX_LINE)

    return make


#: engine -> (factory, model, content type, well-formed lines of its wire format)
ENGINES: Dict[str, Any] = {
    "ollama": (_ollama, "m:latest", "application/x-ndjson", [
        json.dumps({"message": {"content": "hé"}, "done": False}),
        json.dumps({"message": {"content": "", "tool_calls": [{"function": {"name": "f", "arguments": {}}}]}}),
        json.dumps({"message": {"content": "x"}, "done": True, "done_reason": "stop", "eval_count": 2}),
        json.dumps({"error": "boom"}),
    ]),
    "llamacpp": (_llamacpp, "m", "text/event-stream", [
        "data: " + json.dumps({"choices": [{"index": 0, "delta": {"content": "hé"}}]}),
        "data: " + json.dumps({"choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": 0, "id": "c", "function": {"name": "f", "arguments": "{\"a\""}}]}}]}),
        "data: " + json.dumps({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
        "data: [DONE]", ": keep-alive", "data: " + json.dumps({"error": {"message": "boom"}}),
    ]),
    "cloud-openai": (_cloud("openai"), "gpt-x", "text/event-stream", [
        "data: " + json.dumps({"choices": [{"index": 0, "delta": {"content": "hé"}}]}),
        "data: " + json.dumps({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
        "data: [DONE]",
    ]),
    "cloud-anthropic": (_cloud("anthropic"), "claude-x", "text/event-stream", [
        "event: message_start\ndata: " + json.dumps({"type": "message_start", "message": {"model": "c", "usage": {}}}),
        "event: content_block_start\ndata: " + json.dumps(
            {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        "event: content_block_delta\ndata: " + json.dumps(
            {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "hé"}}),
        "event: message_stop\ndata: " + json.dumps({"type": "message_stop"}),
        "event: error\ndata: " + json.dumps({"type": "error", "error": {"type": "api_error", "message": "x"}}),
    ]),
    "cloud-gemini": (_cloud("google"), "gemini-x", "text/event-stream", [
        "data: " + json.dumps({"candidates": [{"content": {"parts": [{"text": "hé"}]}}]}),
        "data: " + json.dumps({"candidates": [{"content": {"parts": [{"text": "."}]}, "finishReason": "STOP"}]}),
    ]),
}


@st.composite
def byte_streams(draw: Any, lines: List[str]) -> List[bytes]:
    """Good lines, junk bytes, truncated lines and oversized lines, joined and cut at random points."""
    part = st.one_of(
        st.sampled_from(lines).map(lambda s: s.encode() + b"\n\n"),
        st.sampled_from(lines).flatmap(lambda s: st.integers(0, len(s)).map(lambda n: s.encode()[:n])),
        st.binary(max_size=64),
        st.sampled_from([b"\n", b"\r\n", b"\r", b"data:", b"data: ", b"event: error\n", b"{", b"\xff\xfe", b"\xc3"]),
        st.integers(MAX_LINE - 8, MAX_LINE * 3).map(lambda n: b"data: " + b"a" * n),
    )
    body = b"".join(draw(st.lists(part, max_size=24)))
    cuts = sorted(set(draw(st.lists(st.integers(0, max(len(body), 1)), max_size=12))))
    pieces, start = [], 0
    for cut in [*cuts, len(body)]:
        pieces.append(body[start:cut])
        start = cut
    return [p for p in pieces if p]


def _run(name: str, pieces: List[bytes], full: bool) -> None:
    factory, model, content_type, _ = ENGINES[name]
    engine = factory(_transport(pieces, content_type))

    async def consume() -> None:
        try:
            source = engine.stream_full(MSGS, model=model, max_tokens=64) if full else \
                engine.stream(MSGS, model=model, max_tokens=64)
            async for _ in source:
                pass
        finally:
            await engine.aclose()

    try:
        asyncio.run(consume())
    except JarvisError:
        pass  # a typed error is a fine answer to garbage


@pytest.mark.parametrize("full", [False, True], ids=["text", "full"])
@pytest.mark.parametrize("name", sorted(ENGINES))
def test_random_byte_streams_give_only_typed_errors_or_results(name, full):
    @settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow],
              derandomize=True, database=None)
    @given(byte_streams(ENGINES[name][3]))
    def check(pieces: List[bytes]) -> None:
        _run(name, pieces, full)

    check()
