"""Reading a ``POST /v1/embeddings`` body (OpenAI's shape) into an engine call: the route
(:func:`jarvis_server.openai_routes.embeddings`) passes it to the engine's :meth:`aembed
<jarvis_core.engine.base.InferenceEngine.aembed>`.

The body: ``input`` (a string or an array of strings; token arrays are a 400), ``model`` (default: the
served model), ``encoding_format`` (``float``, the default, or ``base64``: little-endian float32),
``dimensions`` (passed to the engine, which refuses it when the backend cannot) and ``user`` (ignored, as
OpenAI's own API documents it as a tracking hint). An engine without embeddings answers 400
``unsupported_capability`` naming it.
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping

import attrs

from jarvis_core.embeddings import ENCODING_FORMATS
from jarvis_server.openai_errors import RequestError

__all__ = ["MAX_INPUTS", "EmbeddingsRequest", "parse_embeddings_request"]

#: The most inputs one request may carry (OpenAI's own limit).
MAX_INPUTS = 2048
_FIELDS = frozenset({"input", "model", "encoding_format", "dimensions", "user"})


@attrs.frozen
class EmbeddingsRequest:
    """A validated embeddings request: ``options`` go to the engine as keyword arguments."""

    inputs: List[str]
    model: str
    encoding: str
    options: Dict[str, Any] = attrs.field(factory=dict)


def parse_embeddings_request(body: Any, *, default_model: str) -> EmbeddingsRequest:
    """Validate ``body`` (decoded JSON) into an :class:`EmbeddingsRequest`; a :class:`RequestError` naming
    the field at fault otherwise."""
    if not isinstance(body, Mapping):
        raise RequestError("the request body must be a JSON object", param="body")
    unknown = sorted(set(body) - _FIELDS)
    if unknown:
        raise RequestError(f"unknown field(s) {', '.join(unknown)}; this endpoint takes {', '.join(sorted(_FIELDS))}",
                           param=unknown[0], code="unsupported_parameter")
    raw = body.get("input")
    inputs = [raw] if isinstance(raw, str) else raw
    if not isinstance(inputs, list) or not inputs or not all(isinstance(i, str) for i in inputs):
        raise RequestError("input must be a string or a non-empty array of strings (token arrays are not taken)",
                           param="input")
    if len(inputs) > MAX_INPUTS:
        raise RequestError(f"input holds {len(inputs)} items; the limit is {MAX_INPUTS}", param="input")
    encoding = body.get("encoding_format", "float")
    if encoding not in ENCODING_FORMATS:
        raise RequestError(f"encoding_format must be one of {', '.join(ENCODING_FORMATS)}", param="encoding_format")
    options: Dict[str, Any] = {}
    dims = body.get("dimensions")
    if dims is not None:
        if not isinstance(dims, int) or isinstance(dims, bool) or dims < 1:
            raise RequestError("dimensions must be a whole number >= 1", param="dimensions")
        options["dimensions"] = dims
    model = body.get("model") or default_model
    if not isinstance(model, str):
        raise RequestError("model must be a string", param="model")
    return EmbeddingsRequest(inputs=inputs, model=model, encoding=encoding, options=options)

