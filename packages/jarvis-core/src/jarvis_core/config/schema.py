"""The config schema: attrs classes for every section jarvis-core owns, and :class:`JarvisConfig`.

Engine sub-tables (``[engine.<key>]``) are typed by the plugin that provides the engine, through the
``jarvis_register_config_sections`` hook; an engine without a registered schema gets
:class:`GenericEngineConfig`. Field names of an engine schema are constructor keyword arguments of the
engine, which is what lets :meth:`JarvisConfig.engine_options` feed ``create_engine`` directly.
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Tuple

import attrs

from jarvis_core.engine.limits import check_count, check_finite, check_seconds, validator
from jarvis_core.engine.redaction import MASK

__all__ = [
    "METADATA_SECRET",
    "SECRET_MARKERS",
    "AgentConfig",
    "EngineSettings",
    "GenericEngineConfig",
    "JarvisConfig",
    "LogSettings",
    "ModelDefaultsRule",
    "PluginSettings",
    "env_var_for",
    "is_secret_field",
    "masked_field",
]

#: A field named like this, or ending in ``_`` + one of these, holds a secret: ``jarvis config show`` masks it.
SECRET_MARKERS = ("key", "token", "secret", "password", "passwd", "credentials")
#: Field metadata declaring a secret whatever its name (``attrs.field(metadata={METADATA_SECRET: True})``); a
#: table of them (HTTP ``headers``) is shown with its keys and every value masked.
METADATA_SECRET = "jarvis_secret"


def is_secret_field(name: str) -> bool:
    """True when a config field of that name holds a secret (``api_key``, ``openai_api_key``, ``token``);
    ``max_tokens`` is not one."""
    lowered = name.lower().replace("-", "_")
    return any(lowered == m or lowered.endswith("_" + m) for m in SECRET_MARKERS)


def masked_field(field: attrs.Attribute[Any], value: Any) -> Any:
    """``value`` of a section's ``field`` as shown: :data:`MASK` when the field is named like a secret or
    declared one (:data:`METADATA_SECRET`); a declared-secret table keeps its keys and masks every value."""
    if value is None:
        return None
    if field.metadata.get(METADATA_SECRET):
        return {k: MASK for k in value} if isinstance(value, Mapping) else MASK
    return MASK if is_secret_field(field.name) else value


def env_var_for(engine_key: str) -> str:
    """The environment variable that overrides an engine's host: ``llama-cpp`` → ``LLAMA_CPP_HOST``."""
    return engine_key.upper().replace("-", "_").replace(".", "_") + "_HOST"


def _shown(value: Any) -> str:
    return MASK if value is MASK else repr(value)


def _masked_repr(sections: Mapping[str, Any]) -> str:
    """``repr`` of the engine tables with secrets masked, whatever the plugin's class does in its own repr."""
    parts = []
    for key, section in sections.items():
        if attrs.has(type(section)):
            fields = attrs.fields(type(section))
            shown = ", ".join(f"{f.name}={_shown(masked_field(f, getattr(section, f.name)))}" for f in fields)
            name = type(section).__name__
        else:
            shown = ", ".join(f"{k}={MASK if is_secret_field(k) and v is not None else repr(v)}"
                              for k, v in dict(section).items())
            name = "dict"
        parts.append(f"{key!r}: {name}({shown})")
    return "{" + ", ".join(parts) + "}"


@attrs.frozen
class PluginSettings:
    """``[plugins]``: ``prefer`` lists plugin (entry-point) or distribution names that win a key two plugins
    registered; without it such a key is unusable until one plugin is removed (``JARVIS_PREFER_PLUGINS``
    overrides it)."""

    prefer: List[str] = attrs.field(factory=list)


@attrs.frozen
class GenericEngineConfig:
    """Schema of ``[engine.<key>]`` for an engine whose plugin registered no schema of its own."""

    host: Optional[str] = None
    api_key: Optional[str] = attrs.field(default=None, repr=False)
    timeout: Optional[float] = attrs.field(default=None, validator=validator(check_seconds))


@attrs.frozen
class AgentConfig:
    """``[agent]``: which agent ``jarvis ask`` uses by default, and its turn limit."""

    default: Optional[str] = None
    max_turns: Optional[int] = attrs.field(default=None, validator=validator(check_count))


def _retry_config(value: Any) -> Any:
    if value is None:
        from jarvis_core.retry.settings import RetryConfig

        return RetryConfig()
    return value


@attrs.frozen
class LogSettings:
    """``[log]``: the conversation log of ``jarvis ask`` and ``jarvis chat`` (``$JARVIS_NO_LOG`` and
    ``--no-log`` turn it off too)."""

    enabled: bool = True
    #: The SQLite file (default: ``logs.db`` in the jarvis home).
    path: Optional[str] = None


@attrs.frozen
class ModelDefaultsRule:
    """One ``[model_defaults."<pattern>"]`` table: the user's own per-model-family defaults.

    They rank above plugin defaults and below explicit request arguments (docs/contract.md §5).
    """

    tool_parser: Optional[str] = None
    reasoning_parser: Optional[str] = None
    temperature: Optional[float] = attrs.field(default=None, validator=validator(check_finite, minimum=0))
    top_p: Optional[float] = attrs.field(default=None, validator=validator(check_finite, minimum=0, maximum=1))
    #: ``0`` (llama.cpp) or ``-1`` (vLLM) switch top-k sampling off.
    top_k: Optional[int] = attrs.field(default=None, validator=validator(check_count, minimum=-1))
    min_p: Optional[float] = attrs.field(default=None, validator=validator(check_finite, minimum=0, maximum=1))
    repeat_penalty: Optional[float] = attrs.field(default=None, validator=validator(check_finite, minimum=0))
    presence_penalty: Optional[float] = attrs.field(default=None, validator=validator(check_finite))

    def to_dict(self) -> Dict[str, Any]:
        """The fields that are set."""
        return {f.name: v for f in attrs.fields(type(self)) if (v := getattr(self, f.name)) is not None}


@attrs.frozen
class EngineSettings:
    """``[engine]``: the default engine, the fallback switch, and the per-engine sub-tables."""

    #: Registry key of the engine used when none is named (``JARVIS_ENGINE`` overrides it).
    default: Optional[str] = None
    #: Model id used when none is named (else the first model the engine offers, announced).
    model: Optional[str] = None
    #: Opt-in: when the chosen engine is unreachable, use another healthy one, announced (event + warning).
    fallback: bool = False
    #: When no engine is configured or reachable, ``jarvis ask`` may start the managed llama.cpp server.
    auto_embedded: bool = True
    #: ``[engine.<key>]`` tables, structured into each engine's schema class, in file order.
    sections: Mapping[str, Any] = attrs.field(factory=dict, repr=lambda sections: _masked_repr(sections))


@attrs.frozen
class JarvisConfig:
    """The effective configuration: the file (if any), legacy keys migrated, environment applied.

    Build it with :func:`jarvis_core.config.load_config`. Secrets never appear in its ``repr``.
    """

    engine: EngineSettings = attrs.field(factory=EngineSettings)
    agent: AgentConfig = attrs.field(factory=AgentConfig)
    #: ``[agents.<key>]`` tables: per-agent settings and options, as written (the agent checks them).
    agents: Mapping[str, Mapping[str, Any]] = attrs.field(factory=dict)
    #: ``[tools.<key>]`` tables: options passed to the tool's constructor by ``create_tool``.
    tools: Mapping[str, Mapping[str, Any]] = attrs.field(factory=dict)
    #: ``pattern -> {field: value}`` user rules for :func:`jarvis_core.defaults.resolve` (``user_rules=``).
    model_defaults: Mapping[str, Dict[str, Any]] = attrs.field(factory=dict)
    #: The file this config was read from (``None``: built-in defaults only).
    path: Optional[str] = None
    #: Address overrides from the environment: engine key -> (variable name, value, option name).
    env_hosts: Mapping[str, Tuple[str, str, str]] = attrs.field(factory=dict, repr=False)
    #: Where a value came from, for ``jarvis config show``: dotted key -> ``"file:LINE"`` / ``"env NAME"``.
    sources: Mapping[str, str] = attrs.field(factory=dict, repr=False)
    #: ``[plugins]``: which plugin wins a key two plugins registered (``prefer``).
    plugins: PluginSettings = attrs.field(factory=PluginSettings)
    #: Tables registered by plugins outside ``[engine.<key>]``, by section name, structured into their schemas.
    plugin_sections: Mapping[str, Any] = attrs.field(factory=dict, repr=False)
    #: ``[log]``: the conversation log.
    log: LogSettings = attrs.field(factory=LogSettings)
    #: ``[aliases]``: name -> :class:`~jarvis_core.aliases.ModelAlias`.
    aliases: Mapping[str, Any] = attrs.field(factory=dict)
    #: ``[retry]``: a :class:`~jarvis_core.retry.RetryConfig` (``None``: the defaults).
    retry: Any = attrs.field(default=None, converter=_retry_config)

    def engine_section(self, key: str) -> Optional[Any]:
        """The structured ``[engine.<key>]`` table, or ``None`` when the config has none."""
        return self.engine.sections.get(key)

    def configured_engines(self) -> Tuple[str, ...]:
        """Engine keys the user named: the default engine first, then the ``[engine.<key>]`` tables."""
        keys = list(self.engine.sections)
        if self.engine.default and self.engine.default not in keys:
            keys.insert(0, self.engine.default)
        elif self.engine.default:
            keys.remove(self.engine.default)
            keys.insert(0, self.engine.default)
        return tuple(keys)

    def engine_options(self, key: str) -> Dict[str, Any]:
        """Keyword arguments for ``create_engine(key, **options)``.

        The section's fields that are set, then the ``<KEY>_HOST`` environment override (environment beats
        file). Contains the API key when one is configured: pass it to the engine, never print it.
        """
        section = self.engine.sections.get(key)
        options: Dict[str, Any] = {}
        if isinstance(section, dict):  # its plugin's schema failed to import; kept as written
            options.update({k: v for k, v in section.items() if v is not None})
        elif section is not None:
            for field in attrs.fields(type(section)):
                value = getattr(section, field.name)
                if value is not None:
                    options[field.name] = value
        env = self.env_hosts.get(key)
        if env is not None:
            _, value, option = env
            for alias in ("host", "base_url"):
                options.pop(alias, None)  # one address only: the environment's
            options[option] = value
        if self.model_defaults:
            # The user's [model_defaults] rules; create_engine passes them to engines that apply them.
            options["model_defaults"] = dict(self.model_defaults)
        return options

    def host_of(self, key: str) -> Optional[str]:
        """The configured address of an engine (environment or file), if any. Never a secret."""
        options = self.engine_options(key)
        host = options.get("host") or options.get("base_url")
        return str(host) if host else None
