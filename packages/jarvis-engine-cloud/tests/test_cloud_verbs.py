"""The optional verbs on the cloud providers' wires, against replay servers answering in each provider's
documented shapes: image parts as Anthropic image sources, Gemini ``inline_data`` / ``file_data`` and OpenAI
``image_url`` parts; embeddings from OpenAI's ``/embeddings`` and Gemini's ``batchEmbedContents``; Anthropic's
structured output through its forced tool, and its missing embeddings as a typed error naming it."""

from __future__ import annotations

import asyncio
import base64
import json

import pytest

from jarvis_core.content import ImagePart, TextPart
from jarvis_core.errors import EmbeddingsNotSupportedError
from jarvis_core.testing import Exchange, ReplayServer
from jarvis_core.types import Message
from jarvis_engine_cloud.engine import CloudEngine

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 8
B64 = base64.b64encode(PNG).decode()
MSG = Message.user([TextPart("What is this?"), ImagePart.from_bytes(PNG), ImagePart(url="https://x/cat.png")])
KEYS = {"openai_api_key": "sk-o", "anthropic_api_key": "sk-a", "gemini_api_key": "g-k"}


def engine(url: str) -> CloudEngine:
    return CloudEngine(openai_base_url=url + "/v1", anthropic_base_url=url, gemini_base_url=url, max_retries=0,
                       environ={}, **KEYS)


def test_anthropic_image_sources():
    reply = {"id": "m", "type": "message", "role": "assistant", "model": "claude-x", "stop_reason": "end_turn",
             "content": [{"type": "text", "text": "a cat"}], "usage": {"input_tokens": 3, "output_tokens": 2}}
    with ReplayServer([Exchange("POST", "/v1/messages", json=reply)]) as server, engine(server.url) as e:
        assert e.generate([MSG], model="claude-x").content == "a cat"
        content = server.requests[0].json["messages"][0]["content"]
    assert content == [{"type": "text", "text": "What is this?"},
                       {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": B64}},
                       {"type": "image", "source": {"type": "url", "url": "https://x/cat.png"}}]


def test_gemini_inline_and_file_data():
    reply = {"candidates": [{"content": {"role": "model", "parts": [{"text": "a cat"}]}, "finishReason": "STOP"}],
             "usageMetadata": {"promptTokenCount": 3, "candidatesTokenCount": 2, "totalTokenCount": 5}}
    with ReplayServer([Exchange("POST", "/v1beta/models/gemini-x:generateContent", json=reply)]) as server, \
            engine(server.url) as e:
        assert e.generate([MSG], model="gemini-x").content == "a cat"
        parts = server.requests[0].json["contents"][0]["parts"]
    assert parts == [{"text": "What is this?"}, {"inline_data": {"mime_type": "image/png", "data": B64}},
                     {"file_data": {"mime_type": "image/png", "file_uri": "https://x/cat.png"}}]


def test_openai_image_url_parts_and_embeddings():
    chat = {"id": "c", "model": "gpt-x", "choices": [{"index": 0, "finish_reason": "stop",
            "message": {"role": "assistant", "content": "a cat"}}], "usage": {"prompt_tokens": 3, "completion_tokens": 2}}
    emb = {"object": "list", "model": "text-embedding-3-small", "usage": {"prompt_tokens": 2, "total_tokens": 2},
           "data": [{"object": "embedding", "index": 0, "embedding": [0.5, -0.25]}]}
    exchanges = [Exchange("POST", "/v1/chat/completions", json=chat), Exchange("POST", "/v1/embeddings", json=emb)]
    with ReplayServer(exchanges) as server, engine(server.url) as e:
        assert e.generate([MSG], model="gpt-x").content == "a cat"
        result = e.embed("hello", model="text-embedding-3-small", dimensions=2)
        sent = [r.json for r in server.requests]
    assert sent[0]["messages"][0]["content"][1] == {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{B64}"}}
    assert sent[1] == {"model": "text-embedding-3-small", "encoding_format": "float", "dimensions": 2, "input": ["hello"]}
    assert result.vectors == [(0.5, -0.25)] and result.usage.prompt_tokens == 2


def test_anthropic_has_no_embeddings():
    with ReplayServer([]) as server, engine(server.url) as e:
        with pytest.raises(EmbeddingsNotSupportedError, match="anthropic"):
            e.embed(["x"], model="claude-x")
        assert server.requests == []


PERSON = {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
          "required": ["name", "age"]}
FMT = {"type": "json_schema", "json_schema": {"name": "person", "schema": PERSON}}


def test_anthropic_structured_output_through_the_forced_tool():
    reply = {"id": "m", "type": "message", "role": "assistant", "model": "claude-x", "stop_reason": "tool_use",
             "content": [{"type": "tool_use", "id": "toolu_1", "name": "person", "input": {"name": "Ada", "age": 36}}],
             "usage": {"input_tokens": 9, "output_tokens": 5}}

    def sse(event, data):
        return f"event: {event}\ndata: {json.dumps(data)}\n"

    stream = [sse("message_start", {"type": "message_start", "message": {**reply, "content": [], "stop_reason": None}}),
              sse("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {
                  "type": "tool_use", "id": "toolu_1", "name": "person", "input": {}}}),
              sse("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {
                  "type": "input_json_delta", "partial_json": '{"name": "Ada", '}}),
              sse("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {
                  "type": "input_json_delta", "partial_json": '"age": 36}'}}),
              sse("content_block_stop", {"type": "content_block_stop", "index": 0}),
              sse("message_delta", {"type": "message_delta", "delta": {"stop_reason": "tool_use"},
                                    "usage": {"output_tokens": 5}}),
              sse("message_stop", {"type": "message_stop"})]
    exchanges = [Exchange("POST", "/v1/messages", match=lambda b: not b.get("stream"), json=reply),
                 Exchange("POST", "/v1/messages", match={"stream": True}, sse=stream)]
    with ReplayServer(exchanges) as server, engine(server.url) as e:
        done = e.generate([Message.user("Ada was 36.")], model="claude-x", response_format=FMT)

        async def chunks():
            return [c async for c in e.stream_full([Message.user("Ada was 36.")], model="claude-x",
                                                   response_format=FMT)]

        streamed = asyncio.run(chunks())
        sent = server.requests[0].json
    assert done.parsed == {"name": "Ada", "age": 36} and done.tool_calls == () and done.finish_reason == "stop"
    assert sent["tools"] == [{"name": "person", "description": "Give your answer in this structure.",
                              "input_schema": PERSON}]
    assert sent["tool_choice"] == {"type": "tool", "name": "person"}
    assert streamed[-1].parsed == {"name": "Ada", "age": 36} and not any(c.tool_calls for c in streamed)



def test_gemini_embeddings_from_batch_embed_contents():
    reply = {"embeddings": [{"values": [0.1, 0.2]}, {"values": [0.3, 0.4]}]}
    path = "/v1beta/models/gemini-embedding-001:batchEmbedContents"
    with ReplayServer([Exchange("POST", path, json=reply)]) as server, engine(server.url) as e:
        result = e.embed(["a", "b"], model="gemini-embedding-001", dimensions=2)
        body = server.requests[0].json
    assert result.vectors == [(0.1, 0.2), (0.3, 0.4)] and result.model == "gemini-embedding-001"
    assert body == {"requests": [
        {"model": "models/gemini-embedding-001", "content": {"parts": [{"text": "a"}]}, "outputDimensionality": 2},
        {"model": "models/gemini-embedding-001", "content": {"parts": [{"text": "b"}]}, "outputDimensionality": 2}]}


def test_openai_and_gemini_structured_output_is_decoded():
    chat = {"id": "c", "model": "gpt-x", "choices": [{"index": 0, "finish_reason": "stop", "message": {
        "role": "assistant", "content": '{"name": "Ada", "age": 36}'}}], "usage": {"prompt_tokens": 3, "completion_tokens": 2}}
    gem = {"candidates": [{"content": {"role": "model", "parts": [{"text": '{"name": "Ada", "age": 36}'}]},
                           "finishReason": "STOP"}],
           "usageMetadata": {"promptTokenCount": 3, "candidatesTokenCount": 2, "totalTokenCount": 5}}
    exchanges = [Exchange("POST", "/v1/chat/completions", json=chat),
                 Exchange("POST", "/v1beta/models/gemini-x:generateContent", json=gem)]
    with ReplayServer(exchanges) as server, engine(server.url) as e:
        assert e.generate([Message.user("q")], model="gpt-x", response_format=FMT).parsed == {"name": "Ada", "age": 36}
        assert e.generate([Message.user("q")], model="gemini-x", response_format=FMT).parsed == {"name": "Ada", "age": 36}
        sent = [r.json for r in server.requests]
    assert sent[0]["response_format"] == FMT
    assert sent[1]["generationConfig"]["responseMimeType"] == "application/json"
    assert sent[1]["generationConfig"]["responseJsonSchema"] == PERSON
