"""Tool arguments checked against the tool's JSON schema, with maintained JSON-Schema implementations.

Every keyword of the schema's draft holds (``pattern``, ``format``, ``enum``, ``oneOf``, ``$ref``, …; draft 7
when the schema names none in ``$schema``). The decision on each call is made by a validator compiled once
per schema with ``fastjsonschema`` (the cheapest per call: see ``benchmarks/bench_tool_args.py``); when it
fails, ``jsonschema`` lists every problem, worded for the model, which must be able to fix its call from
them alone::

    >>> check_arguments({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}, '{"n": "3"}')
    (None, "argument 'n' must be of type integer, got string")

A schema is itself checked against its draft's metaschema (:func:`schema_problem`) before it is used, so a
broken schema is the tool author's error (:func:`jarvis_core.tools.check_tool`), never the model's.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping  # not typing.Mapping: its isinstance() is several times slower, per call
from typing import Any, Callable, Dict, Iterable, List, Optional, Tuple, Union

# The argument codec lives with the value types (engines decode arguments too); re-exported here as before.
from jarvis_core.arguments import decode_arguments, json_type_name

__all__ = ["check_arguments", "decode_arguments", "json_type_name", "schema_problem", "validate"]

#: Compiled schemas kept (by identity; the schema is kept alive with its entry so its id is not reused).
CACHE_SIZE = 1024



class _Compiled:
    __slots__ = ("check", "problem", "schema", "validator")

    def __init__(self, schema: Any, problem: Optional[str], check: Optional[Callable[[Any], Any]],
                 validator: Any) -> None:
        self.schema = schema
        self.problem = problem  # what is wrong with the schema itself (None: a valid schema)
        self.check = check  # fastjsonschema's compiled function: returns, or raises on invalid data
        self.validator = validator  # a jsonschema validator, for the messages


_cache: Dict[int, _Compiled] = {}
_lock = threading.Lock()


def _compile(schema: Any) -> _Compiled:
    hit = _cache.get(id(schema))
    if hit is not None and hit.schema is schema:
        return hit
    import jsonschema
    import jsonschema.exceptions
    import jsonschema.validators

    if isinstance(schema, Mapping):
        schema = dict(schema) if not isinstance(schema, dict) else schema
        cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft7Validator)
    else:
        cls = jsonschema.Draft7Validator
    problem: Optional[str] = None
    check: Optional[Callable[[Any], Any]] = None
    validator: Any = None
    if not isinstance(schema, dict):
        problem = f"a schema must be a JSON object, got {json_type_name(schema)}"
    else:
        error = jsonschema.exceptions.best_match(cls(cls.META_SCHEMA).iter_errors(schema))
        if error is not None:
            at = "/".join(map(str, error.absolute_path))
            problem = f"{error.message}" + (f" (at {at!r})" if at else "")
        else:
            validator = cls(schema, format_checker=cls.FORMAT_CHECKER)
            check = _fast(schema, cls)
    entry = _Compiled(schema, problem, check, validator)
    with _lock:
        if len(_cache) >= CACHE_SIZE:
            _cache.clear()
        _cache[id(schema)] = entry
    return entry


def _fast(schema: Dict[str, Any], cls: Any) -> Optional[Callable[[Any], Any]]:
    """fastjsonschema's compiled check for the drafts it implements (4, 6 and 7); ``None`` for later drafts,
    which jsonschema then decides alone."""
    import fastjsonschema
    import jsonschema

    if cls not in (jsonschema.Draft4Validator, jsonschema.Draft6Validator, jsonschema.Draft7Validator):
        return None
    try:
        return fastjsonschema.compile(schema, use_default=False)
    except fastjsonschema.JsonSchemaDefinitionException:
        return None


def schema_problem(schema: Any) -> Optional[str]:
    """What is wrong with ``schema`` as a JSON schema (checked against its draft's metaschema); ``None``
    when it is valid. The answer is cached with the compiled validator."""
    return _compile(schema).problem


def _where(path: str) -> str:
    return f"argument {path!r}" if path else "the arguments"


def _path(parts: Iterable[Any]) -> str:
    out = ""
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _short(value: Any) -> str:
    text = json.dumps(value, default=str, ensure_ascii=False)
    return text if len(text) <= 80 else text[:77] + "..."


def _message(error: Any) -> str:
    """One jsonschema error, worded for the model."""
    kind, expected, value = error.validator, error.validator_value, error.instance
    path = _path(error.absolute_path)
    where = _where(path)
    prefix = f"{path}." if path else ""
    if kind == "type":
        names = expected if isinstance(expected, list) else [expected]
        return f"{where} must be of type {' or '.join(map(str, names))}, got {json_type_name(value)}"
    if kind == "required":
        missing = [k for k in expected if isinstance(value, dict) and k not in value]
        return f"missing required argument(s): {', '.join(repr(f'{prefix}{k}') for k in missing)}"
    if kind == "additionalProperties" and expected is False:
        known = list(error.schema.get("properties") or {})
        extra = [k for k in value if k not in known] if isinstance(value, dict) else []
        listed = ", ".join(repr(f"{prefix}{k}") for k in extra)
        return f"unknown argument{'s' if len(extra) > 1 else ''} {listed}; allowed: {', '.join(known) or 'none'}"
    if kind == "enum":
        return f"{where} must be one of {', '.join(_short(v) for v in expected)}, got {_short(value)}"
    if kind == "const":
        return f"{where} must be {_short(expected)}"
    if kind in ("minLength", "maxLength", "minItems", "maxItems"):
        unit = "character" if kind.endswith("Length") else "item"
        side = "at least" if kind.startswith("min") else "at most"
        return f"{where} must have {side} {expected} {unit}(s), got {len(value)}"
    words = {"minimum": "at least", "maximum": "at most", "exclusiveMinimum": "greater than",
             "exclusiveMaximum": "less than", "multipleOf": "a multiple of"}
    if kind in words:
        return f"{where} must be {words[kind]} {expected}, got {value}"
    if kind in ("anyOf", "oneOf"):
        if kind == "oneOf" and "is valid under each of" in error.message:
            return f"{where} matches more than one of the allowed forms; it must match exactly one"
        first = min(error.context, key=lambda e: len(e.path), default=None) if error.context else None
        detail = f" (e.g. {_message(first)})" if first is not None else ""
        return f"{where} matches none of the allowed forms{detail}"
    if kind == "pattern":
        return f"{where} must match the pattern {expected!r}, got {_short(value)}"
    if kind == "format":
        return f"{where} must be a valid {expected}, got {_short(value)}"
    return f"{where}: {error.message if len(error.message) <= 200 else error.message[:197] + '...'}"


def _order(error: Any) -> Tuple[int, int]:
    return (0 if error.validator == "required" else 1, len(error.absolute_path))


def validate(value: Any, schema: Mapping[str, Any], path: str = "", *, limit: int = 5) -> List[str]:
    """Check ``value`` against ``schema``; return up to ``limit`` problems (empty: valid).

    ``path`` names the value in messages (``"items[2].name"``); top-level arguments are named plainly.

    :raises ValueError: ``schema`` is not a valid JSON schema (see :func:`schema_problem`).
    """
    compiled = _compile(schema)
    if compiled.problem is not None:
        raise ValueError(f"the schema is broken: {compiled.problem}")
    if compiled.check is not None:
        try:
            compiled.check(value)
            return []
        except Exception as exc:  # fastjsonschema.JsonSchemaValueException: the data is invalid
            fallback = str(getattr(exc, "message", exc))
    else:
        fallback = ""
    errors = sorted(compiled.validator.iter_errors(value), key=_order)
    problems: List[str] = []
    for error in errors:
        text = _message(error)
        if path:
            text = text.replace("argument '", f"argument '{path}.", 1) if "argument '" in text else f"{path}: {text}"
        if text not in problems:
            problems.append(text)
        if len(problems) >= limit:
            break
    if not problems and fallback:
        problems.append(f"{_where(path)}: {fallback.replace('data', 'the value', 1)}")
    return problems



def check_arguments(
    schema: Optional[Mapping[str, Any]], raw: Union[str, Mapping[str, Any], None]
) -> Tuple[Optional[Dict[str, Any]], str]:
    """Decode ``raw`` and validate it against ``schema`` (``None``: no checking).

    Returns ``(arguments, "")`` or ``(None, problem)``, where ``problem`` joins every problem found. A
    broken schema is reported as such (the tool's fault, not the arguments').
    """
    args, problem = decode_arguments(raw)
    if args is None or not schema:
        return args, problem
    try:
        problems = validate(args, schema)
    except ValueError as exc:
        return None, f"the tool's own schema is broken, so it cannot be called ({exc}); tell the user"
    if problems:
        return None, "; ".join(problems)
    return args, ""
