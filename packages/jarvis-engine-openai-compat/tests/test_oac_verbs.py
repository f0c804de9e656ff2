"""The optional verbs on the OpenAI-compatible wire, against a replay server: image parts as OpenAI
``image_url`` parts (a data URL for bytes), embeddings split into batches and joined in order, and an
unknown embeddings option refused before anything is sent."""

from __future__ import annotations

import base64

import pytest

from jarvis_core.content import ImagePart, TextPart
from jarvis_core.errors import InvalidOptionError
from jarvis_core.testing import Exchange, ReplayServer
from jarvis_core.types import Message
from jarvis_engine_openai_compat.engines import VLLMEngine

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 8
REPLY = {"id": "c", "model": "m", "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
         "choices": [{"index": 0, "message": {"role": "assistant", "content": "a cat"}, "finish_reason": "stop"}]}


def test_images_go_out_as_image_url_parts():
    with ReplayServer([Exchange("POST", "/v1/chat/completions", json=REPLY)]) as server, \
            VLLMEngine(host=server.url) as engine:
        msg = Message.user([TextPart("What is this?"), ImagePart.from_bytes(PNG), ImagePart(url="https://x/cat.png")])
        assert engine.generate([msg], model="m").content == "a cat"
        content = server.requests[0].json["messages"][0]["content"]
    assert content == [
        {"type": "text", "text": "What is this?"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64," + base64.b64encode(PNG).decode()}},
        {"type": "image_url", "image_url": {"url": "https://x/cat.png"}},
    ]


def _vectors(body):
    return {"object": "list", "model": "m", "usage": {"prompt_tokens": len(body["input"]), "total_tokens": 0},
            "data": [{"object": "embedding", "index": i, "embedding": [float(len(t)), 1.0]}
                     for i, t in enumerate(body["input"])]}


def test_long_input_lists_are_batched_and_joined_in_order():
    texts = [f"text {i}" * (i % 3 + 1) for i in range(5)]

    class Small(VLLMEngine):
        embed_batch_size = 2

    exchanges = [Exchange("POST", "/v1/embeddings", match={"input": texts[i:i + 2]},
                          json=_vectors({"input": texts[i:i + 2]})) for i in range(0, 5, 2)]
    with ReplayServer(exchanges) as server, Small(host=server.url) as engine:
        result = engine.embed(texts, model="m", dimensions=2)
        sent = [r.json for r in server.requests]
    assert [len(b["input"]) for b in sent] == [2, 2, 1] and all(b["dimensions"] == 2 for b in sent)
    assert [e.index for e in result.embeddings] == [0, 1, 2, 3, 4]
    assert result.vectors == [(float(len(t)), 1.0) for t in texts] and result.usage.prompt_tokens == 5


def test_unknown_embeddings_option_is_refused_before_sending():
    with ReplayServer([]) as server, VLLMEngine(host=server.url) as engine:
        with pytest.raises(InvalidOptionError, match="truncate"):
            engine.embed(["x"], model="m", truncate=True)
        assert server.requests == []


def test_llamacpp_asks_props_once_and_sends_images_to_a_vision_model():
    from jarvis_engine_openai_compat.engines import LlamaCppEngine

    exchanges = [Exchange("GET", "/props", json={"modalities": {"vision": True, "audio": False}}),
                 Exchange("POST", "/v1/chat/completions", json=REPLY)]
    msg = Message.user([TextPart("What is this?"), ImagePart.from_bytes(PNG)])
    with ReplayServer(exchanges) as server, LlamaCppEngine(host=server.url) as engine:
        assert engine.generate([msg], model="m").content == "a cat"
        assert engine.generate([msg], model="m").content == "a cat"
        assert [r.path for r in server.requests] == ["/props", "/v1/chat/completions", "/v1/chat/completions"]
