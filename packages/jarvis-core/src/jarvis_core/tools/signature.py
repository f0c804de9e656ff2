"""A tool's JSON schema built from a function's signature and docstring (what :func:`~jarvis_core.tools.tool`
and :func:`~jarvis_core.tools.function_tool` use when no ``parameters`` are given).

Type hints map to JSON schema: ``str``, ``int``, ``float``, ``bool``, ``None``; ``list[X]``/``Sequence[X]``/
``tuple[X, ...]`` (arrays), ``dict[str, X]`` (objects), ``Literal[...]`` and ``enum.Enum`` subclasses (``enum``),
``Optional[X]`` and other unions, attrs classes (objects with their fields; the function receives an
instance), and ``Annotated[X, "description"]`` or ``Annotated[X, {"maxLength": 80}]`` (a description, or
keywords merged into X's schema). A parameter with a default is optional and its default is shown to the
model. The docstring's summary becomes the description and its argument section (Google, Sphinx/reST or
NumPy style, read with ``docstring_parser``) the parameters' descriptions.
"""

from __future__ import annotations

import collections.abc
import enum
import inspect
import json
import types
import typing
from typing import Any, Callable, Dict, List, Optional, Tuple

import attrs

from jarvis_core.errors import UsageError

__all__ = ["Signature", "schema_for_type", "signature_of"]

_SCALARS: Dict[Any, str] = {str: "string", int: "integer", float: "number", bool: "boolean", type(None): "null"}
_ARRAYS = (list, tuple, set, frozenset, collections.abc.Sequence, collections.abc.Iterable,
           collections.abc.Collection, collections.abc.Set)
_OBJECTS = (dict, collections.abc.Mapping)


@attrs.frozen
class Signature:
    """What a function's signature says about it as a tool.

    :param description: the docstring's summary and body (its argument section left out).
    :param parameters: the JSON schema of the keyword arguments.
    :param convert: argument name -> a function turning the JSON value into what the function takes (an attrs
        instance, an enum member); only the arguments that need it.
    """

    description: str
    parameters: Dict[str, Any]
    convert: Dict[str, Callable[[Any], Any]]


def signature_of(fn: Callable[..., Any], *, tool_name: str) -> Signature:
    """The schema, description and argument converters of ``fn``.

    :raises UsageError: a parameter is positional-only or ``*args``/``**kwargs``, or its type has no JSON
        schema (the message names the parameter and the type).
    """
    try:
        hints = typing.get_type_hints(fn, include_extras=True)
    except Exception as exc:
        raise UsageError(f"tool {tool_name!r}: its type hints cannot be resolved ({type(exc).__name__}: {exc})",
                         argument="fn") from exc
    docs, summary = _docstring(fn)
    properties: Dict[str, Any] = {}
    required: List[str] = []
    convert: Dict[str, Callable[[Any], Any]] = {}
    for name, param in inspect.signature(fn).parameters.items():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD, param.POSITIONAL_ONLY):
            raise UsageError(f"tool {tool_name!r}: parameter {name!r} must be a plain or keyword-only parameter "
                             "(the model passes arguments by name)", argument="fn")
        hint = hints.get(name, Any)
        try:
            schema = _schema(hint)
        except TypeError as exc:
            raise UsageError(f"tool {tool_name!r}: parameter {name!r}: {exc}", argument="fn") from None
        if docs.get(name) and "description" not in schema:
            schema["description"] = docs[name]
        if param.default is param.empty:
            required.append(name)
        elif _is_json(param.default):
            schema["default"] = _json(param.default)
        converter = _converter(hint)
        if converter is not None:
            convert[name] = converter
        properties[name] = schema
    parameters: Dict[str, Any] = {"type": "object", "properties": properties, "additionalProperties": False}
    if required:
        parameters["required"] = required
    return Signature(summary, parameters, convert)


def _docstring(fn: Callable[..., Any]) -> Tuple[Dict[str, str], str]:
    text = inspect.getdoc(fn) or ""
    if not text:
        return {}, ""
    import docstring_parser

    parsed = docstring_parser.parse(text)
    summary = "\n\n".join(p for p in (parsed.short_description, parsed.long_description) if p)
    return {p.arg_name: " ".join((p.description or "").split()) for p in parsed.params}, summary.strip()


def _is_json(value: Any) -> bool:
    if isinstance(value, enum.Enum):
        value = value.value
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return False
    return True


def _json(value: Any) -> Any:
    """A default as the model will see it (a tuple as a list, an enum member as its value)."""
    return json.loads(json.dumps(value.value if isinstance(value, enum.Enum) else value))


def schema_for_type(hint: Any) -> Dict[str, Any]:
    """The JSON schema of a type hint, by the mapping this module's docstring lists (structured output's
    ``schema=`` uses it too).

    :raises TypeError: a type with no JSON schema.
    """
    return _schema(hint)


def _schema(hint: Any) -> Dict[str, Any]:
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is Any or hint is inspect.Parameter.empty:
        return {}
    if origin is typing.Annotated:
        annotated = _schema(args[0])
        for meta in args[1:]:
            if isinstance(meta, str):
                annotated["description"] = meta
            elif isinstance(meta, dict):
                annotated.update(meta)
        return annotated
    if hint in _SCALARS:
        return {"type": _SCALARS[hint]}
    if origin is typing.Literal:
        kinds = {_SCALARS.get(type(v)) for v in args}
        schema: Dict[str, Any] = {"enum": list(args)}
        if len(kinds) == 1 and None not in kinds:
            schema["type"] = kinds.pop()
        return schema
    if origin is typing.Union or (hasattr(types, "UnionType") and isinstance(hint, types.UnionType)):
        branches = [_schema(a) for a in args]
        simple = [b.get("type") for b in branches]
        if all(isinstance(t, str) and len(b) == 1 for t, b in zip(simple, branches, strict=True)):
            return {"type": simple}
        return {"anyOf": branches}
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        values = [m.value for m in hint]
        return _schema(typing.Literal[tuple(values)])
    if attrs.has(hint):
        return _attrs_schema(hint)
    if origin in _ARRAYS or hint in _ARRAYS:
        if origin is tuple and args and args[-1] is not Ellipsis:
            return {"type": "array", "prefixItems": [_schema(a) for a in args], "minItems": len(args),
                    "maxItems": len(args)}
        return {"type": "array", "items": _schema(args[0])} if args else {"type": "array"}
    if origin in _OBJECTS or hint in _OBJECTS:
        if args and args[0] is not str:
            raise TypeError(f"{hint} has no JSON schema: JSON object keys are strings")
        return {"type": "object", "additionalProperties": _schema(args[1])} if args else {"type": "object"}
    raise TypeError(f"type {getattr(hint, '__name__', hint)!r} has no JSON schema (use str, int, float, bool, "
                    "a list, a dict, Literal, an Enum or an attrs class)")


def _attrs_schema(cls: type) -> Dict[str, Any]:
    hints = typing.get_type_hints(cls, include_extras=True)
    properties: Dict[str, Any] = {}
    required: List[str] = []
    for field in attrs.fields(cls):
        if not field.init:
            continue
        schema = _schema(hints.get(field.name, Any))
        if field.default is attrs.NOTHING:
            required.append(field.alias or field.name)
        elif not isinstance(field.default, attrs.Factory) and _is_json(field.default):  # type: ignore[arg-type]
            schema["default"] = _json(field.default)
        properties[field.alias or field.name] = schema
    out: Dict[str, Any] = {"type": "object", "properties": properties, "additionalProperties": False}
    if required:
        out["required"] = required
    doc = inspect.getdoc(cls)
    if doc and not doc.startswith(f"{cls.__name__}("):  # attrs' generated signature is no description
        out["description"] = doc.split("\n\n")[0]
    return out


def _mentions_structure(hint: Any) -> bool:
    if isinstance(hint, type) and (attrs.has(hint) or issubclass(hint, enum.Enum)):
        return True
    if typing.get_origin(hint) is typing.Literal:
        return False
    return any(_mentions_structure(a) for a in typing.get_args(hint) if a is not Ellipsis)


class _Structure:
    """Turns a JSON argument into its declared type with cattrs (a class, not a closure: a tool with
    ``isolation="process"`` is pickled to its child)."""

    def __init__(self, hint: Any) -> None:
        self.hint = hint

    def __call__(self, value: Any) -> Any:
        import cattrs

        return cattrs.structure(value, self.hint)


def _converter(hint: Any) -> Optional[Callable[[Any], Any]]:
    """Arguments of attrs classes and enums arrive as JSON: they are structured into the declared type."""
    return _Structure(hint) if _mentions_structure(hint) else None
