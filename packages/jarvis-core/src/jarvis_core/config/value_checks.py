"""Checks of config values that are valid TOML of the right type but cannot work.

``[engine] default = "nonesuch"`` or a host with an unbalanced ``[`` load fine and fail only at the first
``jarvis ask``; ``jarvis config show`` is the documented way to find typos, so it runs these checks and
reports the first problem with the file, key and line (or the environment variable it came from).
"""

from __future__ import annotations

from typing import Any, Optional

import attrs

from jarvis_core.config.schema import JarvisConfig
from jarvis_core.errors import ConfigError

__all__ = ["check_values"]

#: Fields of ``[engine.<key>]`` tables that hold a server address.
_ADDRESS_FIELDS = ("host", "base_url", "openai_base_url", "anthropic_base_url", "gemini_base_url")


def _where(config: JarvisConfig, key: str) -> tuple:
    """``(path, line)`` for ``key``, or ``(description, None)`` when it came from the environment."""
    source = config.sources.get(key, "")
    path, _, line = source.rpartition(":")
    if path and line.isdigit():
        return path, int(line)
    return (source or config.path), None


def _error(config: JarvisConfig, key: str, message: str, suggestion: Optional[str] = None) -> ConfigError:
    path, line = _where(config, key)
    return ConfigError(message, path=path, key=key, line=line, suggestion=suggestion)


def check_values(config: JarvisConfig, registry: Any = None) -> None:
    """Raise :class:`ConfigError` for the first value that cannot work: an engine that is not installed,
    a server address that is not a URL (or whose port is out of range)."""
    from jarvis_core.config.validation import nearest
    from jarvis_core.engine.factory import left_out_plugins
    from jarvis_core.engine.http import normalize_base_url

    if registry is None:
        from jarvis_core.plugins.registry import get_registry

        registry = get_registry()
    engines = sorted(registry.items("engine"))
    default = config.engine.default
    if default and default not in engines:
        raise _error(config, "engine.default",
                     f"engine.default names {default!r}, which is not an installed engine; installed: "
                     f"{', '.join(engines) or 'none'}{left_out_plugins()}", nearest(default, engines))
    for name, section in config.engine.sections.items():
        if not attrs.has(type(section)):
            continue
        for field in _ADDRESS_FIELDS:
            value = getattr(section, field, None)
            if not isinstance(value, str) or not value.strip():
                continue
            key = f"engine.{name}.{field}"
            try:
                normalize_base_url(value)
            except ConfigError as exc:
                raise _error(config, key, str(exc).replace("invalid server address", f"{key}: invalid address")) from None
