"""Structuring TOML tables into attrs classes, strictly, with errors that point at the file and line.

The cattrs converter forbids unknown keys and checks types exactly: TOML values are already typed, so a
string where a number belongs is the user's mistake, not something to coerce (cattrs' default would turn
``"false"`` into ``True``). Errors name the dotted key, the file, the line of the key and, for an unknown
key, the nearest valid one (:mod:`difflib`).
"""

from __future__ import annotations

import difflib
import re
import sys
import typing
from typing import Any, Dict, Iterable, Optional, Sequence, Tuple, Type, TypeVar

import attrs
import cattrs
from cattrs.errors import (
    AttributeValidationNote,
    ClassValidationError,
    ForbiddenExtraKeysError,
    IterableValidationError,
    IterableValidationNote,
)

from jarvis_core.config.toml_source import KeyPath, TomlSource
from jarvis_core.errors import ConfigError

if sys.version_info < (3, 11):  # pragma: no cover
    from exceptiongroup import BaseExceptionGroup

__all__ = ["dotted", "make_converter", "nearest", "structure_table", "type_error", "unknown_key_error"]

T = TypeVar("T")

_TYPE_NAMES = {str: "a string", int: "an integer", float: "a number", bool: "true or false"}


def dotted(path: Sequence[str]) -> str:
    """``("model_defaults", "qwen3*", "top_k")`` → ``model_defaults."qwen3*".top_k`` (TOML spelling)."""
    parts = []
    for part in path:
        bare = part.replace("_", "").replace("-", "").isalnum() and part.isascii()
        parts.append(part if bare else '"' + part.replace('"', '\\"') + '"')
    return ".".join(parts)


def nearest(name: str, valid: Iterable[str]) -> Optional[str]:
    """The valid name closest to ``name``, if any is close enough to be a likely typo."""
    matches = difflib.get_close_matches(name, list(valid), n=1, cutoff=0.6)
    if matches:
        return matches[0]
    lowered = {v.lower(): v for v in valid}
    return lowered.get(name.lower())


def describe_type(tp: Any) -> str:
    """A user-facing name for a type annotation: ``Optional[float]`` → ``a number``."""
    if tp in _TYPE_NAMES:
        return _TYPE_NAMES[tp]
    origin = typing.get_origin(tp)
    args = [a for a in typing.get_args(tp) if a is not type(None)]
    if origin is typing.Union or (sys.version_info >= (3, 10) and type(tp).__name__ == "UnionType"):
        return " or ".join(describe_type(a) for a in args) if args else "nothing"
    if origin in (list, tuple, typing.Sequence, Sequence) or tp in (list, tuple):
        return "an array"
    if origin in (dict, typing.Mapping) or tp is dict or attrs.has(tp):
        return "a table"
    return getattr(tp, "__name__", str(tp))


def _value_repr(value: Any) -> str:
    kind = {str: "a string", bool: "a boolean", int: "an integer", float: "a number", dict: "a table",
            list: "an array"}.get(type(value), type(value).__name__)
    text = repr(value)
    return kind if len(text) > 40 else f"{kind} ({text})"


def _strict(tp: type) -> Any:
    def structure(value: Any, _: Any) -> Any:
        ok = isinstance(value, tp) and not (tp is not bool and isinstance(value, bool))
        if tp is float and isinstance(value, int) and not isinstance(value, bool):
            return float(value)
        if not ok:
            raise _TypeMismatch(tp, value)
        return value

    return structure


class _TypeMismatch(TypeError):
    def __init__(self, expected: Any, value: Any) -> None:
        self.expected = expected
        self.value = value
        super().__init__(f"expected {describe_type(expected)}, got {_value_repr(value)}")


def make_converter() -> cattrs.Converter:
    """A cattrs converter that forbids unknown keys and never coerces between TOML types."""
    conv = cattrs.Converter(forbid_extra_keys=True, detailed_validation=True)
    for tp in (str, int, float, bool):
        conv.register_structure_hook(tp, _strict(tp))
    return conv


_CONVERTER = make_converter()


def unknown_key_error(src: TomlSource, path: KeyPath, valid: Iterable[str], *, what: str = "key") -> ConfigError:
    """The error for an unknown key at ``path``, suggesting the nearest of ``valid`` (same table)."""
    valid = list(valid)
    guess = nearest(path[-1], valid)
    listing = ", ".join(sorted(valid)) if valid else "none"
    return ConfigError(
        f"unknown {what} {dotted(path)!r}; valid here: {listing}",
        path=src.path, key=dotted(path), line=src.line_of(path),
        suggestion=dotted((*path[:-1], guess)) if guess else None,
    )


def type_error(src: TomlSource, path: KeyPath, expected: str, value: Any) -> ConfigError:
    """The error for a value of the wrong type at ``path``."""
    return ConfigError(
        f"wrong type for {dotted(path)!r}: expected {expected}, got {_value_repr(value)}",
        path=src.path, key=dotted(path), line=src.line_of(path),
    )


def structure_table(src: TomlSource, table: Any, cls: Type[T], path: KeyPath) -> T:
    """Structure the TOML ``table`` found at ``path`` into ``cls``; raise the first problem as ConfigError."""
    if not isinstance(table, dict):
        raise type_error(src, path, "a table", table)
    try:
        return _CONVERTER.structure(table, cls)
    except (ClassValidationError, IterableValidationError, ForbiddenExtraKeysError, TypeError, ValueError) as exc:
        problems = list(_leaves(exc, path, cls))
    if not problems:  # pragma: no cover - cattrs always reports at least one leaf
        raise ConfigError(f"invalid table {dotted(path)!r}", path=src.path, key=dotted(path), line=src.line_of(path))
    # Report the problem that comes first in the file, so fixing errors top to bottom works.
    problems = [_attribute_to_key(p, table, path) for p in problems]
    problems.sort(key=lambda p: (src.line_of(p[0]) or 0, p[0]))
    first_path, error, owner = problems[0]
    return_error = _to_config_error(src, first_path, error, owner)
    if len(problems) > 1:
        return_error.args = (f"{return_error.args[0]} (and {len(problems) - 1} more problem(s) in this file)",)
    raise return_error


def _attribute_to_key(
    problem: Tuple[KeyPath, BaseException, Any], table: Dict[str, Any], path: KeyPath
) -> Tuple[KeyPath, BaseException, Any]:
    """A class-level failure (an attrs validator) whose message names exactly one key of the table is
    reported at that key's line rather than at the table header."""
    where, error, owner = problem
    if where != path or isinstance(error, ForbiddenExtraKeysError):
        return problem
    named = [k for k in table if re.search(rf"\b{re.escape(k)}\b", str(error))]
    return ((*path, named[0]), error, owner) if len(named) == 1 else problem


def _leaves(exc: BaseException, path: KeyPath, owner: Any) -> Iterable[Tuple[KeyPath, BaseException, Any]]:
    """Flatten cattrs' nested exception groups into (key path, leaf error, owning class)."""
    if isinstance(exc, ForbiddenExtraKeysError):
        for name in sorted(exc.extra_fields):
            yield (*path, name), exc, exc.cl
        return
    if isinstance(exc, BaseExceptionGroup):
        cl = getattr(exc, "cl", owner)
        for sub in exc.exceptions:
            sub_path = path
            for note in getattr(sub, "__notes__", ()):
                if isinstance(note, AttributeValidationNote):
                    sub_path = (*path, note.name)
                elif isinstance(note, IterableValidationNote):
                    sub_path = (*path, str(note.index))
            yield from _leaves(sub, sub_path, cl)
        return
    yield path, exc, owner


def _to_config_error(src: TomlSource, path: KeyPath, error: BaseException, owner: Any) -> ConfigError:
    if isinstance(error, ForbiddenExtraKeysError):
        valid = [f.name for f in attrs.fields(owner)] if attrs.has(owner) else []
        return unknown_key_error(src, path, valid)
    if isinstance(error, _TypeMismatch):
        return type_error(src, path, describe_type(error.expected), error.value)
    expected = _field_type(owner, path[-1]) if path else None
    if expected is not None and isinstance(error, (TypeError, ValueError)) and _looks_like_type_error(error):
        return ConfigError(
            f"wrong type for {dotted(path)!r}: expected {describe_type(expected)} ({error})",
            path=src.path, key=dotted(path), line=src.line_of(path),
        )
    return ConfigError(
        f"invalid value for {dotted(path)!r}: {error}", path=src.path, key=dotted(path), line=src.line_of(path)
    )


def _looks_like_type_error(error: BaseException) -> bool:
    text = str(error)
    return isinstance(error, TypeError) or "could not convert" in text or "invalid literal" in text


def _field_type(owner: Any, name: str) -> Any:
    if not attrs.has(owner):
        return None
    try:
        hints = typing.get_type_hints(owner)
    except Exception:
        hints = {}
    if name in hints:
        return hints[name]
    for field in attrs.fields(owner):
        if field.name == name:
            return field.type
    return None

