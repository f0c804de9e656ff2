"""The conformance checks of the optional verbs: embeddings and structured output (docs/contract.md §4).

:class:`~jarvis_core.testing.conformance.EngineConformance` runs them as its ``test_embed_*`` and
``test_structured_*`` checks. An engine that declares it lacks a capability (it does not implement
``embed``; ``response_format`` is not in its ``allowed_options``) is checked for the typed error instead and
the positive check is skipped. Scenarios a plugin answers for them:

``"embed"``       the embeddings of :data:`EMBED_INPUTS` (one request, both inputs), for ``embed`` and
                  ``aembed``.
``"structured"``  an answer to :data:`STRUCTURED_PROMPT` with ``response_format`` :data:`PERSON_FORMAT`: a JSON
                  object valid against :data:`PERSON_SCHEMA`, both non-streamed and streamed.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterator, Tuple

from jarvis_core.engine.base import InferenceEngine, supports_embeddings, supports_structured_output
from jarvis_core.errors import EmbeddingsNotSupportedError, StructuredOutputNotSupportedError
from jarvis_core.types import Message

if TYPE_CHECKING:
    from jarvis_core.testing.conformance import EngineConformance

__all__ = ["EMBED_INPUTS", "PERSON_FORMAT", "PERSON_SCHEMA", "STRUCTURED_PROMPT"]

#: The inputs of the "embed" scenario.
EMBED_INPUTS: Tuple[str, ...] = ("hello", "the capital of France is Paris")
#: The schema of the "structured" scenario.
PERSON_SCHEMA: Dict[str, Any] = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
    "required": ["name", "age"],
    "additionalProperties": False,
}
#: The ``response_format`` of the "structured" scenario.
PERSON_FORMAT: Dict[str, Any] = {"type": "json_schema", "json_schema": {"name": "person", "schema": PERSON_SCHEMA}}
#: The conversation of the "structured" scenario.
STRUCTURED_PROMPT: Tuple[Message, ...] = (
    Message.user("Ada Lovelace was 36. Answer with a JSON object with her name and age."),
)


def _skip(reason: str) -> None:
    from jarvis_core.testing.conformance import _skip as skip

    skip(reason)


@contextlib.contextmanager
def _serving(suite: EngineConformance, scenario: str) -> Iterator[Any]:
    # A plugin written before these scenarios existed looks them up in its own table: a missing entry is a
    # skip, not a failure (the scenarios are optional).
    with contextlib.ExitStack() as stack:
        try:
            server = stack.enter_context(suite._serving(scenario))
        except LookupError:
            _skip(f"the plugin records no {scenario!r} scenario")
        yield server


def _declares(suite: EngineConformance, capable: Callable[[InferenceEngine], bool]) -> Tuple[bool, str]:
    from jarvis_core.testing.conformance import closed_port_url

    with suite.make_engine(closed_port_url()) as engine:
        return capable(engine), engine.engine_id


def check_embed(suite: EngineConformance) -> None:
    capable, engine_id = _declares(suite, supports_embeddings)
    if not capable:
        _skip(f"{engine_id} declares no embeddings")
    with _serving(suite, "embed") as server, suite.make_engine(server.url) as engine:
        result = engine.embed(list(EMBED_INPUTS), model=suite.model)
        assert [e.index for e in result.embeddings] == list(range(len(EMBED_INPUTS))), "one vector per input, in order"
        sizes = {len(e.vector) for e in result.embeddings}
        assert len(sizes) == 1 and sizes.pop() > 0, "every vector has the same, non-zero length"
        assert all(isinstance(x, float) for e in result.embeddings for x in e.vector), "vectors are floats"
        assert isinstance(result.model, str) and result.usage.prompt_tokens >= 0
        again = suite._run(engine, lambda: engine.aembed(list(EMBED_INPUTS), model=suite.model))
        assert again.vectors == result.vectors, "aembed returns what embed returns"


def check_embed_unsupported(suite: EngineConformance) -> None:
    from jarvis_core.testing.conformance import closed_port_url

    with suite.make_engine(closed_port_url()) as engine:
        if supports_embeddings(engine):
            _skip(f"{engine.engine_id} has embeddings")
        calls: Tuple[Callable[[], Any], ...] = (lambda: engine.embed(["x"], model=suite.model),
                                                lambda: asyncio.run(engine.aembed(["x"], model=suite.model)))
        for call in calls:
            try:
                call()
            except EmbeddingsNotSupportedError as exc:
                assert engine.engine_id in str(exc), "the error names the engine"
            else:
                raise AssertionError("embed on an engine without embeddings must raise EmbeddingsNotSupportedError")


def check_structured(suite: EngineConformance) -> None:
    from jarvis_core.tools.schema import validate

    capable, engine_id = _declares(suite, supports_structured_output)
    if not capable:
        _skip(f"{engine_id} declares no response_format")
    with _serving(suite, "structured") as server, suite.make_engine(server.url) as engine:
        kw = suite._kwargs(response_format=PERSON_FORMAT)
        result = engine.generate(list(STRUCTURED_PROMPT), **kw)
        assert isinstance(result.parsed, dict), f"Completion.parsed must hold the decoded object, got {result.parsed!r}"
        assert validate(result.parsed, PERSON_SCHEMA) == [], "the decoded object is valid against the schema"
        chunks = suite._run(engine, lambda: suite._collect(engine, STRUCTURED_PROMPT, response_format=PERSON_FORMAT))
        assert chunks and chunks[-1].parsed == result.parsed, "the last stream chunk carries the same decoded object"
        assert all(c.parsed is None for c in chunks[:-1]), "only the last chunk carries the decoded object"


def check_structured_unsupported(suite: EngineConformance) -> None:
    from jarvis_core.testing.conformance import PROMPT, closed_port_url

    with suite.make_engine(closed_port_url()) as engine:
        if supports_structured_output(engine):
            _skip(f"{engine.engine_id} takes response_format")
        try:
            engine.generate(list(PROMPT), **suite._kwargs(response_format=PERSON_FORMAT))
        except StructuredOutputNotSupportedError as exc:
            assert engine.engine_id in str(exc), "the error names the engine"
        else:
            raise AssertionError("response_format on an engine without it must raise StructuredOutputNotSupportedError")
