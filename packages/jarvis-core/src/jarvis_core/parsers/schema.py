"""Tool schemas as the parsers need them, and typing of string-valued arguments by schema.

``tools`` may be :class:`~jarvis_core.types.ToolSpec` objects, OpenAI tool dicts
(``{"type": "function", "function": {...}}``) or bare function dicts; anything else is ignored.
"""

from __future__ import annotations

import ast
import json
from typing import Any, Dict, Iterable, Mapping, Optional

__all__ = ["convert_glm_value", "convert_qwen_value", "param_type", "tool_schemas"]


def tool_schemas(tools: Any) -> Dict[str, Mapping[str, Any]]:
    """``{tool name: {param name: param schema}}`` for the given tools (empty when there are none)."""
    out: Dict[str, Mapping[str, Any]] = {}
    if not tools:
        return out
    if isinstance(tools, Mapping):
        tools = [tools]
    for tool in tools if isinstance(tools, Iterable) else ():
        name, params = _name_and_params(tool)
        if name:
            props = params.get("properties") if isinstance(params, Mapping) else None
            out[name] = props if isinstance(props, Mapping) else {}
    return out


def _name_and_params(tool: Any) -> tuple[Any, ...]:
    if isinstance(tool, Mapping):
        fn = tool.get("function", tool)
        if isinstance(fn, Mapping):
            return fn.get("name"), fn.get("parameters") or {}
        return None, {}
    return getattr(tool, "name", None), getattr(tool, "parameters", None) or {}


def param_type(schema: Optional[Mapping[str, Any]]) -> Optional[str]:
    """The primary JSON type of a parameter schema (first non-null of ``type`` lists / ``anyOf``)."""
    if not isinstance(schema, Mapping):
        return None
    t = schema.get("type")
    if isinstance(t, str):
        return t.strip().lower()
    if isinstance(t, list):
        types = [str(x).lower() for x in t if str(x).lower() != "null"]
        return types[0] if types else "null"
    for key in ("anyOf", "oneOf"):
        options = schema.get(key)
        if isinstance(options, list):
            for option in options:
                found = param_type(option)
                if found and found != "null":
                    return found
    if "enum" in schema:
        return "string"
    if "properties" in schema:
        return "object"
    return None


def _literal(text: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        pass
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        raise ValueError("not a literal") from None


def _jsonable(value: Any) -> bool:
    try:
        json.dumps(value)
        return True
    except (TypeError, ValueError, RecursionError):
        return False


def convert_qwen_value(value: str, schema: Optional[Mapping[str, Any]], has_schema: bool) -> Any:
    """Type one ``qwen3_xml`` parameter value (raw text) by its schema; without a schema it stays a string."""
    if value.lower() == "null" and has_schema:
        return None
    kind = param_type(schema) if has_schema else None
    if kind is None or kind in ("string", "str", "text", "varchar", "char", "enum"):
        return value
    if kind.startswith(("int", "uint", "long", "short", "unsigned")):
        try:
            return int(value.strip())
        except ValueError:
            return value
    if kind.startswith(("num", "float", "double")):
        try:
            number = float(value.strip())
        except ValueError:
            return value
        if number.is_integer() and not any(c in value for c in ".eE"):
            return int(number)
        return number
    if kind in ("boolean", "bool", "binary"):
        return value.strip().lower() == "true"
    try:
        decoded = _literal(value.strip())
    except ValueError:
        return value
    return decoded if _jsonable(decoded) else value


def convert_glm_value(value: str, schema: Optional[Mapping[str, Any]]) -> Any:
    """Type one GLM ``<arg_value>``: schema type string keeps the raw text, anything else is decoded
    (JSON, then a Python literal) and falls back to the raw text, with or without a schema."""
    if param_type(schema) == "string":
        return value
    try:
        decoded = _literal(value.strip())
    except ValueError:
        return value
    return decoded if _jsonable(decoded) else value
