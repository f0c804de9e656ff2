"""``POST /v1/embeddings``, ``image_url`` parts and ``response_format`` through ``jarvis serve``, driven by the
official ``openai`` SDK against a real server over a scripted engine (:class:`jarvis_core.testing.FakeEngine`)."""

from __future__ import annotations

import base64
import struct

import openai
import pytest

from jarvis_core.content import ImagePart, TextPart
from jarvis_core.testing import FakeEngine

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 16
DATA_URL = "data:image/png;base64," + base64.b64encode(PNG).decode()


def vector(text: str) -> list:
    return [float(len(text)), 0.5, -1.25]


def client(server) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.url + "/v1", api_key="unused", max_retries=0)


def test_embeddings_floats_and_base64_with_the_openai_client(serve):
    engine = FakeEngine(embedder=vector)
    c = client(serve(engine))
    floats = c.embeddings.create(model="fake-model", input=["hello", "a longer text"], encoding_format="float")
    assert [d.index for d in floats.data] == [0, 1]
    assert floats.data[0].embedding == [5.0, 0.5, -1.25] and floats.data[1].embedding == [13.0, 0.5, -1.25]
    assert floats.model == "fake-model" and floats.usage.prompt_tokens == 4
    # base64 (the SDK's default when numpy is absent is floats; ask for base64 on the raw response)
    raw = c.embeddings.with_raw_response.create(model="fake-model", input="hello", encoding_format="base64")
    encoded = raw.http_response.json()["data"][0]["embedding"]
    assert isinstance(encoded, str) and struct.unpack("<3f", base64.b64decode(encoded)) == (5.0, 0.5, -1.25)
    assert engine.embed_calls[0][0] == ["hello", "a longer text"] and engine.embed_calls[0][1] == "fake-model"


def test_embeddings_on_an_engine_without_them_is_a_400_naming_it(serve):
    c = client(serve(FakeEngine(engine_id="noembed")))
    with pytest.raises(openai.BadRequestError) as err:
        c.embeddings.create(model="fake-model", input="hello", encoding_format="float")
    assert err.value.status_code == 400 and "noembed" in str(err.value) and "embeddings" in str(err.value)
    assert err.value.body["code"] == "unsupported_capability"


@pytest.mark.parametrize("body, param", [
    ({"input": [[1, 2, 3]]}, "input"),
    ({"input": []}, "input"),
    ({"input": "x", "encoding_format": "int8"}, "encoding_format"),
    ({"input": "x", "dimensions": 0}, "dimensions"),
    ({"input": "x", "bogus": 1}, "bogus"),
])
def test_bad_embeddings_requests_are_400s_naming_the_field(serve, body, param):
    import httpx

    server = serve(FakeEngine(embedder=vector))
    reply = httpx.post(server.url + "/v1/embeddings", json=body)
    assert reply.status_code == 400 and reply.json()["error"]["param"] == param


def test_image_url_parts_reach_the_engine_as_typed_parts(serve):
    engine = FakeEngine(["a cat"])
    c = client(serve(engine))
    answer = c.chat.completions.create(model="fake-model", messages=[{"role": "user", "content": [
        {"type": "text", "text": "What is this?"},
        {"type": "image_url", "image_url": {"url": DATA_URL, "detail": "low"}},
        {"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}},
    ]}])
    assert answer.choices[0].message.content == "a cat"
    sent = engine.calls[0].messages[0]
    assert sent.content == (TextPart("What is this?"), ImagePart(url=DATA_URL, detail="low"),
                            ImagePart(url="https://example.com/cat.png"))
    assert sent.images[0].inline() == ("image/png", PNG)


def test_an_audio_part_is_still_a_400(serve):
    c = client(serve(FakeEngine(["x"])))
    with pytest.raises(openai.BadRequestError) as err:
        c.chat.completions.create(model="fake-model", messages=[{"role": "user", "content": [
            {"type": "image_url", "image_url": {"url": DATA_URL}},
            {"type": "input_audio", "input_audio": {"data": "AAAA", "format": "wav"}}]}])
    assert "input_audio" in str(err.value)


def test_response_format_is_passed_to_the_engine(serve):
    fmt = {"type": "json_schema", "json_schema": {"name": "p", "schema": {"type": "object"}}}
    engine = FakeEngine(['{"a": 1}'], allowed_options={"response_format"})
    c = client(serve(engine))
    answer = c.chat.completions.create(model="fake-model", messages=[{"role": "user", "content": "hi"}],
                                       response_format=fmt)
    assert answer.choices[0].message.content == '{"a": 1}'
    assert engine.calls[0].options["response_format"] == fmt
