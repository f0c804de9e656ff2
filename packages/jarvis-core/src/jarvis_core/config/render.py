"""Showing a config (TOML or JSON, secrets masked) and the commented default file of ``jarvis config init``."""

from __future__ import annotations

import json
import math
from typing import Any, Dict, List

import attrs

from jarvis_core.config.schema import JarvisConfig, is_secret_field, masked_field
from jarvis_core.config.validation import dotted
from jarvis_core.engine.redaction import MASK

__all__ = ["MASK", "config_to_dict", "default_config_text", "dumps_json", "dumps_toml"]

def _mask(name: str, value: Any) -> Any:
    return MASK if value is not None and is_secret_field(name) else value


def _section_dict(section: Any) -> Dict[str, Any]:
    if isinstance(section, dict):
        return {str(k): _plain(_mask(str(k), v)) for k, v in section.items() if v is not None}
    out: Dict[str, Any] = {}
    for field in attrs.fields(type(section)):
        value = getattr(section, field.name)
        if value is None:
            continue
        out[field.name] = _plain(masked_field(field, value))
    return out


def _plain(value: Any) -> Any:
    if attrs.has(type(value)):
        return _section_dict(value)
    if isinstance(value, dict):
        return {str(k): _plain(_mask(str(k), v)) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_plain(v) for v in value]
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return str(value)


def config_to_dict(config: JarvisConfig) -> Dict[str, Any]:
    """The effective config as plain data (environment overrides applied, secrets masked, unset omitted)."""
    engine: Dict[str, Any] = {
        "default": config.engine.default,
        "model": config.engine.model,
        "fallback": config.engine.fallback,
        "auto_embedded": config.engine.auto_embedded,
    }
    engine = {k: v for k, v in engine.items() if v is not None}
    keys = [*config.engine.sections, *(k for k in config.env_hosts if k not in config.engine.sections)]
    for key in keys:
        section = config.engine.sections.get(key)
        table = _section_dict(section) if section is not None else {}
        env = config.env_hosts.get(key)
        if env is not None:
            table.pop("base_url", None)
            table.pop("host", None)
            table[env[2]] = env[1]
        engine[key] = {k: _plain(_mask(k, v)) for k, v in table.items()}
    out: Dict[str, Any] = {"engine": engine}
    agent = _section_dict(config.agent)
    if agent:
        out["agent"] = agent
    for name in ("agents", "tools"):
        tables = getattr(config, name)
        if tables:
            out[name] = {key: {k: _plain(_mask(k, v)) for k, v in table.items()} for key, table in tables.items()}
    if config.model_defaults:
        out["model_defaults"] = {p: dict(r) for p, r in config.model_defaults.items()}
    if config.plugins.prefer:
        out["plugins"] = {"prefer": list(config.plugins.prefer)}
    log = _section_dict(config.log)
    if log != {"enabled": True}:
        out["log"] = log
    if config.retry.engines or config.retry.default != type(config.retry.default)():
        out["retry"] = config.retry.to_dict()
    if config.aliases:
        out["aliases"] = {name: alias.to_dict() for name, alias in config.aliases.items()}
    for name, section in config.plugin_sections.items():  # tables registered by plugins, e.g. [acme]
        *parents, last = name.split(".")
        node = out
        for part in parents:
            node = node.setdefault(part, {})
        node[last] = _section_dict(section)
    return out


def dumps_json(config: JarvisConfig) -> str:
    """The effective config as indented JSON, with ``_path`` and ``_sources`` for where values came from."""
    data = config_to_dict(config)
    data["_path"] = config.path
    data["_overrides"] = {k: v for k, v in config.sources.items() if v.startswith("env ")}
    return json.dumps(data, indent=2, sort_keys=False)


def dumps_toml(config: JarvisConfig) -> str:
    """The effective config as TOML; values from the environment carry a ``# from NAME`` comment."""
    data = config_to_dict(config)
    overrides = {k: v[4:] for k, v in config.sources.items() if v.startswith("env ")}
    lines: List[str] = [f"# effective config; file: {config.path or '(none: built-in defaults)'}"]
    _emit_table(lines, (), data, overrides)
    return "\n".join(lines).strip() + "\n"


def _emit_table(lines: List[str], path: tuple[Any, ...], table: Dict[str, Any], overrides: Dict[str, str]) -> None:
    scalars = {k: v for k, v in table.items() if not isinstance(v, dict)}
    subtables = {k: v for k, v in table.items() if isinstance(v, dict)}
    if path and (scalars or not subtables):
        lines.append("")
        lines.append(f"[{dotted(path)}]")
    for key, value in scalars.items():
        origin = overrides.get(dotted((*path, key)))
        comment = f"  # from {origin}" if origin else ""
        lines.append(f"{dotted((key,))} = {_toml_value(value)}{comment}")
    for key, value in subtables.items():
        _emit_table(lines, (*path, key), value, overrides)


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)  # a JSON string is a valid TOML basic string
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{dotted((k,))} = {_toml_value(v)}" for k, v in value.items()) + " }"
    return json.dumps(str(value))


_DEFAULT_TEXT = '''\
# jarvis configuration (see docs/config.md).
# Location: $JARVIS_CONFIG, else $JARVIS_HOME/config.toml, else ~/.jarvis/config.toml.
# Every setting below is commented out and shows its default. Environment variables beat this file:
# JARVIS_ENGINE picks the default engine, <ENGINE>_HOST (OLLAMA_HOST, VLLM_HOST, LLAMACPP_HOST, ...)
# sets an engine's address. Unknown keys and wrong types are errors, so typos do not go unnoticed.

[engine]
# The engine `jarvis ask` and the SDK use when none is named (`jarvis engines` lists the installed ones).
# default = "ollama"
# The model used when none is named (else the first model the engine offers, announced).
# model = "qwen3:8b"
# Opt-in: if the chosen engine is unreachable, use another healthy one, and say so. Off: fail clearly.
# fallback = false
# With no engine configured or reachable, `jarvis ask` may start the managed llama.cpp server.
# auto_embedded = true

# One table per engine; its keys are that engine's options (see the engine plugin's docs).
# [engine.ollama]
# host = "http://localhost:11434"
# timeout = 120.0

# [engine.vllm]
# host = "http://localhost:8000"
# api_key = "..."            # never printed: `jarvis config show` masks it

# [engine.llamacpp]
# host = "http://localhost:8080"

[agent]
# default = "simple"
# max_turns = 10

[log]
# Every `jarvis ask` / `jarvis chat` answer is kept in a SQLite log (`jarvis logs`); off: enabled = false,
# or --no-log, or JARVIS_NO_LOG=1.
# enabled = true
# path = "~/.jarvis/logs.db"

# Your own per-model-family defaults; they beat the plugins' defaults, explicit arguments beat them.
# Patterns match normalized model ids, longest pattern first.
# [model_defaults."qwen3"]
# tool_parser = "hermes"
# reasoning_parser = "qwen3"
# temperature = 0.6
# top_p = 0.95
# top_k = 20
'''


def default_config_text() -> str:
    """The commented default config file that ``jarvis config init`` writes (it loads as the defaults)."""
    return _DEFAULT_TEXT
