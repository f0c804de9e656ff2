"""Config errors name the key, the file, the line and (for a typo) the nearest valid key."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Optional

import attrs
import pytest

from jarvis_core.config import load_config
from jarvis_core.config.toml_source import key_lines
from jarvis_core.errors import ConfigError, PluginError
from jarvis_core.testing import registry_with, simple_plugin


def _positive(_inst, attribute, value):
    if value is not None and value <= 0:
        raise ValueError(f"{attribute.name} must be positive, got {value}")


@attrs.frozen
class StrictConfig:
    host: Optional[str] = None
    timeout: Optional[float] = None
    num_ctx: Optional[int] = attrs.field(default=None, validator=_positive)
    stop: Optional[list] = None


def _registry():
    return registry_with(
        simple_plugin("strict", engines={"ollama": "x:Y", "vllm": "x:Z"}, config_sections={"engine.ollama": StrictConfig})
    )


def _error(tmp_path: Path, text: str) -> ConfigError:
    path = tmp_path / "config.toml"
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_config(path, environ={}, registry=_registry())
    err = info.value
    assert err.path == str(path)
    assert str(path) in str(err)
    return err


def test_unknown_key_in_engine_table_names_key_file_line_and_suggestion(tmp_path):
    err = _error(
        tmp_path,
        """
        [engine]
        default = "ollama"

        [engine.ollama]
        timeout = 5.0
        hots = "http://gpu:11434"
        """,
    )
    assert err.key == "engine.ollama.hots"
    assert err.line == 7
    assert err.suggestion == "engine.ollama.host"
    assert "config.toml:7:" in str(err)
    assert "did you mean 'engine.ollama.host'?" in str(err)


def test_unknown_key_in_generic_engine_table(tmp_path):
    err = _error(tmp_path, '[engine.vllm]\napi-key = "x"\n')
    assert (err.key, err.line, err.suggestion) == ("engine.vllm.api-key", 2, "engine.vllm.api_key")


def test_unknown_key_under_engine(tmp_path):
    err = _error(tmp_path, '[engine]\ndefualt = "ollama"\n')
    assert (err.key, err.line, err.suggestion) == ("engine.defualt", 2, "engine.default")


def test_engine_name_written_as_a_plain_key_explains_the_table_form(tmp_path):
    err = _error(tmp_path, '[engine]\nollama = "http://gpu:11434"\n')
    assert err.line == 2
    assert "[engine.ollama] host" in str(err)


def test_unknown_top_level_key_suggests_nearest(tmp_path):
    err = _error(tmp_path, '\n\nolama_host = "http://x:1"\n')
    assert (err.key, err.line, err.suggestion) == ("olama_host", 3, "ollama_host")
    err = _error(tmp_path, '[engines]\ndefault = "x"\n')
    assert (err.key, err.line, err.suggestion) == ("engines", 1, "engine")


def test_unknown_key_in_model_defaults_rule(tmp_path):
    err = _error(tmp_path, '[model_defaults."qwen3*"]\ntemprature = 0.6\n')
    assert err.key == 'model_defaults."qwen3*".temprature'
    assert err.line == 2
    assert err.suggestion == 'model_defaults."qwen3*".temperature'


def test_wrong_type_names_key_expected_type_file_and_line(tmp_path):
    err = _error(tmp_path, '[engine.ollama]\nhost = "h"\ntimeout = "fast"\n')
    assert err.key == "engine.ollama.timeout"
    assert err.line == 3
    assert "expected a number" in str(err) and "'fast'" in str(err)


@pytest.mark.parametrize(
    ("text", "key", "expected"),
    [
        ('[engine]\nfallback = "false"\n', "engine.fallback", "true or false"),
        ("[engine]\ndefault = 3\n", "engine.default", "a string"),
        ("[engine.ollama]\nnum_ctx = 4096.5\n", "engine.ollama.num_ctx", "an integer"),
        ("[engine.ollama]\nnum_ctx = true\n", "engine.ollama.num_ctx", "an integer"),
        ("[agent]\nmax_turns = \"ten\"\n", "agent.max_turns", "an integer"),
        ('[model_defaults.qwen3]\ntop_k = "20"\n', "model_defaults.qwen3.top_k", "an integer"),
        ("[engine.vllm]\ntimeout = false\n", "engine.vllm.timeout", "a number"),
    ],
)
def test_wrong_types_are_never_coerced(tmp_path, text, key, expected):
    err = _error(tmp_path, text)
    assert err.key == key
    assert err.line == 2
    assert f"expected {expected}" in str(err)


def test_a_table_where_a_value_belongs_and_vice_versa(tmp_path):
    err = _error(tmp_path, "engine = 5\n")
    assert (err.key, err.line) == ("engine", 1)
    err = _error(tmp_path, '[engine.default]\nhost = "y"\n')
    assert err.key == "engine.default" and "expected a string" in str(err)
    err = _error(tmp_path, '[model_defaults]\nqwen3 = 0.6\n')
    assert err.key == "model_defaults.qwen3" and err.line == 2


def test_validator_failure_points_at_the_key_it_names(tmp_path):
    err = _error(tmp_path, "[engine.ollama]\nhost = 'h'\nnum_ctx = -1\n")
    assert err.key == "engine.ollama.num_ctx"
    assert err.line == 3
    assert "must be positive" in str(err)


def test_first_problem_in_file_order_is_reported_with_a_count(tmp_path):
    err = _error(tmp_path, '[engine.ollama]\nbogus = 1\ntimeout = "x"\nother = 2\n')
    assert err.line == 2 and err.key == "engine.ollama.bogus"
    assert "2 more problem(s)" in str(err)


def test_inline_tables_point_at_their_line(tmp_path):
    err = _error(tmp_path, '\nengine = { default = "ollama", ollama = { hots = "x" } }\n')
    assert err.key == "engine.ollama.hots"
    assert err.line == 2
    assert err.suggestion == "engine.ollama.host"


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ('[engine]\ndefault = "ollama\n', 2),
        ("[engine]\n\n\ndefault = \n", 4),
        ("[engine]\ndefault = 'a'\ndefault = 'b'\n", 3),
        ("[engine\n", 1),
        ('[engine]\nx = [1, 2\n', 2),
    ],
)
def test_toml_syntax_error_names_file_and_line(tmp_path, text, line):
    err = _error(tmp_path, text)
    assert err.line == line
    assert "invalid TOML" in str(err)
    assert f"config.toml:{line}:" in str(err)


def test_file_that_is_not_utf8_is_a_config_error(tmp_path):
    path = tmp_path / "config.toml"
    path.write_bytes(b'[engine]\ndefault = "\xff"\n')
    with pytest.raises(ConfigError, match="UTF-8"):
        load_config(path, environ={}, registry=_registry())


def test_a_plugin_schema_that_is_not_attrs_is_isolated_or_in_strict_mode_a_plugin_error(tmp_path, monkeypatch):
    class NotAttrs:
        pass

    reg = registry_with(simple_plugin("bad", engines={"x": "a:B"}, config_sections={"engine.x": NotAttrs}))
    path = tmp_path / "config.toml"
    path.write_text("[engine.x]\nhost = 'h'\n", encoding="utf-8")
    monkeypatch.delenv("JARVIS_STRICT_PLUGINS", raising=False)
    with pytest.warns(UserWarning, match=r"not an attrs class.*\[engine\.x\] is used unchecked"):
        load_config(path, environ={}, registry=reg)
    monkeypatch.setenv("JARVIS_STRICT_PLUGINS", "1")
    with pytest.raises(PluginError, match="not an attrs class"):
        load_config(path, environ={}, registry=reg)


def test_key_lines_scanner_handles_toml_forms():
    text = textwrap.dedent(
        '''
        top = 1
        [engine]
        default = "a # not a comment"
        [engine."open ai".sub]   # comment
        'lit key' = """
        multi = 1
        [not.a.table]
        """
        arr = [
          1,
          2,
        ]
        after = true
        dotted.key.path = 3
        [[servers]]
        name = "x"
        '''
    ).lstrip("\n")
    lines = key_lines(text)
    assert lines[("top",)] == 1
    assert lines[("engine",)] == 2
    assert lines[("engine", "default")] == 3
    assert lines[("engine", "open ai", "sub")] == 4
    assert lines[("engine", "open ai", "sub", "lit key")] == 5
    assert ("not", "a", "table") not in lines and ("engine", "open ai", "sub", "multi") not in lines
    assert lines[("engine", "open ai", "sub", "arr")] == 9
    assert lines[("engine", "open ai", "sub", "after")] == 13
    assert lines[("engine", "open ai", "sub", "dotted", "key", "path")] == 14
    assert lines[("servers", "name")] == 16


def test_unknown_parser_name_in_model_defaults(tmp_path):
    reg = registry_with(
        simple_plugin("parsers", parsers=[("hermes", "x:H", "tool"), ("qwen3", "x:Q", "reasoning")])
    )
    path = tmp_path / "config.toml"
    path.write_text('[model_defaults.qwen3]\ntemperature = 0.6\ntool_parser = "hermez"\n', encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_config(path, environ={}, registry=reg)
    err = info.value
    assert (err.key, err.line, err.suggestion) == ("model_defaults.qwen3.tool_parser", 3, "hermes")
    path.write_text('[model_defaults.qwen3]\ntool_parser = "hermes"\nreasoning_parser = "qwen3"\n', encoding="utf-8")
    assert load_config(path, environ={}, registry=reg).model_defaults == {
        "qwen3": {"tool_parser": "hermes", "reasoning_parser": "qwen3"}
    }
