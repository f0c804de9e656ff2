"""The hand-written JSON-schema checker that jarvis_core.tools.schema used before it moved to fastjsonschema
and jsonschema, kept verbatim (its ``validate``; ``json_type_name`` is still jarvis's) as the reference that ``bench_tool_args.py`` measures the
new validator against in the same run."""

from __future__ import annotations

import json
from collections.abc import Mapping  # not typing.Mapping: its isinstance() is several times slower, per call
from typing import Any, Dict, List, Tuple, Union

from jarvis_core.tools.schema import json_type_name  # unchanged by the move

__all__ = ["validate"]

_TYPES: Dict[str, Tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list, tuple),
    "object": (dict,),
    "null": (type(None),),
}


def _is_type(value: Any, name: str) -> bool:
    if isinstance(value, bool):
        return name == "boolean"
    return isinstance(value, _TYPES.get(name, ()))


def _where(path: str) -> str:
    return f"argument {path!r}" if path else "the arguments"


def validate(value: Any, schema: Mapping[str, Any], path: str = "", *, limit: int = 5) -> List[str]:
    """Check ``value`` against ``schema``; return up to ``limit`` problems (empty: valid).

    ``path`` names the value in messages (``"items[2].name"``); top-level arguments are named plainly.
    """
    problems: List[str] = []
    _check(value, schema, path, problems, limit)
    return problems[:limit]


def _check(value: Any, schema: Any, path: str, out: List[str], limit: int) -> None:
    if len(out) >= limit or not isinstance(schema, Mapping):
        return
    where = _where(path)
    for key in ("anyOf", "oneOf"):
        branches = schema.get(key)
        if isinstance(branches, list) and branches:
            if not any(not validate(value, b, path, limit=1) for b in branches):
                first = validate(value, branches[0], path, limit=1)
                detail = f" (e.g. {first[0]})" if first else ""
                out.append(f"{where} matches none of the allowed forms{detail}")
                return
    expected = schema.get("type")
    if expected is not None:
        names = expected if isinstance(expected, list) else [expected]
        if not (_is_type(value, expected) if isinstance(expected, str)  # the usual case, checked on every call
                else any(_is_type(value, str(n)) for n in names)):
            out.append(f"{where} must be of type {' or '.join(map(str, names))}, got {json_type_name(value)}")
            return
    if "const" in schema and value != schema["const"]:
        out.append(f"{where} must be {json.dumps(schema['const'])}")
        return
    enum = schema.get("enum")
    if isinstance(enum, list) and value not in enum:
        allowed = ", ".join(json.dumps(v) for v in enum)
        out.append(f"{where} must be one of {allowed}, got {json.dumps(value, default=str)}")
        return
    if isinstance(value, str):
        _check_length(value, schema, where, out, "character")
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        _check_range(value, schema, where, out)
    elif isinstance(value, (list, tuple)):
        _check_length(value, schema, where, out, "item", lo="minItems", hi="maxItems")
        items = schema.get("items")
        if isinstance(items, Mapping):
            for i, item in enumerate(value):
                _check(item, items, f"{path}[{i}]", out, limit)
    elif isinstance(value, dict):
        _check_object(value, schema, path, out, limit)


def _check_length(value: Any, schema: Mapping[str, Any], where: str, out: List[str], unit: str,
                  lo: str = "minLength", hi: str = "maxLength") -> None:
    low, high = schema.get(lo), schema.get(hi)
    if isinstance(low, int) and len(value) < low:
        out.append(f"{where} must have at least {low} {unit}(s), got {len(value)}")
    elif isinstance(high, int) and len(value) > high:
        out.append(f"{where} must have at most {high} {unit}(s), got {len(value)}")


def _check_range(value: Union[int, float], schema: Mapping[str, Any], where: str, out: List[str]) -> None:
    checks = (
        ("minimum", lambda b: value >= b, "at least"),
        ("maximum", lambda b: value <= b, "at most"),
        ("exclusiveMinimum", lambda b: value > b, "greater than"),
        ("exclusiveMaximum", lambda b: value < b, "less than"),
    )
    for key, ok, words in checks:
        bound = schema.get(key)
        if isinstance(bound, (int, float)) and not isinstance(bound, bool) and not ok(bound):
            out.append(f"{where} must be {words} {bound}, got {value}")
            return


def _check_object(value: Dict[str, Any], schema: Mapping[str, Any], path: str, out: List[str], limit: int) -> None:
    props = schema.get("properties")
    props = props if isinstance(props, Mapping) else {}
    prefix = f"{path}." if path else ""
    missing = [k for k in schema.get("required") or () if k not in value]
    if missing:
        names = ", ".join(repr(f"{prefix}{k}") for k in missing)
        out.append(f"missing required argument(s): {names}")
    extra_schema = schema.get("additionalProperties", True)
    for key, item in value.items():
        if key in props:
            _check(item, props[key], f"{prefix}{key}", out, limit)
        elif extra_schema is False:
            known = ", ".join(props) or "none"
            out.append(f"unknown argument {prefix}{key!r}; allowed: {known}")
