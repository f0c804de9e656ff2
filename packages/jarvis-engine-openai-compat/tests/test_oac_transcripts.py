"""Every recorded SSE stream through the real engines: over httpx.MockTransport and over the core's ReplayServer."""

from __future__ import annotations

import json

import httpx
import pytest

from jarvis_core.errors import EngineError, ServerError
from jarvis_core.testing import ReplayServer, exchanges_from_transcripts
from jarvis_engine_openai_compat.engines import LlamaCppEngine, OpenAICompatEngine, VLLMEngine

ENGINES = {"openai": OpenAICompatEngine, "vllm": VLLMEngine, "llama.cpp": LlamaCppEngine, "synthetic": OpenAICompatEngine}


def _call_args(transcript):
    body = transcript["request"]["body"]
    kwargs = {"model": body["model"], "max_tokens": body.get("max_tokens", 64)}
    if body.get("tools"):
        kwargs["tools"] = body["tools"]
        kwargs["tool_mode"] = "native"
    return body["messages"], kwargs


async def _collect(engine, transcript):
    messages, kwargs = _call_args(transcript)
    chunks, error = [], None
    try:
        async for chunk in engine.stream_full(messages, **kwargs):
            chunks.append(chunk)
    except EngineError as exc:
        error = exc
    return chunks, error


def _check(transcript, chunks, error, oac):
    exp = transcript["expected_aggregate"]
    if exp.get("error"):
        assert isinstance(error, ServerError) and exp["error"]["message"] in str(error)
        assert "".join(c.content or "" for c in chunks) == exp["content"]  # text before the error was delivered
        return
    assert error is None, error
    assert oac.aggregate(chunks) == oac.expected(transcript), transcript["id"]
    assert chunks[-1].finish_reason is not None and sum(c.finish_reason is not None for c in chunks) == 1


def _check_request(transcript, sent):
    assert sent["stream"] is True and sent["stream_options"] == {"include_usage": True}
    assert sent["model"] == transcript["request"]["body"]["model"]
    assert sent["messages"] == transcript["request"]["body"]["messages"]
    if transcript["request"]["body"].get("tools"):
        assert [t["function"]["name"] for t in sent["tools"]] == [
            t["function"]["name"] for t in transcript["request"]["body"]["tools"]]


def _ids(transcripts):
    return [t["id"] for t in transcripts]


async def test_transcripts_over_mock_transport(sse_transcripts, oac):
    for t in sse_transcripts:
        body = oac.transcript_bytes(t)
        sent = []

        async def pieces(data=body):
            for part in oac.split_every(data, 97):  # delivered in pieces that cut events anywhere
                yield part

        def handler(request: httpx.Request, sent=sent, pieces=pieces) -> httpx.Response:
            sent.append(json.loads(request.content))
            assert request.url.path == "/v1/chat/completions"
            return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=pieces())

        engine = ENGINES[t["server"]](host="http://mock/v1", async_transport=httpx.MockTransport(handler))
        chunks, error = await _collect(engine, t)
        await engine.aclose()
        _check(t, chunks, error, oac)
        _check_request(t, sent[0])


async def test_transcripts_over_replay_server(sse_transcripts, oac):
    for t in sse_transcripts:
        with ReplayServer(exchanges_from_transcripts([t])) as server:
            engine = ENGINES[t["server"]](host=server.url)
            chunks, error = await _collect(engine, t)
            await engine.aclose()
            _check(t, chunks, error, oac)
            _check_request(t, server.requests[0].json)


async def test_replayed_stream_reuses_one_connection(sse_transcripts):
    t = next(t for t in sse_transcripts if t["id"] == "openai_parallel_tool_calls")
    with ReplayServer(exchanges_from_transcripts([t])) as server:
        engine = OpenAICompatEngine(host=server.url)
        for _ in range(3):
            messages, kwargs = _call_args(t)
            [c async for c in engine.stream_full(messages, **kwargs)]
        await engine.aclose()
        assert server.connection_count == 1  # the body is read past [DONE], so the connection goes back to the pool


def test_transcript_ids_are_all_covered(sse_transcripts):
    assert {t["server"] for t in sse_transcripts} <= set(ENGINES)
    assert len(_ids(sse_transcripts)) == len(set(_ids(sse_transcripts)))


@pytest.mark.parametrize("cut", [1, 3])
async def test_stream_cut_off_mid_way_raises_stream_error(sse_transcripts, cut):
    from jarvis_core.errors import StreamError

    t = next(t for t in sse_transcripts if t["id"] == "openai_single_tool_call_split")
    with ReplayServer(exchanges_from_transcripts([t], break_after=cut)) as server:
        engine = OpenAICompatEngine(host=server.url)
        messages, kwargs = _call_args(t)
        with pytest.raises(StreamError):
            [c async for c in engine.stream_full(messages, **kwargs)]
        await engine.aclose()
