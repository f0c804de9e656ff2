"""The three verbs on the embedded default (a REAL llama.cpp server: xllamacpp hosting SmolLM2-135M-Instruct,
started by the ``embedded`` engine): structured output from a schema to a validated object, embeddings
through the engine, ``POST /v1/embeddings`` (the official ``openai`` client) and ``jarvis embed``."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from typing import Iterator

import attrs
import openai
import pytest

from jarvis_core import Jarvis

pytest.importorskip("xllamacpp", reason="the embedded engine needs the [embedded] extra (xllamacpp)")


@attrs.frozen
class Person:
    name: str
    age: int


@pytest.fixture(scope="module")
def embedded() -> Iterator[object]:
    from jarvis_engine_openai_compat.engines.embedded import EmbeddedEngine

    engine = EmbeddedEngine(ctx_per_slot=1024, threads=2, max_tokens=64, progress=False)
    yield engine
    engine.close()


def test_structured_output_end_to_end(embedded):
    with Jarvis(engine=embedded, model=embedded.alias) as j:
        person = j.ask("Ada Lovelace was 36 years old. Give her name and age as JSON.", schema=Person, temperature=0)
        answer = j.ask_full("Name a city as JSON with a 'city' field.", temperature=0,
                            response_format={"type": "json_schema", "json_schema": {"name": "c", "schema": {
                                "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}})
    assert isinstance(person, Person) and person.name and isinstance(person.age, int)
    assert isinstance(answer.parsed, dict) and isinstance(answer.parsed["city"], str)


def _cosine(a, b) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    return dot / (math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b)))


def test_embeddings_from_the_shipped_model(embedded):
    import asyncio

    result = embedded.embed(["hello", "hello", "the capital of France is Paris"])
    assert [e.index for e in result.embeddings] == [0, 1, 2] and result.dimensions == 576
    assert result.vectors[0] == result.vectors[1] and result.vectors[0] != result.vectors[2]
    assert _cosine(result.vectors[0], result.vectors[2]) < 0.999
    assert asyncio.run(embedded.aembed(["hello"])).vectors[0] == pytest.approx(result.vectors[0], abs=1e-5)


def test_v1_embeddings_floats_and_base64(embedded, serve):
    server = serve(embedded, engine_key="embedded", model=embedded.alias)
    client = openai.OpenAI(base_url=server.url + "/v1", api_key="unused", max_retries=0)
    floats = client.embeddings.create(model=embedded.alias, input=["hello", "world"], encoding_format="float")
    assert [d.index for d in floats.data] == [0, 1] and len(floats.data[0].embedding) == 576
    packed = client.embeddings.create(model=embedded.alias, input=["hello", "world"])  # the SDK asks for base64
    assert packed.data[0].embedding == pytest.approx(floats.data[0].embedding, abs=1e-6)


def test_jarvis_embed_on_a_fresh_home(tmp_path):
    env = {**os.environ, "JARVIS_HOME": str(tmp_path)}
    for var in ("JARVIS_ENGINE", "JARVIS_CONFIG"):
        env.pop(var, None)
    proc = subprocess.run([sys.executable, "-m", "jarvis_core.cli", "embed", "--engine", "embedded", "--json", "hello"],
                          capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert len(doc["data"]) == 1 and len(doc["data"][0]["embedding"]) == 576 and doc["usage"]["prompt_tokens"] >= 1


def test_an_image_for_the_text_only_model_is_a_typed_error_through_jarvis_serve(embedded, serve):
    from jarvis_core.content import ImagePart
    from jarvis_core.errors import VisionNotSupportedError
    from jarvis_core.types import Message

    png = b"\x89PNG\r\n\x1a\n" + b"\x00" * 8
    with pytest.raises(VisionNotSupportedError, match="no vision") as err:
        embedded.generate([Message.user(["what is this?", ImagePart.from_bytes(png)])])
    assert err.value.capability == "vision"
    server = serve(embedded, engine_key="embedded", model=embedded.alias)
    client = openai.OpenAI(base_url=server.url + "/v1", api_key="unused", max_retries=0)
    with pytest.raises(openai.BadRequestError) as bad:
        client.chat.completions.create(model=embedded.alias, messages=[{"role": "user", "content": [
            {"type": "text", "text": "what is this?"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgoAAAAAAAAAAA=="}}]}])
    assert bad.value.status_code == 400 and bad.value.body["code"] == "unsupported_capability"
    assert "no vision" in bad.value.body["message"]
