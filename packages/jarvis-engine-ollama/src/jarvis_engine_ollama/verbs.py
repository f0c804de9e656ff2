"""Ollama's wire form of the optional verbs: ``response_format`` as ``format`` (the schema object, or
``"json"``), image parts as the message's base64 ``images`` (checked against the model's ``vision``
capability, from ``/api/show``), and embeddings from ``POST /api/embed``."""

from __future__ import annotations

import base64
from typing import Any, Dict, List, Mapping, Sequence

from jarvis_core.content import any_images
from jarvis_core.embeddings import Embedding, EmbeddingResult
from jarvis_core.errors import ConflictingOptionsError, InvalidOptionValueError, MalformedResponseError
from jarvis_core.structured import check_response_format, schema_of
from jarvis_core.types import Message, Usage

__all__ = ["EMBED_OPTIONS", "embed_body", "format_option", "images_of", "mentions_images", "result_from_embed"]

ENGINE_ID = "ollama"
#: ``embed`` options Ollama's ``/api/embed`` takes.
EMBED_OPTIONS = frozenset({"dimensions", "truncate", "keep_alive"})


def format_option(options: Mapping[str, Any]) -> Any:
    """The ``format`` to send: from ``response_format`` (a ``json_schema``'s schema object, ``"json"`` for
    ``json_object``), else Ollama's own ``format`` option as given; ``None`` for neither."""
    if "response_format" not in options:
        return options.get("format")
    if options.get("format") is not None:
        raise ConflictingOptionsError(ENGINE_ID, ["format", "response_format"], "both say how to shape the answer; "
                                      "use response_format (the one every engine takes)")
    checked = check_response_format(options["response_format"], engine_id=ENGINE_ID)
    if checked is None:
        return None
    return schema_of(checked) or "json"


#: True when a message carries an image as content parts (typed, or OpenAI ``image_url`` parts). A dict's own
#: Ollama ``images`` field passes through unchecked, as it always did.
mentions_images = any_images


def images_of(message: Message) -> List[str]:
    """The message's images as Ollama's base64 strings.

    :raises InvalidOptionValueError: an image given by a remote URL (Ollama only takes the image's bytes).
    """
    out: List[str] = []
    for part in message.images:
        try:
            _, data = part.inline()
        except ValueError:
            raise InvalidOptionValueError(ENGINE_ID, "messages", "Ollama takes images as data, not a remote URL: "
                                          "pass the bytes (ImagePart.from_bytes / from_path) or a data: URL",
                                          value=part.url) from None
        out.append(base64.b64encode(data).decode("ascii"))
    return out


def embed_body(inputs: Sequence[str], model: str, options: Mapping[str, Any]) -> Dict[str, Any]:
    """The ``/api/embed`` body."""
    return {"model": model, "input": list(inputs), **options}


def result_from_embed(payload: Any, *, model: str, redact: Any = None) -> EmbeddingResult:
    """An ``/api/embed`` reply (``{model, embeddings: [[…]], prompt_eval_count}``) as an :class:`EmbeddingResult`.

    :raises MalformedResponseError: a reply of another shape.
    """
    vectors = payload.get("embeddings") if isinstance(payload, Mapping) else None
    if not isinstance(vectors, list):
        excerpt = str(payload)[:200]
        raise MalformedResponseError(f"{ENGINE_ID}: /api/embed answered without an 'embeddings' list: "
                                     f"{redact(excerpt) if redact else excerpt}", engine_id=ENGINE_ID, excerpt=excerpt)
    try:
        embeddings = tuple(Embedding(v, i) for i, v in enumerate(vectors))
    except (TypeError, ValueError):
        raise MalformedResponseError(f"{ENGINE_ID}: /api/embed answered a vector that is not numbers",
                                     engine_id=ENGINE_ID) from None
    count = payload.get("prompt_eval_count")
    return EmbeddingResult(embeddings, model=str(payload.get("model") or model),
                           usage=Usage(prompt_tokens=count if isinstance(count, int) else 0))
