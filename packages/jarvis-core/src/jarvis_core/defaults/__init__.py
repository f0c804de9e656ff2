"""Per-model-family backend defaults (docs/contract.md §5): parsers and sampling values, longest pattern first.

- :func:`resolve` merges every plugin's ``jarvis_backend_defaults`` rules (and the user's config rules) for
  one model and backend, with the provenance of each field.
- :class:`ModelAdapter` is what engines use: sampling precedence, reasoning splitting and text tool calls,
  on whole responses and streams.

Names are imported lazily: the built-in plugin (:mod:`jarvis_core.defaults.plugin`) lives in this package
and is imported by every ``jarvis`` start-up, which must stay cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from jarvis_core.lazy import lazy_exports

_LAZY = {
    "ENGINE_DEFAULTS": "jarvis_core.defaults.adapter",
    "Computed": "jarvis_core.defaults.hooks",
    "ModelInfo": "jarvis_core.defaults.hooks",
    "ModelAdapter": "jarvis_core.defaults.adapter",
    "model_id_candidates": "jarvis_core.defaults.normalize",
    "normalize_model_id": "jarvis_core.defaults.normalize",
    "Provenance": "jarvis_core.defaults.resolver",
    "Resolved": "jarvis_core.defaults.resolver",
    "plugin_rules": "jarvis_core.defaults.resolver",
    "resolve": "jarvis_core.defaults.resolver",
    "SAMPLING_FIELDS": "jarvis_core.defaults.rules",
    "USER_CONFIG": "jarvis_core.defaults.rules",
    "Rule": "jarvis_core.defaults.rules",
    "coerce_user_rules": "jarvis_core.defaults.rules",
}

__all__ = [
    "ENGINE_DEFAULTS",
    "Computed",
    "ModelInfo",
    "SAMPLING_FIELDS",
    "USER_CONFIG",
    "ModelAdapter",
    "Provenance",
    "Resolved",
    "Rule",
    "coerce_user_rules",
    "model_id_candidates",
    "normalize_model_id",
    "plugin_rules",
    "resolve",
]

__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals())

if TYPE_CHECKING:  # pragma: no cover
    from jarvis_core.defaults.adapter import ENGINE_DEFAULTS, ModelAdapter
    from jarvis_core.defaults.hooks import Computed, ModelInfo
    from jarvis_core.defaults.normalize import model_id_candidates, normalize_model_id
    from jarvis_core.defaults.resolver import Provenance, Resolved, plugin_rules, resolve
    from jarvis_core.defaults.rules import SAMPLING_FIELDS, USER_CONFIG, Rule, coerce_user_rules
