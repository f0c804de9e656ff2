"""jarvis configuration: ``~/.jarvis/config.toml`` (or ``$JARVIS_CONFIG`` / ``$JARVIS_HOME``).

::

    from jarvis_core.config import load_config

    config = load_config()
    config.engine.default                 # "ollama" (JARVIS_ENGINE beats the file)
    config.engine_options("ollama")       # {"host": "http://gpu-box:11434", "timeout": 300.0}
    config.model_defaults                 # {"qwen3": {"temperature": 0.6, ...}}

The file is structured into attrs classes with a strict cattrs converter: an unknown key or a wrong type
is a :class:`~jarvis_core.errors.ConfigError` naming the key, the file, the line and the nearest valid
key. Plugins contribute the schema of their ``[engine.<key>]`` (or any other) table through the
``jarvis_register_config_sections`` hook: an attrs class, typed as ``type[ConfigSection]``
(:mod:`jarvis_core.config.section`). See ``docs/config.md``.
"""

from jarvis_core.config.legacy import LEGACY_KEYS, ConfigDeprecationWarning
from jarvis_core.config.loader import ENGINE_ENV, ConfigWarning, load_config
from jarvis_core.config.paths import CONFIG_ENV, HOME_ENV, config_path, jarvis_home
from jarvis_core.config.render import config_to_dict, default_config_text, dumps_json, dumps_toml
from jarvis_core.config.schema import (
    AgentConfig,
    EngineSettings,
    GenericEngineConfig,
    JarvisConfig,
    ModelDefaultsRule,
    env_var_for,
)
from jarvis_core.config.section import ConfigSection, is_config_section_schema

__all__ = [
    "CONFIG_ENV",
    "ENGINE_ENV",
    "HOME_ENV",
    "LEGACY_KEYS",
    "AgentConfig",
    "ConfigDeprecationWarning",
    "ConfigSection",
    "ConfigWarning",
    "EngineSettings",
    "GenericEngineConfig",
    "JarvisConfig",
    "ModelDefaultsRule",
    "config_path",
    "config_to_dict",
    "default_config_text",
    "dumps_json",
    "dumps_toml",
    "env_var_for",
    "is_config_section_schema",
    "jarvis_home",
    "load_config",
]
