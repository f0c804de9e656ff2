"""Embeddings: the value types of :meth:`InferenceEngine.embed <jarvis_core.engine.base.InferenceEngine.embed>`
and the OpenAI wire shape they share (docs/contract.md §4).

An engine returns an :class:`EmbeddingResult`: one :class:`Embedding` per input, in input order, with the model
and the token usage. Long input lists are sent in batches of the engine's ``embed_batch_size`` and joined
(:func:`batches`, :func:`join_results`). :func:`result_from_openai` reads the ``/v1/embeddings`` reply
(floats or base64) every OpenAI-compatible server sends; :func:`result_to_openai` writes it (the jarvis server).
"""

from __future__ import annotations

import array
import base64
import binascii
import sys
from typing import Any, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple, Union

import attrs

from jarvis_core.types import Usage, as_tuple

__all__ = [
    "ENCODING_FORMATS",
    "Embedding",
    "EmbeddingResult",
    "batches",
    "check_inputs",
    "decode_base64_vector",
    "encode_base64_vector",
    "join_results",
    "result_from_openai",
    "result_to_openai",
]

#: The ``encoding_format`` values of OpenAI's API: a list of floats, or base64 of little-endian float32.
ENCODING_FORMATS = ("float", "base64")


def _floats(value: Any) -> Tuple[float, ...]:
    if type(value) is tuple:
        return value
    return tuple(map(float, value))


@attrs.frozen
class Embedding:
    """The vector of one input; ``index`` is the input's position in the request."""

    vector: Tuple[float, ...] = attrs.field(converter=_floats, repr=lambda v: f"<{len(v)} floats>")
    index: int = 0


@attrs.frozen
class EmbeddingResult:
    """What :meth:`~jarvis_core.engine.base.InferenceEngine.embed` returns: one embedding per input, in order."""

    embeddings: Tuple[Embedding, ...] = attrs.field(default=(), converter=as_tuple)
    model: str = ""
    usage: Usage = attrs.field(factory=Usage)

    @property
    def vectors(self) -> List[Tuple[float, ...]]:
        """The vectors alone, in input order."""
        return [e.vector for e in self.embeddings]

    @property
    def dimensions(self) -> int:
        """The length of the vectors (0 when there are none)."""
        return len(self.embeddings[0].vector) if self.embeddings else 0


def check_inputs(inputs: Union[str, Sequence[str]], *, engine_id: str = "") -> List[str]:
    """``inputs`` as a list of strings (one string is a list of one).

    :raises InvalidOptionValueError: no input, or an input that is not a string.
    """
    from jarvis_core.errors import InvalidOptionValueError

    items = [inputs] if isinstance(inputs, str) else list(inputs)
    if not items:
        raise InvalidOptionValueError(engine_id or "jarvis", "inputs", "there is nothing to embed", value=items)
    for item in items:
        if not isinstance(item, str):
            raise InvalidOptionValueError(engine_id or "jarvis", "inputs", "every input must be a string", value=item)
    return items


def batches(items: Sequence[str], size: int) -> Iterator[Tuple[int, Sequence[str]]]:
    """``(offset, batch)`` pairs of at most ``size`` items each."""
    step = max(1, size)
    for start in range(0, len(items), step):
        yield start, items[start:start + step]


def join_results(parts: Sequence[Tuple[int, EmbeddingResult]]) -> EmbeddingResult:
    """The results of batches (each with its offset) as one result; indices renumbered, usage summed."""
    embeddings: List[Embedding] = []
    prompt = 0
    model = ""
    for offset, part in parts:
        model = model or part.model
        prompt += part.usage.prompt_tokens
        embeddings.extend(Embedding(e.vector, offset + e.index) for e in part.embeddings)
    return EmbeddingResult(tuple(embeddings), model=model, usage=Usage(prompt_tokens=prompt))


def encode_base64_vector(vector: Sequence[float]) -> str:
    """A vector as OpenAI's base64 form: little-endian float32 values, base64-encoded."""
    values = array.array("f", vector)
    if sys.byteorder != "little":
        values.byteswap()
    return base64.b64encode(values.tobytes()).decode("ascii")


def decode_base64_vector(text: str) -> Tuple[float, ...]:
    """The inverse of :func:`encode_base64_vector`.

    :raises ValueError: not base64, or not a whole number of float32 values.
    """
    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise ValueError("an embedding is not valid base64") from None
    if len(raw) % 4:
        raise ValueError("a base64 embedding is not a whole number of float32 values")
    values = array.array("f")
    values.frombytes(raw)
    if sys.byteorder != "little":
        values.byteswap()
    return tuple(values)


def result_from_openai(payload: Any, *, engine_id: str = "", model: str = "") -> EmbeddingResult:
    """An OpenAI ``/v1/embeddings`` reply (``{data: [{embedding, index}], model, usage}``; each embedding a
    list of floats or a base64 string) as an :class:`EmbeddingResult`, in index order.

    :raises MalformedResponseError: a reply of another shape.
    """
    from jarvis_core.errors import MalformedResponseError

    def bad(why: str) -> MalformedResponseError:
        return MalformedResponseError(f"{engine_id or 'the server'}: the embeddings reply {why}", engine_id=engine_id,
                                      excerpt=str(payload)[:300])

    data = payload.get("data") if isinstance(payload, Mapping) else None
    if not isinstance(data, list):
        raise bad("has no 'data' list")
    out: List[Embedding] = []
    for position, item in enumerate(data):
        vector = item.get("embedding") if isinstance(item, Mapping) else None
        try:
            floats = decode_base64_vector(vector) if isinstance(vector, str) else _floats(vector)
        except (TypeError, ValueError):
            raise bad(f"has an entry {position} without a vector of numbers") from None
        index = item.get("index", position)
        out.append(Embedding(floats, index if isinstance(index, int) and not isinstance(index, bool) else position))
    out.sort(key=lambda e: e.index)
    usage = payload.get("usage") if isinstance(payload.get("usage"), Mapping) else {}
    prompt = usage.get("prompt_tokens") or 0
    return EmbeddingResult(tuple(out), model=str(payload.get("model") or model),
                           usage=Usage(prompt_tokens=prompt if isinstance(prompt, int) else 0))


def result_to_openai(result: EmbeddingResult, *, encoding_format: str = "float",
                     model: Optional[str] = None) -> Dict[str, Any]:
    """An :class:`EmbeddingResult` as OpenAI's ``/v1/embeddings`` reply, floats or base64."""
    data = [{"object": "embedding", "index": e.index,
             "embedding": encode_base64_vector(e.vector) if encoding_format == "base64" else list(e.vector)}
            for e in result.embeddings]
    return {"object": "list", "data": data, "model": model or result.model,
            "usage": {"prompt_tokens": result.usage.prompt_tokens, "total_tokens": result.usage.prompt_tokens}}
