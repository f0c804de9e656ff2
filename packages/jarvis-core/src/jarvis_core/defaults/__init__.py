"""Per-model-family backend defaults (docs/contract.md §5): parsers and sampling values, longest pattern first.

- :func:`resolve` merges every plugin's ``jarvis_backend_defaults`` rules (and the user's config rules) for
  one model and backend, with the provenance of each field.
- :class:`ModelAdapter` is what engines use: sampling precedence, reasoning splitting and text tool calls,
  on whole responses and streams.

Names are imported lazily: the built-in plugin (:mod:`jarvis_core.defaults.plugin`) lives in this package
and is imported by every ``jarvis`` start-up, which must stay cheap.
"""

from __future__ import annotations

from jarvis_core.lazy import lazy_exports

_EXPORTS = {
    "ENGINE_DEFAULTS": "adapter",
    "ModelAdapter": "adapter",
    "model_id_candidates": "normalize",
    "normalize_model_id": "normalize",
    "Provenance": "resolver",
    "Resolved": "resolver",
    "plugin_rules": "resolver",
    "resolve": "resolver",
    "SAMPLING_FIELDS": "rules",
    "USER_CONFIG": "rules",
    "Rule": "rules",
    "coerce_user_rules": "rules",
}

__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, {k: f"{__name__}.{m}" for k, m in _EXPORTS.items()}, globals())


