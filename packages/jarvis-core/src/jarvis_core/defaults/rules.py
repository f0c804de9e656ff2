"""Backend-default rules: what a plugin or the user's config says about a model family.

A :class:`Rule` is one ``jarvis_backend_defaults`` registration (or one user-config entry), checked and
normalized once. Field values follow one convention everywhere: ``None`` means "this rule does not set the
field"; a parser name of ``"none"`` means "this family has no such parser" (it stops shorter patterns from
supplying one).
"""

from __future__ import annotations

import math
import warnings
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

import attrs

from jarvis_core.engine.base import SAMPLING_FIELDS
from jarvis_core.errors import ConfigError

__all__ = ["SAMPLING_FIELDS", "USER_CONFIG", "Rule", "coerce_user_rules", "rules_from_registry"]

#: The "distribution" named in provenance for values from the user's config.
USER_CONFIG = "user config"

_RULE_KEYS = ("backends", "tool_parser", "reasoning_parser", "sampling", "extras", "compute")

#: The pattern of a rule asked about every model (only with ``compute``).
ANY_MODEL = "*"


def _freeze(mapping: Optional[Mapping[str, Any]]) -> Mapping[str, Any]:
    return dict(mapping or {})


def _backends(value: Any) -> Tuple[str, ...]:
    if value is None:
        return ("*",)
    if isinstance(value, str):
        value = (value,)
    return tuple(str(b).strip().lower() for b in value)


@attrs.frozen
class Rule:
    """One family rule. ``pattern`` is normalized like model ids (lowercase, ``_`` → ``-``)."""

    pattern: str
    backends: Tuple[str, ...] = ("*",)
    tool_parser: Optional[str] = None
    reasoning_parser: Optional[str] = None
    sampling: Mapping[str, Any] = attrs.field(factory=dict, converter=_freeze)
    extras: Mapping[str, Any] = attrs.field(factory=dict, converter=_freeze)
    distribution: str = ""
    plugin: str = ""
    order: int = 0
    #: ``"module:function"`` computing the rule's values from a :class:`~jarvis_core.defaults.hooks.ModelInfo`.
    compute: Optional[str] = None

    def matches(self, candidates: Sequence[str]) -> bool:
        """The pattern is in one of the model's ids (``"*"``: every model)."""
        return self.pattern == ANY_MODEL or any(self.pattern in c for c in candidates)

    def applies_to(self, backend: Optional[str]) -> bool:
        """``"*"`` matches every backend, ``""`` only an unknown backend, a name only that backend."""
        key = (backend or "").strip().lower()
        return "*" in self.backends or key in self.backends

    def fields(self) -> List[Tuple[str, Any]]:
        """``(field, value)`` for every field this rule sets; sampling and extras keys are flattened."""
        out: List[Tuple[str, Any]] = []
        if self.tool_parser is not None:
            out.append(("tool_parser", self.tool_parser))
        if self.reasoning_parser is not None:
            out.append(("reasoning_parser", self.reasoning_parser))
        out.extend((k, v) for k, v in self.sampling.items() if v is not None)
        out.extend((f"extras.{k}", v) for k, v in self.extras.items() if v is not None)
        return out


def _check_number(field: str, value: Any) -> Optional[str]:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return f"sampling field {field!r} must be a number, got {type(value).__name__} {value!r}"
    if isinstance(value, float) and not math.isfinite(value):
        return f"sampling field {field!r} must be finite, got {value!r}"
    return None


def _build(pattern: Any, fields: Mapping[str, Any], *, where: str) -> Tuple[Optional[Rule], List[str]]:
    """Check one rule; return it (or None) and the problems found."""
    problems: List[str] = []
    if not isinstance(pattern, str) or not pattern.strip():
        return None, [f"{where}: pattern must be a non-empty string, got {pattern!r}"]
    unknown = [k for k in fields if k not in _RULE_KEYS]
    if unknown:
        problems.append(f"{where}: unknown field(s) {', '.join(sorted(unknown))}; expected {', '.join(_RULE_KEYS)}")
    sampling = dict(fields.get("sampling") or {})
    for key in list(sampling):
        if key not in SAMPLING_FIELDS:
            problems.append(f"{where}: unknown sampling field {key!r}; expected one of {', '.join(SAMPLING_FIELDS)}")
            sampling.pop(key)
        elif sampling[key] is not None:
            bad = _check_number(key, sampling[key])
            if bad:
                problems.append(f"{where}: {bad}")
                sampling.pop(key)
    parsers: Dict[str, Optional[str]] = {}
    for key in ("tool_parser", "reasoning_parser"):
        value = fields.get(key)
        if value is not None and (not isinstance(value, str) or not value.strip()):
            problems.append(f"{where}: {key} must be a parser name (or 'none'), got {value!r}")
            value = None
        parsers[key] = value.strip() if isinstance(value, str) else None
    compute = fields.get("compute")
    if compute is not None and (not isinstance(compute, str) or ":" not in compute):
        problems.append(f"{where}: compute must be a 'module:function' string, got {compute!r}")
        compute = None
    if pattern.strip() == ANY_MODEL and compute is None:
        return None, [*problems, f"{where}: pattern '*' is only for a rule with compute"]
    extras = fields.get("extras") or {}
    if not isinstance(extras, Mapping):
        problems.append(f"{where}: extras must be a table/mapping, got {type(extras).__name__}")
        extras = {}
    rule = Rule(
        pattern=pattern.strip().lower().replace("_", "-"),
        backends=_backends(fields.get("backends")),
        sampling=sampling,
        extras=extras,
        tool_parser=parsers.get("tool_parser"),
        reasoning_parser=parsers.get("reasoning_parser"),
        compute=compute,
    )
    return rule, problems


def rules_from_registry(default_rules: Iterable[Tuple[str, Mapping[str, Any], str, str, str]]) -> List[Rule]:
    """Plugin rules from ``Registry.default_rules``, in registration order.

    A malformed rule is skipped with a warning naming its distribution (one bad plugin must not break
    every model's defaults).
    """
    out: List[Rule] = []
    for order, (pattern, fields, plugin, dist, _version) in enumerate(default_rules):
        rule, problems = _build(pattern, fields, where=f"backend-default rule {pattern!r} from {dist} (plugin {plugin!r})")
        for problem in problems:
            warnings.warn(problem, RuntimeWarning, stacklevel=2)
        if rule is not None:
            out.append(attrs.evolve(rule, distribution=dist, plugin=plugin, order=order))
    return out


def _user_entries(user_rules: Any) -> List[Tuple[str, Mapping[str, Any]]]:
    """Accept a mapping ``{pattern: fields}``, or a sequence of mappings/objects carrying ``pattern``."""
    if user_rules is None:
        return []
    if isinstance(user_rules, Mapping):
        items = list(user_rules.items())
        return [(p, f if isinstance(f, Mapping) else _object_fields(f)) for p, f in items]
    if isinstance(user_rules, (str, bytes)) or not isinstance(user_rules, Sequence):
        raise ConfigError(
            f"model defaults must be a table of pattern = {{...}} entries, got {type(user_rules).__name__}",
            key="model_defaults",
        )
    out: List[Tuple[str, Mapping[str, Any]]] = []
    for entry in user_rules:
        fields = dict(entry) if isinstance(entry, Mapping) else _object_fields(entry)
        out.append((fields.pop("pattern", None), fields))
    return out


def _object_fields(obj: Any) -> dict[str, Any]:
    if attrs.has(type(obj)):
        return {k: v for k, v in attrs.asdict(obj, recurse=False).items() if v is not None}
    return {k: v for k, v in vars(obj).items() if not k.startswith("_") and v is not None}


def coerce_user_rules(user_rules: Any) -> List[Rule]:
    """Rules from the user's config. Flat sampling keys (``temperature = 0.2``) are accepted too.

    Bad entries raise :class:`~jarvis_core.errors.ConfigError` naming the pattern and the key.
    """
    out: List[Rule] = []
    for order, (pattern, raw) in enumerate(_user_entries(user_rules)):
        fields = dict(raw)
        sampling = dict(fields.pop("sampling", None) or {})
        for key in SAMPLING_FIELDS:
            if key in fields:
                sampling[key] = fields.pop(key)
        fields["sampling"] = sampling
        if "compute" in fields:
            raise ConfigError(f"[model_defaults] entry {pattern!r}: compute is for plugins (a rule computed by "
                              "code); the config sets values", key="model_defaults")
        rule, problems = _build(pattern, fields, where=f"[model_defaults] entry {pattern!r}")
        if problems or rule is None:
            raise ConfigError("; ".join(problems) or f"invalid model_defaults entry {pattern!r}", key="model_defaults")
        out.append(attrs.evolve(rule, distribution=USER_CONFIG, plugin="config", order=order))
    return out

