"""Checks of config values that are valid TOML of the right type but cannot work.

``[engine] default = "nonesuch"`` or a host with an unbalanced ``[`` load fine and fail only at the first
``jarvis ask``; ``jarvis config show`` is the documented way to find typos, so it runs these checks and
reports the first problem with the file, key and line (or the environment variable it came from).

Server addresses are checked wherever they come from: the file, a ``<KEY>_HOST`` variable, or a variable an
engine's schema names for an address field (the cloud engine's ``OPENAI_BASE_URL``). Two field metadata
keys let an engine's schema say how its addresses are read:

- :data:`METADATA_ENV`: the environment variable the engine reads when the field is not set in the file;
- :data:`METADATA_ADDRESS_CHECK`: a function ``check(value, source)`` raising
  :class:`~jarvis_core.errors.ConfigError` (its message naming ``source``) for an address the engine cannot
  use, for engines that accept more than ``http(s)://host[:port]`` (Ollama's ``:11434``). Without it the
  core's own URL rules apply.
"""

from __future__ import annotations

import os
from typing import Any, Callable, Dict, Mapping, Optional

import attrs

from jarvis_core.config.schema import JarvisConfig
from jarvis_core.errors import ConfigError

__all__ = ["METADATA_ADDRESS_CHECK", "METADATA_ENV", "check_values"]

#: Fields of ``[engine.<key>]`` tables that hold a server address.
_ADDRESS_FIELDS = ("host", "base_url", "openai_base_url", "anthropic_base_url", "gemini_base_url")
#: Field metadata: the environment variable an engine reads for this field when the file does not set it.
METADATA_ENV = "jarvis_env"
#: Field metadata: ``check(value, source)`` raising ConfigError for an address the engine cannot use.
METADATA_ADDRESS_CHECK = "jarvis_address_check"

AddressCheck = Callable[[str, str], Any]


def _where(config: JarvisConfig, key: str) -> tuple[Any, ...]:
    """``(path, line)`` for ``key``, or ``(description, None)`` when it came from the environment."""
    source = config.sources.get(key, "")
    path, _, line = source.rpartition(":")
    if path and line.isdigit():
        return path, int(line)
    return (source or config.path), None


def _error(config: JarvisConfig, key: str, message: str, suggestion: Optional[str] = None) -> ConfigError:
    path, line = _where(config, key)
    return ConfigError(message, path=path, key=key, line=line, suggestion=suggestion)


def _core_address_check(value: str, source: str) -> None:
    from jarvis_core.engine.transport import normalize_base_url

    try:
        normalize_base_url(value)
    except ConfigError as exc:
        raise ConfigError(str(exc).replace("invalid server address", f"{source}: invalid address"),
                          key=exc.key) from None


def _address_problem(schema: Any, field: str, value: Any, source: str) -> Optional[str]:
    """What is wrong with ``value`` as the address in ``field`` of ``schema`` (``source`` names where it
    came from in the message), or ``None``."""
    if not isinstance(value, str) or not value.strip():
        return None
    fields = attrs.fields_dict(schema) if attrs.has(schema) else {}
    check = fields[field].metadata.get(METADATA_ADDRESS_CHECK) if field in fields else None
    try:
        (check or _core_address_check)(value, source)
    except ConfigError as exc:
        return str(exc)
    return None


def _schema_of(config: JarvisConfig, registry: Any, name: str) -> Any:
    """The schema class of ``[engine.<name>]``: the loaded table's, else the one its plugin registered."""
    section = config.engine.sections.get(name)
    if section is not None:
        return type(section)
    registration = registry.items("config_section").get(f"engine.{name}")
    if registration is None:
        return None
    from jarvis_core.config.plugin_sections import schema_of

    return schema_of(registration, f"engine.{name}")


def check_values(config: JarvisConfig, registry: Any = None, environ: Optional[Mapping[str, str]] = None) -> None:
    """Raise :class:`ConfigError` for the first value that cannot work: an engine that is not installed,
    a server address that is not a URL (or whose port is out of range), in the file or in the environment
    (``environ``, default ``os.environ``)."""
    from jarvis_core.config.validation import nearest
    from jarvis_core.engine.factory import left_out_plugins

    if registry is None:
        from jarvis_core.plugins.registry import get_registry

        registry = get_registry()
    env = os.environ if environ is None else environ
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
            key = f"engine.{name}.{field}"
            if config.sources.get(key, "").startswith("env "):
                continue  # the environment overrides it; checked below
            problem = _address_problem(type(section), field, getattr(section, field, None), key)
            if problem:
                raise _error(config, key, problem)
    schemas: Dict[str, Any] = {}
    for name, (var, value, field) in config.env_hosts.items():
        schemas[name] = schema = _schema_of(config, registry, name)
        problem = _address_problem(schema, field, value, f"${var}")
        if problem:
            raise ConfigError(f"{problem} (set in the environment)", key=var)
    for name in engines:
        schema = schemas[name] if name in schemas else _schema_of(config, registry, name)
        if schema is None or not attrs.has(schema):
            continue
        section = config.engine.sections.get(name)
        for field in attrs.fields(schema):
            var = field.metadata.get(METADATA_ENV)
            if not var or (section is not None and getattr(section, field.name, None) is not None):
                continue  # no variable, or the file's value wins
            problem = _address_problem(schema, field.name, env.get(var, "").strip(), f"${var}")
            if problem:
                raise ConfigError(f"{problem} (set in the environment)", key=var)
