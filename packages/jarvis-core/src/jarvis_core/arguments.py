"""The codec of a tool call's arguments, next to the value types: JSON text (as ``ToolCall.arguments`` holds
it) to a dict, with a problem the model can act on instead of an exception. Engines use it to read calls,
:mod:`jarvis_core.tools.schema` before it checks the arguments against the tool's schema.
"""

from __future__ import annotations

import json
from collections.abc import Mapping  # not typing.Mapping: its isinstance() is several times slower, per call
from typing import Any, Dict, Optional, Tuple, Union

__all__ = ["decode_arguments", "json_type_name"]


def json_type_name(value: Any) -> str:
    """The JSON type of a decoded value: ``string``, ``integer``, ``number``, ``boolean``, ``array``, …"""
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (list, tuple)):
        return "array"
    if isinstance(value, dict):
        return "object"
    if value is None:
        return "null"
    return type(value).__name__


def decode_arguments(raw: Union[str, Mapping[str, Any], None]) -> Tuple[Optional[Dict[str, Any]], str]:
    """A call's arguments as a dict: JSON text is decoded, a mapping is copied, empty means ``{}``.

    Returns ``(arguments, "")`` or ``(None, problem)``.
    """
    if raw is None:
        return {}, ""
    if isinstance(raw, Mapping):
        return dict(raw), ""
    if not raw.strip():
        return {}, ""
    try:
        args = json.loads(raw)
    except json.JSONDecodeError as exc:
        return None, f"the arguments are not valid JSON ({exc.msg} at position {exc.pos}); send a JSON object"
    if not isinstance(args, dict):
        return None, f"the arguments must be a JSON object, got {json_type_name(args)}"
    return args, ""
