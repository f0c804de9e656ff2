"""Flat config keys from OpenJarvis-style files, still accepted, each with a warning naming its new home."""

from __future__ import annotations

import warnings
from typing import Any, Dict, Tuple

from jarvis_core.config.toml_source import TomlSource
from jarvis_core.config.validation import dotted, type_error
from jarvis_core.errors import ConfigError

__all__ = ["LEGACY_KEYS", "ConfigDeprecationWarning", "migrate_legacy_keys"]

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


def migrate_legacy_keys(src: TomlSource) -> None:
    """Move legacy flat keys of ``src.data`` into their ``[engine.<key>]`` tables, warning for each.

    A legacy key and its replacement both set to different values is an error (which one was meant?).
    """
    data = src.data
    for legacy, (engine_key, field) in LEGACY_KEYS.items():
        if legacy not in data:
            continue
        value = data.pop(legacy)
        line = src.line_of((legacy,))
        new_path = ("engine", engine_key, field)
        if not isinstance(value, str):
            raise type_error(src, (legacy,), "a string", value)
        engine = data.setdefault("engine", {})
        if not isinstance(engine, dict):
            raise type_error(src, ("engine",), "a table", engine)
        section: Any = engine.setdefault(engine_key, {})
        if not isinstance(section, dict):
            raise type_error(src, ("engine", engine_key), "a table", section)
        new_key = f"[engine.{engine_key}] {field}"
        if field in section and section[field] != value:
            raise ConfigError(
                f"both the deprecated key {legacy!r} and {new_key} are set, to different values; "
                f"delete {legacy!r} (line {line})",
                path=src.path, key=legacy, line=src.line_of(new_path),
            )
        section[field] = value
        for end in range(1, len(new_path) + 1):
            if line is not None:
                src.lines.setdefault(new_path[:end], line)
        where = f"{src.path}:{line}: " if src.path and line else ""
        warnings.warn(
            f"{where}config key {legacy!r} is deprecated; write it as {new_key} = {value!r} "
            f"(key {dotted(new_path)})",
            ConfigDeprecationWarning,
            stacklevel=3,
        )
