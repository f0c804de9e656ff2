"""The optional verbs on Ollama's wire, against a replay server answering in Ollama's documented shapes:
``response_format`` sent as ``format`` (schema object or ``"json"``) and decoded, images sent as base64
``images`` for a model whose ``/api/show`` lists ``vision`` and refused (typed, nothing sent) for one that
does not, and embeddings from ``/api/embed`` in batches."""

from __future__ import annotations

import asyncio
import base64
import json

import pytest

from jarvis_core.content import ImagePart, TextPart
from jarvis_core.errors import ConflictingOptionsError, InvalidOptionValueError, VisionNotSupportedError
from jarvis_core.testing import Exchange, ReplayServer
from jarvis_core.types import Message
from jarvis_engine_ollama.engine import OllamaEngine

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 8
SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
          "required": ["name", "age"]}
FORMAT = {"type": "json_schema", "json_schema": {"name": "person", "schema": SCHEMA}}
ANSWER = '{"name": "Ada", "age": 36}'


def chat(content: str) -> dict:
    return {"model": "m", "message": {"role": "assistant", "content": content}, "done": True, "done_reason": "stop",
            "prompt_eval_count": 5, "eval_count": 7}


def test_response_format_becomes_format_and_is_decoded():
    lines = [json.dumps({"model": "m", "message": {"role": "assistant", "content": p}, "done": False})
             for p in (ANSWER[:9], ANSWER[9:])] + [json.dumps({**chat(""), "message": {"role": "assistant", "content": ""}})]
    exchanges = [Exchange("POST", "/api/chat", match={"stream": False}, json=chat(ANSWER)),
                 Exchange("POST", "/api/chat", match={"stream": True}, ndjson=lines)]
    with ReplayServer(exchanges) as server, OllamaEngine(host=server.url) as engine:
        done = engine.generate([{"role": "user", "content": "who?"}], model="m", response_format=FORMAT)
        assert done.parsed == {"name": "Ada", "age": 36}
        engine.generate([{"role": "user", "content": "who?"}], model="m", response_format={"type": "json_object"})

        async def stream():
            return [c async for c in engine.stream_full([{"role": "user", "content": "who?"}], model="m",
                                                        response_format=FORMAT)]

        chunks = asyncio.run(stream())
        sent = [r.json for r in server.requests]
    assert sent[0]["format"] == SCHEMA and sent[1]["format"] == "json" and sent[2]["format"] == SCHEMA
    assert "response_format" not in sent[0]
    assert chunks[-1].parsed == {"name": "Ada", "age": 36}


def test_format_and_response_format_together_conflict():
    with OllamaEngine(host="http://127.0.0.1:9") as engine, pytest.raises(ConflictingOptionsError):
        engine.generate([{"role": "user", "content": "q"}], model="m", format="json", response_format=FORMAT)


def test_images_go_out_as_base64_for_a_vision_model():
    exchanges = [Exchange("POST", "/api/show", json={"capabilities": ["completion", "vision"]}),
                 Exchange("POST", "/api/chat", json=chat("a cat"))]
    with ReplayServer(exchanges) as server, OllamaEngine(host=server.url) as engine:
        msg = Message.user([TextPart("What is this?"), ImagePart.from_bytes(PNG)])
        assert engine.generate([msg], model="llava").content == "a cat"
        assert asyncio.run(engine.agenerate([msg], model="llava")).content == "a cat"
        shows = [r for r in server.requests if r.path == "/api/show"]
        sent = [r.json for r in server.requests if r.path == "/api/chat"]
    assert len(shows) == 1  # asked once per model
    assert sent[0]["messages"][0] == {"role": "user", "content": "What is this?",
                                      "images": [base64.b64encode(PNG).decode()]}


def test_a_text_only_model_is_a_typed_error_and_nothing_is_sent():
    with ReplayServer([Exchange("POST", "/api/show", json={"capabilities": ["completion", "tools"]})]) as server, \
            OllamaEngine(host=server.url) as engine:
        msg = Message.user([TextPart("What is this?"), ImagePart.from_bytes(PNG)])
        with pytest.raises(VisionNotSupportedError, match="'qwen3' on engine 'ollama'") as err:
            engine.generate([msg], model="qwen3")
        assert err.value.model == "qwen3" and err.value.capability == "vision"
        with pytest.raises(VisionNotSupportedError):
            asyncio.run(engine.agenerate([msg], model="qwen3"))
        assert [r.path for r in server.requests] == ["/api/show"]


def test_a_remote_image_url_is_refused_not_dropped():
    with ReplayServer([Exchange("POST", "/api/show", json={"capabilities": ["vision"]})]) as server, \
            OllamaEngine(host=server.url) as engine:
        with pytest.raises(InvalidOptionValueError, match="not a remote URL"):
            engine.generate([Message.user(["x", ImagePart(url="https://x/cat.png")])], model="llava")


def test_embeddings_from_api_embed_in_batches():
    class Small(OllamaEngine):
        embed_batch_size = 2

    def reply(texts):
        return {"model": "nomic-embed-text", "embeddings": [[float(len(t)), 0.5] for t in texts],
                "prompt_eval_count": len(texts)}

    texts = ["a", "bb", "ccc"]
    exchanges = [Exchange("POST", "/api/embed", match={"input": texts[:2]}, json=reply(texts[:2])),
                 Exchange("POST", "/api/embed", match={"input": texts[2:]}, json=reply(texts[2:]))]
    with ReplayServer(exchanges) as server, Small(host=server.url) as engine:
        result = engine.embed(texts, model="nomic-embed-text", dimensions=2)
        again = asyncio.run(engine.aembed(texts, model="nomic-embed-text", dimensions=2))
        sent = [r.json for r in server.requests]
    assert result.vectors == [(1.0, 0.5), (2.0, 0.5), (3.0, 0.5)] and again.vectors == result.vectors
    assert [e.index for e in result.embeddings] == [0, 1, 2] and result.usage.prompt_tokens == 3
    assert sent[0] == {"model": "nomic-embed-text", "input": ["a", "bb"], "dimensions": 2}
