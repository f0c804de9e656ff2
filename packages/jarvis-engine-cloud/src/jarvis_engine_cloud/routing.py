"""Which provider serves a model name, and the name the provider knows it by.

Rules (first match wins):

1. an explicit prefix picks the provider and is stripped: ``openai/``, ``anthropic/``, ``google/`` (and
   ``gemini/``, LiteLLM's spelling);
2. a name containing ``claude`` goes to Anthropic;
3. a name containing ``gemini`` goes to Google (a leading ``models/`` is dropped);
4. everything else goes to OpenAI (or whatever ``OPENAI_BASE_URL`` points at, e.g. a LiteLLM proxy).
"""

from __future__ import annotations

from typing import Tuple

import attrs

from jarvis_core.errors import InvalidOptionValueError

__all__ = ["ANTHROPIC", "GOOGLE", "OPENAI", "PROVIDERS", "Route", "display_name", "route_model"]

OPENAI = "openai"
ANTHROPIC = "anthropic"
GOOGLE = "google"

#: Every provider, in the order they are listed and probed.
PROVIDERS: Tuple[str, ...] = (OPENAI, ANTHROPIC, GOOGLE)

_PREFIXES = {"openai/": OPENAI, "anthropic/": ANTHROPIC, "google/": GOOGLE, "gemini/": GOOGLE}


@attrs.frozen
class Route:
    """Where a model name goes: the provider and the model id to send it."""

    provider: str
    model: str


def route_model(model: str) -> Route:
    """The :class:`Route` for ``model`` (see the module docstring for the rules)."""
    name = model.strip()
    lowered = name.lower()
    provider = None
    for prefix, target in _PREFIXES.items():
        if lowered.startswith(prefix):
            provider, name = target, name[len(prefix) :]
            break
    if not name:
        raise InvalidOptionValueError("cloud", "model", "names a provider but no model", value=model)
    if provider is None:
        lowered = name.lower()
        provider = ANTHROPIC if "claude" in lowered else GOOGLE if "gemini" in lowered else OPENAI
    if provider == GOOGLE and name.startswith("models/"):
        name = name[len("models/") :]
    return Route(provider, name)


def display_name(provider: str, model: str) -> str:
    """The name to list ``model`` under so that :func:`route_model` sends it back to ``provider``."""
    if route_model(model).provider == provider:
        return model
    return f"{provider}/{model}"
