"""``Jarvis.ask(schema=…)``, ``Jarvis.embed`` and the engine contract's optional verbs, on a scripted engine
and through the conformance checks a third-party engine runs."""

from __future__ import annotations

import asyncio

import attrs
import pytest

from jarvis_core import Jarvis
from jarvis_core.engine.base import supports_embeddings, supports_structured_output
from jarvis_core.errors import (
    EmbeddingsNotSupportedError,
    StructuredOutputError,
    StructuredOutputNotSupportedError,
)
from jarvis_core.testing import EngineConformance, FakeEngine, LiveServer
from jarvis_core.testing import conformance_verbs as verbs


@attrs.frozen
class Person:
    name: str
    age: int


def structured_engine(*answers):
    return FakeEngine(list(answers), allowed_options={"response_format"})


def test_ask_with_an_attrs_class_returns_an_instance():
    engine = structured_engine('{"name": "Ada", "age": 36}')
    with Jarvis(engine=engine, model="m") as j:
        assert j.ask("who?", schema=Person) == Person("Ada", 36)
    sent = engine.calls[0].options["response_format"]
    assert sent["json_schema"]["schema"]["properties"]["age"] == {"type": "integer"}


def test_ask_with_a_dict_or_concise_schema_returns_a_dict():
    engine = structured_engine('{"name": "Ada", "age": 36}', '{"name": "Bo", "age": 2}', '[1]')
    with Jarvis(engine=engine, model="m") as j:
        assert j.ask("who?", schema={"type": "object", "properties": {"name": {"type": "string"}}}) == {
            "name": "Ada", "age": 36}
        assert j.ask("who?", schema="name, age int") == {"name": "Bo", "age": 2}
        with pytest.raises(StructuredOutputError, match="json_object"):
            j.ask_full("who?", response_format={"type": "json_object"})


def test_a_wrong_answer_is_a_typed_error_keeping_the_text():
    with Jarvis(engine=structured_engine('{"name": "Ada"}'), model="m") as j:
        with pytest.raises(StructuredOutputError, match="age") as err:
            j.ask("who?", schema=Person)
    assert err.value.text == '{"name": "Ada"}'


def test_an_engine_without_response_format_names_itself_and_sends_nothing():
    engine = FakeEngine(engine_id="plain")
    assert not supports_structured_output(engine)
    with Jarvis(engine=engine, model="m") as j, pytest.raises(StructuredOutputNotSupportedError, match="plain"):
        j.ask("who?", schema=Person)
    assert engine.calls == []


def test_embed_through_the_sdk_and_the_typed_error():
    engine = FakeEngine(embedder=lambda t: [float(len(t)), 1.0])
    with Jarvis(engine=engine, model="emb") as j:
        result = j.embed(["a", "bcd"])
        assert result.vectors == [(1.0, 1.0), (3.0, 1.0)] and result.model == "emb" and result.dimensions == 2
        assert j.embed("one").vectors == [(3.0, 1.0)]
    bare = FakeEngine(engine_id="bare")
    assert not supports_embeddings(bare)
    with Jarvis(engine=bare, model="m") as j, pytest.raises(EmbeddingsNotSupportedError, match="bare"):
        j.embed("x")
    with pytest.raises(EmbeddingsNotSupportedError):
        asyncio.run(bare.aembed(["x"], model="m"))


class _Suite(EngineConformance):
    def __init__(self, engine):
        self.engine = engine

    def make_engine(self, url, **options):
        return self.engine

    def serve(self, scenario):
        return LiveServer("http://127.0.0.1:9")


def test_conformance_embed_checks_pass_or_skip_cleanly():
    verbs.check_embed(_Suite(FakeEngine(embedder=lambda t: [0.5, float(len(t))])))
    verbs.check_embed_unsupported(_Suite(FakeEngine()))
    verbs.check_structured_unsupported(_Suite(FakeEngine()))
    with pytest.raises(pytest.skip.Exception, match="declares no embeddings"):
        verbs.check_embed(_Suite(FakeEngine()))
    with pytest.raises(pytest.skip.Exception, match="has embeddings"):
        verbs.check_embed_unsupported(_Suite(FakeEngine(embedder=lambda t: [1.0])))
    with pytest.raises(AssertionError, match="same, non-zero length"):
        verbs.check_embed(_Suite(FakeEngine(embedder=lambda t: [1.0] * len(t))))


def test_every_engine_decodes_its_answer_without_raising():
    fmt = {"type": "json_schema", "json_schema": {"name": "p", "schema": {"type": "object",
           "properties": {"age": {"type": "integer"}}, "required": ["age"]}}}
    engine = structured_engine('{"age": 3}', "not json", [' {"age"', ': 4}'], ["nope"])
    assert engine.generate([{"role": "user", "content": "q"}], model="m", response_format=fmt).parsed == {"age": 3}
    bad = engine.generate([{"role": "user", "content": "q"}], model="m", response_format=fmt)
    assert bad.parsed is None and "not JSON" in bad.metadata["parse_error"]  # agents recover from it themselves

    async def chunks():
        return [c async for c in engine.stream_full([{"role": "user", "content": "q"}], model="m",
                                                    response_format=fmt)]

    streamed = asyncio.run(chunks())
    assert streamed[-1].parsed == {"age": 4} and all(c.parsed is None for c in streamed[:-1])
    assert "".join(c.content or "" for c in streamed) == ' {"age": 4}'
    failed = asyncio.run(chunks())
    assert failed[-1].parsed is None and "parse_error" in failed[-1].metadata
