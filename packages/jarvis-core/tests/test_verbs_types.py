"""The value types of the optional verbs: message content parts (images), embeddings, structured output."""

from __future__ import annotations

import base64
from typing import List

import attrs
import pytest

from jarvis_core.content import ImagePart, TextPart
from jarvis_core.embeddings import (
    Embedding,
    EmbeddingResult,
    decode_base64_vector,
    encode_base64_vector,
    join_results,
    result_from_openai,
    result_to_openai,
)
from jarvis_core.engine.messages import coerce_message, message_to_dict
from jarvis_core.errors import MalformedResponseError, StructuredOutputError, UsageError
from jarvis_core.structured import concise_schema, decode_structured, response_format_for, with_parsed
from jarvis_core.types import Completion, Message, StreamChunk, Usage, from_dict, to_dict, to_json

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 8


@attrs.frozen
class Person:
    name: str
    age: int


# -- content parts ------------------------------------------------------------------------------------
def test_text_content_keeps_its_fast_path():
    m = Message.user("hi")
    assert m.content == "hi" and m.text == "hi" and m.images == ()
    assert message_to_dict(m) == {"role": "user", "content": "hi"}


def test_parts_become_openai_parts_with_a_data_url():
    m = Message.user(["What is this?", ImagePart.from_bytes(PNG)])
    assert m.content == (TextPart("What is this?"), ImagePart(data=PNG, media_type="image/png"))
    assert m.text == "What is this?"
    wire = message_to_dict(m)["content"]
    assert wire[0] == {"type": "text", "text": "What is this?"}
    assert wire[1] == {"type": "image_url", "image_url": {"url": "data:image/png;base64," + base64.b64encode(PNG).decode()}}
    back = coerce_message({"role": "user", "content": wire})
    assert back.images[0].inline() == ("image/png", PNG)  # an image is never flattened away


def test_parts_round_trip_through_dicts_and_json():
    m = Message.user([TextPart("a"), ImagePart.from_bytes(PNG), ImagePart(url="https://x/y.png", detail="low")])
    assert from_dict(Message, to_dict(m)) == m
    assert '"type": "image"' in to_json(m)


def test_image_from_path(tmp_path):
    (tmp_path / "p.png").write_bytes(PNG)
    assert ImagePart.from_path(tmp_path / "p.png") == ImagePart(data=PNG, media_type="image/png")
    (tmp_path / "t.txt").write_text("not an image")
    with pytest.raises(UsageError, match="not a PNG"):
        ImagePart.from_path(tmp_path / "t.txt")
    with pytest.raises(UsageError, match="cannot read"):
        ImagePart.from_path(tmp_path / "missing.png")


def test_image_part_needs_exactly_one_source_and_a_known_type():
    with pytest.raises(ValueError):
        ImagePart()
    with pytest.raises(ValueError, match="media_type"):
        ImagePart(data=b"xx", media_type="text/plain")
    assert "bytes" in repr(ImagePart.from_bytes(PNG))  # the bytes are not printed


# -- embeddings ---------------------------------------------------------------------------------------
def test_base64_vectors_round_trip_as_float32():
    assert decode_base64_vector(encode_base64_vector([1.0, -2.5, 0.25])) == (1.0, -2.5, 0.25)
    with pytest.raises(ValueError):
        decode_base64_vector("AAA")


def test_openai_embeddings_shape_both_ways():
    payload = {"object": "list", "model": "m", "usage": {"prompt_tokens": 3, "total_tokens": 3},
               "data": [{"index": 1, "embedding": encode_base64_vector([2.0])}, {"index": 0, "embedding": [1.0]}]}
    result = result_from_openai(payload)
    assert result.vectors == [(1.0,), (2.0,)] and result.model == "m" and result.usage.prompt_tokens == 3
    assert result_to_openai(result)["data"][1] == {"object": "embedding", "index": 1, "embedding": [2.0]}
    with pytest.raises(MalformedResponseError):
        result_from_openai({"data": [{"embedding": ["x"]}]})


def test_batches_are_joined_in_order():
    part = EmbeddingResult([Embedding([1.0], 0), Embedding([2.0], 1)], model="m", usage=Usage(2))
    joined = join_results([(0, part), (2, part)])
    assert [e.index for e in joined.embeddings] == [0, 1, 2, 3] and joined.usage.prompt_tokens == 4


# -- structured output ---------------------------------------------------------------------------------
def test_concise_schema_is_llms_form():
    schema = concise_schema("name, age int, bio: one sentence")
    assert schema["properties"] == {"name": {"type": "string"}, "age": {"type": "integer"},
                                    "bio": {"type": "string", "description": "one sentence"}}
    assert schema["required"] == ["name", "age", "bio"]
    with pytest.raises(UsageError):
        concise_schema("name, age integer")


def test_response_format_from_a_class_a_dict_and_a_list_type():
    fmt = response_format_for(Person)
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["name"] == "Person"
    assert fmt["json_schema"]["schema"]["required"] == ["name", "age"]
    assert response_format_for({"type": "object"})["json_schema"]["schema"] == {"type": "object"}
    assert response_format_for(List[Person])["json_schema"]["schema"]["type"] == "array"
    assert response_format_for({"type": "json_object"}) == {"type": "json_object"}
    with pytest.raises(UsageError, match="not a valid JSON schema"):
        response_format_for({"type": "object", "properties": {"a": {"type": "nope"}}})


def test_decode_validates_and_says_what_is_wrong():
    fmt = response_format_for(Person)
    assert decode_structured('```json\n{"name": "Ada", "age": 36}\n```', fmt) == {"name": "Ada", "age": 36}
    with pytest.raises(StructuredOutputError, match="not JSON") as err:
        decode_structured("Ada, 36", fmt, engine_id="e")
    assert err.value.text == "Ada, 36" and err.value.engine_id == "e"
    with pytest.raises(StructuredOutputError, match="field 'age' must be of type integer") as err:
        decode_structured('{"name": "Ada", "age": "36"}', fmt)
    assert err.value.problems


def test_with_parsed_sets_the_decoded_object():
    fmt = response_format_for(Person)
    done = with_parsed(Completion(content='{"name": "Ada", "age": 36}'), fmt)
    assert done.parsed == {"name": "Ada", "age": 36} and done.to_dict()["parsed"] == done.parsed
    assert with_parsed(Completion(content="plain"), None).parsed is None
    assert StreamChunk(finish_reason="stop", parsed={"a": 1}).parsed == {"a": 1}
    assert from_dict(StreamChunk, to_dict(StreamChunk(parsed=[1]))) == StreamChunk(parsed=[1])
