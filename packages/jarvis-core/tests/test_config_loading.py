"""Config loading: file location, sections, plugin schemas, legacy keys and environment overrides."""

from __future__ import annotations

import textwrap
import warnings
from pathlib import Path
from typing import Optional

import attrs
import pytest

from jarvis_core.config import (
    ConfigDeprecationWarning,
    ConfigWarning,
    GenericEngineConfig,
    config_path,
    default_config_text,
    dumps_json,
    dumps_toml,
    load_config,
)
from jarvis_core.errors import ConfigError
from jarvis_core.testing import registry_with, simple_plugin


@attrs.frozen
class FakeOllamaConfig:
    host: Optional[str] = None
    api_key: Optional[str] = attrs.field(default=None, repr=False)
    timeout: Optional[float] = None
    num_ctx: Optional[int] = None


@attrs.frozen
class FakeEmbeddedConfig:
    binary_path: Optional[str] = None
    slots: int = 1


@attrs.frozen
class BaseUrlConfig:
    base_url: Optional[str] = None


def _registry():
    plugin = simple_plugin(
        "fake-engines",
        engines={k: "nowhere:Engine" for k in ("ollama", "vllm", "llamacpp", "sglang", "embedded", "proxy")},
        config_sections={
            "engine.ollama": FakeOllamaConfig,
            "engine.embedded": FakeEmbeddedConfig,
            "engine.proxy": BaseUrlConfig,
        },
    )
    return registry_with(plugin)


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def _load(path: Optional[Path], environ: Optional[dict] = None):
    return load_config(path, environ=environ or {}, registry=_registry())


# -- where the file is --------------------------------------------------------------------------------


def test_config_path_precedence(tmp_path):
    home = Path.home() / ".jarvis" / "config.toml"
    assert config_path({}) == home
    assert config_path({"JARVIS_HOME": str(tmp_path)}) == tmp_path / "config.toml"
    explicit = tmp_path / "elsewhere.toml"
    assert config_path({"JARVIS_HOME": str(tmp_path), "JARVIS_CONFIG": str(explicit)}) == explicit


def test_missing_default_file_gives_defaults(tmp_path):
    config = load_config(environ={"JARVIS_HOME": str(tmp_path)}, registry=_registry())
    assert config.path is None
    assert config.engine.default is None
    assert config.engine.fallback is False
    assert config.engine.auto_embedded is True
    assert config.engine.sections == {}
    assert config.model_defaults == {}


def test_missing_explicit_file_is_an_error(tmp_path):
    missing = tmp_path / "nope.toml"
    with pytest.raises(ConfigError) as info:
        load_config(environ={"JARVIS_CONFIG": str(missing)}, registry=_registry())
    assert str(missing) in str(info.value)
    assert "JARVIS_CONFIG" in str(info.value)
    with pytest.raises(ConfigError):
        load_config(missing, environ={}, registry=_registry())


def test_jarvis_home_file_is_read(tmp_path):
    _write(tmp_path, '[engine]\ndefault = "vllm"\n')
    config = load_config(environ={"JARVIS_HOME": str(tmp_path)}, registry=_registry())
    assert config.engine.default == "vllm"
    assert config.path == str(tmp_path / "config.toml")


# -- sections -----------------------------------------------------------------------------------------


def test_sections_use_plugin_schemas_and_generic_fallback(tmp_path):
    path = _write(
        tmp_path,
        """
        [engine]
        default = "ollama"
        fallback = true
        auto_embedded = false
        model = "qwen3:8b"

        [engine.ollama]
        host = "http://gpu:11434"
        timeout = 30
        num_ctx = 8192

        [engine.vllm]
        host = "http://gpu:8000"
        api_key = "sk-test-secret"

        [agent]
        default = "orchestrator"
        max_turns = 6
        """,
    )
    config = _load(path)
    assert config.engine.default == "ollama"
    assert config.engine.fallback is True
    assert config.engine.auto_embedded is False
    assert config.engine.model == "qwen3:8b"
    ollama = config.engine_section("ollama")
    assert isinstance(ollama, FakeOllamaConfig)
    assert ollama.timeout == 30.0 and isinstance(ollama.timeout, float)
    assert isinstance(config.engine_section("vllm"), GenericEngineConfig)
    assert config.agent.default == "orchestrator" and config.agent.max_turns == 6
    assert config.engine_options("ollama") == {"host": "http://gpu:11434", "timeout": 30.0, "num_ctx": 8192}
    assert config.engine_options("vllm") == {"host": "http://gpu:8000", "api_key": "sk-test-secret"}
    assert config.engine_options("sglang") == {}
    assert config.configured_engines() == ("ollama", "vllm")


def test_schema_of_a_section_absent_from_the_file_is_not_imported(tmp_path):
    plugin = simple_plugin(
        "lazy", engines={"ollama": "nowhere:Engine"},
        config_sections={"engine.ollama": "jarvis_test_no_such_module.config:Missing"},
    )
    path = _write(tmp_path, '[engine]\ndefault = "ollama"\n')
    config = load_config(path, environ={}, registry=registry_with(plugin))
    assert config.engine.default == "ollama"  # the broken target was never imported


def test_model_defaults_are_user_rules(tmp_path):
    path = _write(
        tmp_path,
        """
        [model_defaults."qwen3*"]
        tool_parser = "hermes"
        temperature = 0.6
        top_k = 20

        [model_defaults.llama3]
        temperature = 0
        """,
    )
    config = _load(path)
    assert config.model_defaults == {
        "qwen3*": {"tool_parser": "hermes", "temperature": 0.6, "top_k": 20},
        "llama3": {"temperature": 0.0},
    }


def test_table_for_an_engine_that_is_not_installed_warns_with_suggestion(tmp_path):
    path = _write(tmp_path, '[engine.olama]\nhost = "http://x:1"\n')
    with pytest.warns(ConfigWarning, match=r"config.toml:1: \[engine.olama\].*did you mean \[engine.ollama\]"):
        config = _load(path)
    assert isinstance(config.engine_section("olama"), GenericEngineConfig)


# -- legacy keys --------------------------------------------------------------------------------------


def test_legacy_flat_keys_map_to_engine_tables_with_a_warning(tmp_path):
    path = _write(
        tmp_path,
        """
        ollama_host = "http://a:11434"
        vllm_host = "http://b:8000"
        llamacpp_host = "http://c:8080"
        sglang_host = "http://d:30000"
        llamacpp_path = "/opt/llama/llama-server"
        """,
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        config = _load(path)
    messages = [str(w.message) for w in caught if issubclass(w.category, ConfigDeprecationWarning)]
    assert len(messages) == 5
    assert any("'ollama_host'" in m and "[engine.ollama] host" in m and "config.toml:2" in m for m in messages)
    assert any("'llamacpp_path'" in m and "[engine.embedded] binary_path" in m for m in messages)
    assert config.engine_options("ollama") == {"host": "http://a:11434"}
    assert config.engine_options("vllm") == {"host": "http://b:8000"}
    assert config.engine_options("llamacpp") == {"host": "http://c:8080"}
    assert config.engine_options("sglang") == {"host": "http://d:30000"}
    assert config.engine_section("embedded") == FakeEmbeddedConfig(binary_path="/opt/llama/llama-server")


def test_legacy_flat_keys_under_engine_are_accepted_too(tmp_path):
    """OpenJarvis files write the flat keys inside [engine] as well as at the top level."""
    path = _write(tmp_path, '[engine]\ndefault = "ollama"\nollama_host = "http://a:11434"\nllamacpp_path = "/opt/ls"\n')
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        config = _load(path)
    messages = [str(w.message) for w in caught if issubclass(w.category, ConfigDeprecationWarning)]
    assert len(messages) == 2
    assert any("'engine.ollama_host' is deprecated" in m and "[engine.ollama] host" in m and "config.toml:3" in m
               for m in messages)
    assert config.engine.default == "ollama"
    assert config.engine_options("ollama") == {"host": "http://a:11434"}
    assert config.engine_section("embedded") == FakeEmbeddedConfig(binary_path="/opt/ls")


def test_managed_mode_keys_of_engine_llamacpp_go_to_the_embedded_engine(tmp_path):
    path = _write(tmp_path, '[engine.llamacpp]\nhost = "http://c:8080"\nbinary_path = "/opt/llama-server"\n')
    with pytest.warns(ConfigDeprecationWarning, match=r"'engine\.llamacpp\.binary_path' is deprecated; managed mode "
                      r"is the 'embedded' engine; write it as \[engine\.embedded\] binary_path"):
        config = _load(path)
    assert config.engine_options("llamacpp") == {"host": "http://c:8080"}
    assert config.engine_section("embedded") == FakeEmbeddedConfig(binary_path="/opt/llama-server")
    clash = _write(tmp_path, '[engine.llamacpp]\nbinary_path = "/a"\n\n[engine.embedded]\nbinary_path = "/b"\n')
    with pytest.raises(ConfigError, match=r"both the deprecated key 'engine\.llamacpp\.binary_path'"):
        _load(clash)


def test_legacy_warning_is_shown_by_default():
    # Python hides DeprecationWarning outside __main__; this one is for the person who wrote the file.
    assert issubclass(ConfigDeprecationWarning, FutureWarning)


def test_legacy_key_conflicting_with_new_key_is_an_error(tmp_path):
    path = _write(tmp_path, 'ollama_host = "http://a:1"\n\n[engine.ollama]\nhost = "http://b:2"\n')
    with pytest.raises(ConfigError, match="both the deprecated key 'ollama_host'") as info:
        _load(path)
    assert info.value.line == 4


def test_legacy_key_agreeing_with_new_key_only_warns(tmp_path):
    path = _write(tmp_path, 'ollama_host = "http://a:1"\n\n[engine.ollama]\nhost = "http://a:1"\n')
    with pytest.warns(ConfigDeprecationWarning):
        config = _load(path)
    assert config.engine_options("ollama") == {"host": "http://a:1"}


def test_legacy_key_of_wrong_type_names_the_legacy_key(tmp_path):
    path = _write(tmp_path, "vllm_host = 8000\n")
    with pytest.raises(ConfigError, match="'vllm_host'") as info:
        _load(path)
    assert info.value.line == 1


# -- environment --------------------------------------------------------------------------------------


def test_environment_overrides_file(tmp_path):
    path = _write(
        tmp_path,
        """
        [engine]
        default = "ollama"

        [engine.ollama]
        host = "http://file:11434"
        timeout = 10.0
        """,
    )
    env = {"JARVIS_ENGINE": "vllm", "OLLAMA_HOST": "http://env:11434", "VLLM_HOST": "http://env:8000",
           "LLAMACPP_HOST": "  ", "SGLANG_HOST": "http://env:30000"}
    config = _load(path, env)
    assert config.engine.default == "vllm"
    assert config.engine_options("ollama") == {"host": "http://env:11434", "timeout": 10.0}
    assert config.engine_options("vllm") == {"host": "http://env:8000"}
    assert config.engine_options("sglang") == {"host": "http://env:30000"}
    assert config.engine_options("llamacpp") == {}  # blank means unset
    assert config.sources["engine.default"] == "env JARVIS_ENGINE"
    assert config.sources["engine.ollama.host"] == "env OLLAMA_HOST"


def test_env_host_uses_the_schemas_address_field(tmp_path):
    path = _write(tmp_path, '[engine.proxy]\nbase_url = "http://file:1"\n')
    config = _load(path, {"PROXY_HOST": "http://env:2"})
    assert config.engine_options("proxy") == {"base_url": "http://env:2"}


def test_env_host_is_not_applied_to_a_schema_without_an_address(tmp_path):
    path = _write(tmp_path, '[engine.embedded]\nslots = 2\n')
    config = _load(path, {"EMBEDDED_HOST": "http://x:1"})
    assert config.engine_options("embedded") == {"slots": 2}


def test_env_var_name_for_dashed_keys():
    from jarvis_core.config import env_var_for

    assert env_var_for("openai-compat") == "OPENAI_COMPAT_HOST"
    assert env_var_for("lmstudio") == "LMSTUDIO_HOST"


# -- showing ------------------------------------------------------------------------------------------


def test_show_masks_secrets_and_marks_env_values(tmp_path):
    path = _write(tmp_path, '[engine.vllm]\napi_key = "sk-test-secret"\n\n[engine.ollama]\nnum_ctx = 4096\n')
    config = _load(path, {"OLLAMA_HOST": "http://env:1"})
    toml_text = dumps_toml(config)
    json_text = dumps_json(config)
    for text in (toml_text, json_text, repr(config)):
        assert "sk-test-secret" not in text
    assert 'host = "http://env:1"  # from OLLAMA_HOST' in toml_text
    assert '"api_key": "***"' in json_text
    assert "num_ctx = 4096" in toml_text


def test_show_output_is_valid_toml_that_loads_back(tmp_path):
    path = _write(
        tmp_path,
        """
        [engine]
        default = "ollama"

        [engine.ollama]
        host = "http://gpu:11434"

        [model_defaults."qwen3*"]
        temperature = 0.6
        """,
    )
    config = _load(path)
    again = tmp_path / "again.toml"
    again.write_text(dumps_toml(config), encoding="utf-8")
    reloaded = _load(again)
    assert reloaded.engine == config.engine
    assert reloaded.model_defaults == config.model_defaults


def test_default_config_text_loads_as_the_defaults(tmp_path):
    path = _write(tmp_path, default_config_text())
    config = _load(path)
    assert config.engine.default is None and config.engine.fallback is False and config.engine.auto_embedded is True
    assert config.engine.sections == {} and config.model_defaults == {}


def test_repr_masks_secrets_even_when_the_plugin_schema_does_not(tmp_path):
    @attrs.frozen
    class CarelessConfig:
        host: Optional[str] = None
        openai_api_key: Optional[str] = None  # no repr=False

    reg = registry_with(simple_plugin("careless", engines={"c": "x:Y"}, config_sections={"engine.c": CarelessConfig}))
    path = _write(tmp_path, '[engine.c]\nhost = "h"\nopenai_api_key = "sk-careless-123"\n')
    config = load_config(path, environ={}, registry=reg)
    assert "sk-careless-123" not in repr(config)
    assert "openai_api_key=***" in repr(config)
    assert config.engine_options("c")["openai_api_key"] == "sk-careless-123"  # still passed to the engine


def test_schema_that_fails_to_import_warns_and_keeps_the_table(tmp_path, monkeypatch):
    monkeypatch.delenv("JARVIS_STRICT_PLUGINS", raising=False)
    plugin = simple_plugin(
        "broken-schema", engines={"ollama": "nowhere:Engine"},
        config_sections={"engine.ollama": "jarvis_test_no_such_module.config:Missing"},
    )
    path = _write(tmp_path, '[engine.ollama]\nhost = "http://x:1"\nnum_ctx = 4\n')
    with pytest.warns(ConfigWarning, match=r"jarvis_test_no_such_module.*used unchecked"):
        config = load_config(path, environ={}, registry=registry_with(plugin))
    assert config.engine_options("ollama") == {"host": "http://x:1", "num_ctx": 4}
    monkeypatch.setenv("JARVIS_STRICT_PLUGINS", "1")
    from jarvis_core.errors import PluginError

    with pytest.raises(PluginError, match="jarvis_test_no_such_module"):
        load_config(path, environ={}, registry=registry_with(plugin))
