"""Model-id normalization for backend-default matching (docs/contract.md §5).

:func:`normalize_model_id` is exactly LocalAI's rule (lowercase, drop everything up to the last ``/``, drop a
``.gguf`` suffix, ``_`` → ``-``), so ids and patterns written for LocalAI keep their meaning.

Ollama names its models ``llama3.1:8b``, ``gemma3:27b`` or ``phi4-mini``: the family name is glued to its
version, while the family patterns are hyphenated (``llama-3.1``, ``gemma-3``). :func:`model_id_candidates`
therefore also yields a *spelled-out* variant with a hyphen between a word of three or more letters and the
digit that follows it. Matching tries every candidate and keeps the longest pattern found, so ids that
already match directly (``qwen3:8b`` → ``qwen3``, ``kimi-k2``) are unaffected: a variant only ever adds
matches.
"""

from __future__ import annotations

import re
from typing import Tuple

__all__ = ["model_id_candidates", "normalize_model_id"]

# A letter run of 3+ characters directly followed by a digit: "llama3", "gemma3", "phi4", "glm4".
# Short runs are left alone so version markers such as "r1", "v3", "k2" or "m2.5" keep their spelling.
_GLUED_VERSION = re.compile(r"(?<![a-z])([a-z]{3,})(?=[0-9])")


def normalize_model_id(model: str) -> str:
    """Normalize a model id: lowercase, drop the organisation/path prefix and ``.gguf``, ``_`` → ``-``.

    ``unsloth/Qwen3.5-9B-GGUF`` → ``qwen3.5-9b-gguf``; ``/models/Llama_3.2.GGUF`` → ``llama-3.2``.
    The Ollama ``:tag`` is kept (see :func:`model_id_candidates` for how such ids still match).
    """
    text = str(model or "").strip().lower()
    text = text.rsplit("/", 1)[-1]
    if text.endswith(".gguf"):
        text = text[: -len(".gguf")]
    return text.replace("_", "-")


def model_id_candidates(model: str) -> Tuple[str, ...]:
    """The normalized id, then (if different) its spelled-out variant (``llama3.1:8b`` → ``llama-3.1:8b``)."""
    norm = normalize_model_id(model)
    spelled = _GLUED_VERSION.sub(r"\1-", norm)
    return (norm,) if spelled == norm else (norm, spelled)
