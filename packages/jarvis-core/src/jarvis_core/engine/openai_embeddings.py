"""``POST /v1/embeddings`` for engines that speak OpenAI's API (the openai-compat engines, cloud OpenAI): the
request split into batches of the engine's ``embed_batch_size``, each reply read by
:func:`~jarvis_core.embeddings.result_from_openai`, the batches joined in input order."""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Sequence, Tuple, Union

from jarvis_core.embeddings import EmbeddingResult, batches, check_inputs, join_results, result_from_openai
from jarvis_core.engine.http import HTTPEngine
from jarvis_core.errors import InvalidOptionError

__all__ = ["aembed_openai", "embed_openai"]


def _payloads(engine: HTTPEngine, inputs: Union[str, Sequence[str]], model: str,
              options: Mapping[str, Any]) -> List[Tuple[int, Dict[str, Any]]]:
    unknown = [k for k in options if k not in engine.embed_options]
    if unknown:
        raise InvalidOptionError(engine.engine_id, unknown, engine.embed_options)
    texts = check_inputs(inputs, engine_id=engine.engine_id)
    base = {"model": model, "encoding_format": "float", **options}
    return [(offset, {**base, "input": list(batch)}) for offset, batch in batches(texts, engine.embed_batch_size)]


def embed_openai(engine: HTTPEngine, path: str, inputs: Union[str, Sequence[str]], *, model: str,
                 options: Mapping[str, Any]) -> EmbeddingResult:
    """The embeddings of ``inputs`` from ``engine``'s OpenAI-shaped ``path``."""
    parts = []
    for offset, body in _payloads(engine, inputs, model, options):
        payload = engine.request_json("POST", path, json_body=body, model=model)
        with engine.scrubbed():
            parts.append((offset, result_from_openai(payload, engine_id=engine.engine_id, model=model)))
    return join_results(parts)


async def aembed_openai(engine: HTTPEngine, path: str, inputs: Union[str, Sequence[str]], *, model: str,
                        options: Mapping[str, Any]) -> EmbeddingResult:
    """Async twin of :func:`embed_openai`, on the engine's async client."""
    parts = []
    for offset, body in _payloads(engine, inputs, model, options):
        payload = await engine.arequest_json("POST", path, json_body=body, model=model)
        with engine.scrubbed():
            parts.append((offset, result_from_openai(payload, engine_id=engine.engine_id, model=model)))
    return join_results(parts)
