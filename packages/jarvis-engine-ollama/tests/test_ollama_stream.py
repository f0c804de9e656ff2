"""NDJSON framing and connection handling of the streamed paths (``stream`` and ``stream_full``)."""

from __future__ import annotations

import json
from typing import Any, AsyncIterator, List

import httpx
import pytest

from jarvis_core.testing import Exchange, ReplayServer
from jarvis_engine_ollama.engine import OllamaEngine

USER = [{"role": "user", "content": "q"}]


def lines(*texts: str, **final: Any) -> List[str]:
    out = [json.dumps({"model": "m", "message": {"role": "assistant", "content": t}, "done": False}) for t in texts]
    out.append(json.dumps({"model": "m", "message": {"role": "assistant", "content": ""}, "done": True,
                           "done_reason": "stop", "prompt_eval_count": 3, "eval_count": len(texts), **final}))
    return out


def engine_over(data: bytes, piece: int) -> OllamaEngine:
    async def pieces() -> AsyncIterator[bytes]:
        for i in range(0, len(data), piece):
            yield data[i : i + piece]

    return OllamaEngine(host="ollama.test", async_transport=httpx.MockTransport(
        lambda _: httpx.Response(200, headers={"content-type": "application/x-ndjson"}, content=pieces())))


@pytest.mark.parametrize("piece", [1, 3, 7, 64, 100_000])
async def test_lines_and_utf8_split_anywhere(piece):
    texts = ["Grüße", " aus ", "東京 🌍", " \\u003c"]
    data = ("\r\n".join(lines(*texts)) + "\n\n").encode()  # CRLF endings and a trailing blank line
    engine = engine_over(data, piece)
    try:
        streamed = [t async for t in engine.stream(USER, model="m")]
        chunks = [c async for c in engine.stream_full(USER, model="m")]
    finally:
        await engine.aclose()
    assert streamed == texts
    assert [c.content for c in chunks[:-1]] == texts and chunks[-1].finish_reason == "stop"


async def test_blank_lines_between_objects_are_skipped():
    data = ("\n\n".join(lines("a", "b")) + "\n   \n").encode()
    engine = engine_over(data, 5)
    try:
        assert [t async for t in engine.stream(USER, model="m")] == ["a", "b"]
    finally:
        await engine.aclose()


async def test_stream_and_stream_full_agree_for_a_model_with_parsers():
    # qwen3 has a reasoning parser, so both paths go through the core's stream processor.
    data = "\n".join(lines("<think>hm", "</think>", "Yes.")).encode() + b"\n"
    engine = engine_over(data, 9)
    try:
        text = [t async for t in engine.stream(USER, model="qwen3:8b")]
        chunks = [c async for c in engine.stream_full(USER, model="qwen3:8b")]
    finally:
        await engine.aclose()
    assert "".join(text) == "".join(c.content or "" for c in chunks) == "Yes."
    assert "".join(c.reasoning or "" for c in chunks) == "hm"


async def test_streams_reuse_one_connection_and_abandoned_streams_do_not_leak():
    with ReplayServer([Exchange("POST", "/api/chat", ndjson=lines("one", " two", " three"))]) as server:
        engine = OllamaEngine(host=server.url)
        try:
            for _ in range(3):
                assert "".join([t async for t in engine.stream(USER, model="m")]) == "one two three"
            agen = engine.stream_full(USER, model="m")
            async for _ in agen:
                break
            await agen.aclose()
            assert "".join([t async for t in engine.stream(USER, model="m")]) == "one two three"
        finally:
            await engine.aclose()
        assert len(server.requests) == 5
        # Three full streams on one connection; the abandoned one closes its connection; the last reconnects.
        assert server.connection_count <= 2


async def test_text_after_done_is_drained_not_delivered():
    extra = json.dumps({"model": "m", "message": {"role": "assistant", "content": "late"}, "done": False})
    with ReplayServer([Exchange("POST", "/api/chat", ndjson=[*lines("ok"), extra])]) as server:
        engine = OllamaEngine(host=server.url)
        try:
            assert [t async for t in engine.stream(USER, model="m")] == ["ok"]
            chunks = [c async for c in engine.stream_full(USER, model="m")]
        finally:
            await engine.aclose()
    assert [c.content for c in chunks] == ["ok", None] and chunks[-1].finish_reason == "stop"
