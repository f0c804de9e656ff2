"""``load_config``: file → TOML → legacy keys migrated → strict attrs structure → environment overrides.

Loading never probes hardware or networks and is not cached: call it again to see an edited file. It
imports no engine code: only the schema classes of the ``[engine.<key>]`` tables the file actually has.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, Mapping, Optional, Tuple, Union

import attrs

from jarvis_core.config.legacy import LEGACY_KEYS, migrate_legacy_keys
from jarvis_core.config.paths import CONFIG_ENV, config_path, is_explicit
from jarvis_core.config.plugin_sections import load_plugin_sections, plugin_roots, schema_of
from jarvis_core.config.schema import (
    AgentConfig,
    EngineSettings,
    GenericEngineConfig,
    JarvisConfig,
    LogSettings,
    ModelDefaultsRule,
    PluginSettings,
    env_var_for,
)
from jarvis_core.config.toml_source import KeyPath, TomlSource, parse_toml
from jarvis_core.config.validation import dotted, nearest, structure_table, type_error, unknown_key_error
from jarvis_core.errors import ConfigError

if TYPE_CHECKING:
    from jarvis_core.plugins.registry import Registry

__all__ = ["ENGINE_ENV", "ConfigWarning", "load_config"]

#: Environment variable naming the default engine (beats ``[engine] default``).
ENGINE_ENV = "JARVIS_ENGINE"

_TOP_LEVEL = ("engine", "agent", "agents", "tools", "model_defaults", "plugins", "log", "aliases", "retry")


class ConfigWarning(UserWarning):
    """Something in the config is suspicious but usable (e.g. a table for an engine that is not installed)."""


@attrs.frozen
class _EngineScalars:
    default: Optional[str] = None
    model: Optional[str] = None
    fallback: bool = False
    auto_embedded: bool = True


def load_config(
    path: Union[str, os.PathLike[str], None] = None,
    *,
    environ: Optional[Mapping[str, str]] = None,
    registry: Optional[Registry] = None,
) -> JarvisConfig:
    """Load the effective configuration.

    :param path: the file to read; ``None`` uses :func:`~jarvis_core.config.config_path` (``$JARVIS_CONFIG``,
        ``$JARVIS_HOME/config.toml`` or ``~/.jarvis/config.toml``). A missing default file means defaults;
        a missing file that was named explicitly is an error.
    :param environ: the environment to read overrides from (default ``os.environ``).
    :param registry: the plugin registry that supplies ``[engine.<key>]`` schemas (default: the process's).
    :raises ConfigError: syntax error, unknown key, wrong type; the message names file, key and line.
    """
    env = os.environ if environ is None else environ
    src = _read_source(path, env)
    reg = registry
    if reg is None:
        from jarvis_core.plugins.registry import get_registry

        reg = get_registry()

    migrate_legacy_keys(src)
    data = src.data
    roots = plugin_roots(reg)
    for key in data:
        if key not in _TOP_LEVEL and key not in roots:
            raise unknown_key_error(src, (key,), [*_TOP_LEVEL, *roots, *LEGACY_KEYS])

    engine = _load_engine(src, data.get("engine", {}), reg)
    agent = structure_table(src, data.get("agent", {}), AgentConfig, ("agent",))
    agents = _tables_of_tables(src, data.get("agents", {}), "agents")
    tools = _tables_of_tables(src, data.get("tools", {}), "tools")
    model_defaults = _load_model_defaults(src, data.get("model_defaults", {}), reg)
    plugins = structure_table(src, data.get("plugins", {}), PluginSettings, ("plugins",))
    plugin_sections = load_plugin_sections(src, data, reg)
    log = structure_table(src, data.get("log", {}), LogSettings, ("log",))
    aliases = _load_aliases(src, data.get("aliases", {}))
    retry = _load_retry(src, data.get("retry", {}))

    sources = {dotted(p): f"{src.path}:{line}" for p, line in src.lines.items() if src.path}
    default_engine = os.fspath(env.get(ENGINE_ENV, "")).strip()
    if default_engine:
        engine = attrs.evolve(engine, default=default_engine)
        sources["engine.default"] = f"env {ENGINE_ENV}"
    env_hosts = _env_hosts(engine, env, reg)
    for key, (var, _, option) in env_hosts.items():
        sources[dotted(("engine", key, option))] = f"env {var}"
    return JarvisConfig(
        engine=engine, agent=agent, agents=agents, tools=tools, model_defaults=model_defaults, path=src.path,
        env_hosts=env_hosts, sources=sources, plugins=plugins, plugin_sections=plugin_sections, log=log,
        aliases=aliases, retry=retry,
    )


def _load_aliases(src: TomlSource, table: Any) -> Dict[str, Any]:
    """``[aliases]``: each entry is a model id, or a table ``{model, engine, options}``."""
    from jarvis_core.aliases import ModelAlias

    if not isinstance(table, dict):
        raise type_error(src, ("aliases",), "a table of aliases", table)
    out: Dict[str, Any] = {}
    for name, value in table.items():
        path = ("aliases", name)
        if isinstance(value, str):
            value = {"model": value}
        if not isinstance(value, dict):
            raise type_error(src, path, 'a model id or a table { model = "...", engine = "...", options = {...} }',
                             value)
        out[name] = structure_table(src, value, ModelAlias, path)
    return out


def _load_retry(src: TomlSource, table: Any) -> Any:
    """``[retry]``: settings for every engine, and ``[retry.<engine>]`` tables over them."""
    from jarvis_core.retry.settings import RetryConfig, RetrySettings

    if not isinstance(table, dict):
        raise type_error(src, ("retry",), "a table", table)

    def targets(value: Dict[str, Any], path: KeyPath) -> Dict[str, Any]:
        items = value.get("fallbacks")
        if not isinstance(items, list):
            return value
        for i, item in enumerate(items):
            if not isinstance(item, (str, dict)):
                raise type_error(src, (*path, "fallbacks"), 'engine keys or { engine = "...", model = "..." } '
                                 f"tables (item {i + 1} is not)", item)
        return {**value, "fallbacks": [{"engine": t} if isinstance(t, str) else t for t in items]}

    table = {k: targets(v, ("retry", k)) if isinstance(v, dict) else v for k, v in table.items()}
    table = targets(table, ("retry",))
    common = {k: v for k, v in table.items() if not isinstance(v, dict)}
    default = structure_table(src, common, RetrySettings, ("retry",))
    engines = {key: structure_table(src, {**common, **value}, RetrySettings, ("retry", key))
               for key, value in table.items() if isinstance(value, dict)}
    return RetryConfig(default=default, engines=engines)


def _tables_of_tables(src: TomlSource, table: Any, name: str) -> Dict[str, Dict[str, Any]]:
    """``[agents.<key>]`` / ``[tools.<key>]``: each entry must be a table; its keys are checked by the agent or
    tool that reads them."""
    if not isinstance(table, dict):
        raise type_error(src, (name,), "a table of tables", table)
    out: Dict[str, Dict[str, Any]] = {}
    for key, value in table.items():
        if not isinstance(value, dict):
            raise type_error(src, (name, key), "a table", value)
        out[key] = dict(value)
    return out


def _read_source(path: Union[str, os.PathLike[str], None], env: Mapping[str, str]) -> TomlSource:
    explicit = path is not None or is_explicit(env)
    file = Path(path).expanduser() if path is not None else config_path(env)
    name = str(file)
    if not file.exists():
        if explicit:
            how = "" if path is not None else f" (named by ${CONFIG_ENV})"
            raise ConfigError(f"config file not found{how}; create it with `jarvis config init`", path=name)
        return TomlSource({}, path=None, lines={})
    try:
        text = file.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"not a UTF-8 text file ({exc.reason} at byte {exc.start})", path=name) from None
    except OSError as exc:
        raise ConfigError(f"cannot read the config file: {exc.strerror or exc}", path=name) from None
    return parse_toml(text, path=name)


def _load_engine(src: TomlSource, table: Any, reg: Registry) -> EngineSettings:
    if not isinstance(table, dict):
        raise type_error(src, ("engine",), "a table", table)
    scalars = {k: v for k, v in table.items() if not isinstance(v, dict) or k in attrs.fields_dict(_EngineScalars)}
    engines = reg.items("engine")
    for key, value in scalars.items():
        if key not in attrs.fields_dict(_EngineScalars) and key in engines:
            raise ConfigError(
                f"{dotted(('engine', key))!r} must be a table of settings, e.g. [engine.{key}] host = {value!r}",
                path=src.path, key=dotted(("engine", key)), line=src.line_of(("engine", key)),
            )
    top = structure_table(src, scalars, _EngineScalars, ("engine",))
    sections: Dict[str, Any] = {}
    for key, value in table.items():
        if key in scalars:
            continue
        schema = _section_schema(src, key, reg)
        sections[key] = dict(value) if schema is dict else structure_table(src, value, schema, ("engine", key))
    return EngineSettings(default=top.default, model=top.model, fallback=top.fallback,
                          auto_embedded=top.auto_embedded, sections=sections)


def _section_schema(src: TomlSource, key: str, reg: Registry) -> type:
    registration = reg.items("config_section").get(f"engine.{key}")
    if registration is None:
        if key not in reg.items("engine"):
            guess = nearest(key, list(reg.items("engine")))
            hint = f"; did you mean [engine.{guess}]?" if guess else " (is its plugin installed?)"
            line = src.line_of(("engine", key))
            where = f"{src.path}:{line}: " if src.path and line else ""
            warnings.warn(f"{where}[engine.{key}] configures an engine that is not installed{hint}",
                          ConfigWarning, stacklevel=4)
        return GenericEngineConfig
    return schema_of(registration, f"engine.{key}")


def _load_model_defaults(src: TomlSource, table: Any, reg: Registry) -> Dict[str, Dict[str, Any]]:
    path: KeyPath = ("model_defaults",)
    if not isinstance(table, dict):
        raise type_error(src, path, 'a table of [model_defaults."<pattern>"] tables', table)
    rules: Dict[str, Dict[str, Any]] = {}
    for pattern, rule in table.items():
        if not pattern.strip():
            raise ConfigError("a model_defaults pattern is empty", path=src.path, key="model_defaults",
                              line=src.line_of((*path, pattern)))
        structured = structure_table(src, rule, ModelDefaultsRule, (*path, pattern))
        for kind in ("tool", "reasoning"):
            _check_parser(src, reg, kind, getattr(structured, f"{kind}_parser"), (*path, pattern, f"{kind}_parser"))
        rules[pattern] = structured.to_dict()
    return rules


def _check_parser(src: TomlSource, reg: Registry, kind: str, name: Optional[str], path: KeyPath) -> None:
    """A parser name must be registered (checked only when some parser of that kind is installed).

    ``"none"`` is always valid: it says the family has no such parser, overriding a shorter pattern's.
    """
    if name is None or name == "none":
        return
    known = [k.partition(":")[2] for k in reg.items("parser") if k.startswith(kind + ":")]
    if known and name not in known:
        guess = nearest(name, known)
        raise ConfigError(
            f"unknown {kind} parser {name!r} for {dotted(path)!r}; installed: {', '.join(sorted(known))}",
            path=src.path, key=dotted(path), line=src.line_of(path), suggestion=guess,
        )


def _env_hosts(engine: EngineSettings, env: Mapping[str, str], reg: Registry) -> Dict[str, Tuple[str, str, str]]:
    """``<KEY>_HOST`` overrides for installed and configured engines, keyed by engine."""
    out: Dict[str, Tuple[str, str, str]] = {}
    for key in dict.fromkeys([*engine.sections, *reg.items("engine")]):
        var = env_var_for(key)
        value = env.get(var, "").strip()
        if not value:
            continue
        section = engine.sections.get(key)
        if section is None or isinstance(section, dict):
            option = "host"
        else:
            names = attrs.fields_dict(type(section))
            option = "host" if "host" in names else "base_url" if "base_url" in names else ""
        if option:
            out[key] = (var, value, option)
    return out
