"""Resolving a model's backend defaults: longest pattern first, over every plugin's rules (docs/contract.md §5).

Each field (tool parser, reasoning parser, every sampling value, every extras key) is taken separately
from the most specific rule that sets it: user-config rules first (longest pattern first), then plugin
rules (longest pattern first across all plugins, ties by registration order). So a plugin that registers
``qwen3-coder-plus`` with only ``temperature`` still inherits ``top_p`` from the core's ``qwen3-coder``.
"""

from __future__ import annotations

import os
import threading
from typing import Any, Dict, List, Mapping, NamedTuple, Optional, Sequence, Tuple

import attrs

from jarvis_core.defaults.hooks import ModelInfo, run_compute
from jarvis_core.defaults.normalize import model_id_candidates, normalize_model_id
from jarvis_core.defaults.rules import SAMPLING_FIELDS, Rule, coerce_user_rules, rules_from_registry

__all__ = ["Provenance", "Resolved", "plugin_rules", "resolve"]


class Provenance(NamedTuple):
    """Where a field's value came from: the rule's pattern and the distribution that registered it."""

    pattern: str
    distribution: str


@attrs.frozen
class Resolved:
    """The merged defaults of one model on one backend, with the provenance of every field.

    ``sampling`` holds only the fields some rule set; ``provenance`` maps ``"tool_parser"``,
    ``"reasoning_parser"``, each sampling field name and ``"extras.<key>"`` to a :class:`Provenance`.
    """

    model: str
    backend: Optional[str]
    normalized_id: str
    tool_parser: Optional[str] = None
    reasoning_parser: Optional[str] = None
    sampling: Mapping[str, Any] = attrs.field(factory=dict)
    extras: Mapping[str, Any] = attrs.field(factory=dict)
    provenance: Mapping[str, Provenance] = attrs.field(factory=dict)
    matched: Tuple[Provenance, ...] = ()
    #: Every normalized id the rules were matched against (the model's, then those computed from its file).
    candidates: Tuple[str, ...] = ()

    def to_dict(self) -> Dict[str, Any]:
        """A JSON-ready dict (what ``jarvis defaults`` prints)."""
        return {
            "model": self.model,
            "backend": self.backend,
            "normalized_id": self.normalized_id,
            "tool_parser": self.tool_parser,
            "reasoning_parser": self.reasoning_parser,
            "sampling": dict(self.sampling),
            "extras": dict(self.extras),
            "provenance": {k: {"pattern": p.pattern, "distribution": p.distribution} for k, p in self.provenance.items()},
            "matched_rules": [{"pattern": p.pattern, "distribution": p.distribution} for p in self.matched],
            "matched_ids": list(self.candidates),
        }


_cache_lock = threading.Lock()
_cache: Dict[int, Tuple[Any, List[Rule]]] = {}


def plugin_rules(registry: Any = None) -> List[Rule]:
    """Every plugin's rules, sorted longest pattern first (stable: ties keep registration order)."""
    if registry is None:
        from jarvis_core.plugins import get_registry

        registry = get_registry()
    key = id(registry)
    with _cache_lock:
        hit = _cache.get(key)
        if hit is not None and hit[0] is registry:
            return hit[1]
    rules = sorted(rules_from_registry(registry.default_rules), key=lambda r: -len(r.pattern))
    with _cache_lock:
        _cache.clear()  # one registry per process at a time; drop rules of a replaced one
        _cache[key] = (registry, rules)
    return rules


def _matching(rules: Sequence[Rule], candidates: Sequence[str], backend: Optional[str]) -> List[Rule]:
    return [r for r in rules if r.applies_to(backend) and r.matches(candidates)]


def _computed(rules: Sequence[Rule], info: ModelInfo, candidates: List[str]) -> List[Rule]:
    """Run the matching computing rules; their aliases extend ``candidates``; their results as rules."""
    out: List[Rule] = []
    for rule in _matching([r for r in rules if r.compute], candidates, info.backend):
        assert rule.compute is not None
        found = run_compute(rule.compute, info, where=f"backend-default rule {rule.pattern!r} from "
                            f"{rule.distribution} (compute {rule.compute})")
        if found is None:
            continue
        for alias in found.aliases:  # "SmolLM2 135M Instruct" is matched as smollm2-135m-instruct
            candidates.extend(c for c in model_id_candidates("-".join(alias.split())) if c not in candidates)
        out.append(attrs.evolve(rule, pattern=f"computed by {rule.compute}", tool_parser=found.tool_parser,
                                reasoning_parser=found.reasoning_parser, sampling=found.sampling,
                                extras=found.extras, compute=None))
    return out


def resolve(model: str, backend: Optional[str] = None, *, user_rules: Any = None, registry: Any = None,
            path: Optional[str] = None) -> Resolved:
    """Resolve ``model``'s parsers, sampling and extras for ``backend`` (``None``: backend unknown).

    :param user_rules: the user's ``model_defaults`` (a mapping ``{pattern: {field: value}}`` or a list of
        entries with a ``pattern`` key); they beat every plugin rule. Bad entries raise ``ConfigError``.
    :param registry: the registry to read plugin rules from (default: the process-wide one).
    :param path: the model's local file, when known: rules computed by code (:mod:`jarvis_core.defaults.hooks`)
        read it, and the ids it gives are matched too. ``model`` itself is taken as the path when it names an
        existing ``.gguf`` file.
    """
    if path is None and model.lower().endswith(".gguf") and os.path.isfile(model):
        path = model
    candidates = list(model_id_candidates(model))
    backend_key = backend.strip().lower() if isinstance(backend, str) and backend.strip() else None
    users = sorted(coerce_user_rules(user_rules), key=lambda r: -len(r.pattern))
    plugins = plugin_rules(registry)
    computed = _computed(plugins, ModelInfo(model, backend_key, path), candidates)
    declared = [r for r in plugins if not r.compute]
    ordered = _matching(users, candidates, backend_key) + computed + _matching(declared, candidates, backend_key)

    values: Dict[str, Any] = {}
    provenance: Dict[str, Provenance] = {}
    for rule in ordered:
        for field, value in rule.fields():
            if field not in values:
                values[field] = value
                provenance[field] = Provenance(rule.pattern, rule.distribution)

    def parser(field: str) -> Optional[str]:
        name = values.get(field)
        return None if name is None or name.lower() == "none" else name

    sampling = {k: values[k] for k in SAMPLING_FIELDS if k in values}
    extras = {k[len("extras.") :]: v for k, v in values.items() if k.startswith("extras.")}
    return Resolved(
        model=model,
        backend=backend_key,
        normalized_id=normalize_model_id(model),
        tool_parser=parser("tool_parser"),
        reasoning_parser=parser("reasoning_parser"),
        sampling=sampling,
        extras=extras,
        provenance=provenance,
        matched=tuple(Provenance(r.pattern, r.distribution) for r in ordered),
        candidates=tuple(candidates),
    )
