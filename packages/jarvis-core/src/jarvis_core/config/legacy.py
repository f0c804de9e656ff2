"""Config keys from OpenJarvis-style files, still accepted, each with a warning naming its new home: the flat
engine keys (at the top level or under ``[engine]``) and the managed-mode keys of ``[engine.llamacpp]``."""

from __future__ import annotations

import warnings
from typing import Any, Dict, Tuple

from jarvis_core.config.toml_source import TomlSource
from jarvis_core.config.validation import dotted, type_error
from jarvis_core.errors import ConfigError

__all__ = ["LEGACY_KEYS", "MANAGED_LLAMACPP_KEYS", "ConfigDeprecationWarning", "migrate_legacy_keys"]

#: Flat top-level key -> (engine key, field) of its ``[engine.<key>]`` replacement.
LEGACY_KEYS: Dict[str, Tuple[str, str]] = {
    "ollama_host": ("ollama", "host"),
    "vllm_host": ("vllm", "host"),
    "llamacpp_host": ("llamacpp", "host"),
    "sglang_host": ("sglang", "host"),
    "llamacpp_path": ("embedded", "binary_path"),
}


class ConfigDeprecationWarning(FutureWarning):
    """A deprecated config key was used.

    A ``FutureWarning`` rather than a ``DeprecationWarning``: Python hides the latter outside ``__main__``,
    and this warning is meant for the person who wrote the config file, not for a developer.
    """


#: ``[engine.llamacpp]`` keys of OpenJarvis's managed mode -> their ``[engine.embedded]`` field: the server jarvis
#: starts itself is the ``embedded`` engine (``llamacpp`` connects to a server that is already running).
MANAGED_LLAMACPP_KEYS: Dict[str, str] = {"binary_path": "binary_path", "model_path": "model_path"}


def migrate_legacy_keys(src: TomlSource) -> None:
    """Move legacy keys of ``src.data`` into their ``[engine.<key>]`` tables, warning for each: the flat keys
    at the top level or under ``[engine]`` (both spellings OpenJarvis files use), and the managed-mode keys
    of ``[engine.llamacpp]`` (into ``[engine.embedded]``).

    A legacy key and its replacement both set to different values is an error (which one was meant?).
    """
    data = src.data
    engine = data.get("engine")
    for legacy, (engine_key, field) in LEGACY_KEYS.items():
        if legacy in data:
            _move(src, data, (legacy,), engine_key, field)
        if isinstance(engine, dict) and legacy in engine:
            _move(src, engine, ("engine", legacy), engine_key, field)
    llamacpp = engine.get("llamacpp") if isinstance(engine, dict) else None
    if isinstance(llamacpp, dict):
        for key, field in MANAGED_LLAMACPP_KEYS.items():
            if key in llamacpp:
                _move(src, llamacpp, ("engine", "llamacpp", key), "embedded", field,
                      why="managed mode is the 'embedded' engine; ")


def _move(src: TomlSource, table: Dict[str, Any], old_path: Tuple[str, ...], engine_key: str, field: str,
          *, why: str = "") -> None:
    legacy = old_path[-1]
    value = table.pop(legacy)
    line = src.line_of(old_path)
    new_path = ("engine", engine_key, field)
    if not isinstance(value, str):
        raise type_error(src, old_path, "a string", value)
    data = src.data
    engine = data.setdefault("engine", {})
    if not isinstance(engine, dict):
        raise type_error(src, ("engine",), "a table", engine)
    section: Any = engine.setdefault(engine_key, {})
    if not isinstance(section, dict):
        raise type_error(src, ("engine", engine_key), "a table", section)
    new_key = f"[engine.{engine_key}] {field}"
    old_key = dotted(old_path)
    if field in section and section[field] != value:
        raise ConfigError(
            f"both the deprecated key {old_key!r} and {new_key} are set, to different values; "
            f"delete {old_key!r} (line {line})",
            path=src.path, key=old_key, line=src.line_of(new_path),
        )
    section[field] = value
    for end in range(1, len(new_path) + 1):
        if line is not None:
            src.lines.setdefault(new_path[:end], line)
    where = f"{src.path}:{line}: " if src.path and line else ""
    warnings.warn(
        f"{where}config key {old_key!r} is deprecated; {why}write it as {new_key} = {value!r} "
        f"(key {dotted(new_path)})",
        ConfigDeprecationWarning,
        stacklevel=4,
    )
