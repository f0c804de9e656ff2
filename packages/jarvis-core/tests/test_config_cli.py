"""``jarvis config path|show|init`` through the real command entry point."""

from __future__ import annotations

import json

import pytest

from jarvis_core.cli.main import main
from jarvis_core.config import default_config_text
from jarvis_core.testing import installed_registry, simple_plugin


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("JARVIS_HOME", str(tmp_path))
    monkeypatch.delenv("JARVIS_CONFIG", raising=False)
    monkeypatch.delenv("JARVIS_ENGINE", raising=False)
    for var in ("OLLAMA_HOST", "VLLM_HOST"):
        monkeypatch.delenv(var, raising=False)
    with installed_registry(simple_plugin("engines", engines={"ollama": "x:Y", "vllm": "x:Z"})):
        yield tmp_path


def test_path_follows_jarvis_home_and_jarvis_config(home, monkeypatch, capsys):
    assert main(["config", "path"]) == 0
    assert capsys.readouterr().out.strip() == str(home / "config.toml")
    monkeypatch.setenv("JARVIS_CONFIG", str(home / "other.toml"))
    assert main(["config", "path"]) == 0
    assert capsys.readouterr().out.strip() == str(home / "other.toml")


def test_init_writes_the_commented_default_and_refuses_to_overwrite(home, capsys):
    target = home / "config.toml"
    assert main(["config", "init"]) == 0
    assert target.read_text(encoding="utf-8") == default_config_text()
    assert str(target) in capsys.readouterr().out
    target.write_text('[engine]\ndefault = "vllm"\n', encoding="utf-8")
    assert main(["config", "init"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("jarvis: error:") and "--force" in err and err.count("\n") == 1
    assert "vllm" in target.read_text(encoding="utf-8")  # untouched
    assert main(["config", "init", "--force"]) == 0
    assert target.read_text(encoding="utf-8") == default_config_text()


def test_init_creates_missing_directories(home):
    target = home / "deep" / "er" / "config.toml"
    assert main(["config", "init", "--path", str(target)]) == 0
    assert target.exists()


def test_show_prints_effective_toml_with_secrets_masked(home, monkeypatch, capsys):
    (home / "config.toml").write_text(
        '[engine]\ndefault = "ollama"\n[engine.vllm]\nhost = "http://gpu:8000"\napi_key = "sk-live-123"\n',
        encoding="utf-8",
    )
    monkeypatch.setenv("OLLAMA_HOST", "http://env:11434")
    assert main(["config", "show"]) == 0
    out = capsys.readouterr().out
    assert "sk-live-123" not in out
    assert 'api_key = "***"' in out
    assert 'host = "http://env:11434"  # from OLLAMA_HOST' in out
    assert main(["config", "show", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["engine"]["default"] == "ollama"
    assert doc["engine"]["vllm"] == {"host": "http://gpu:8000", "api_key": "***"}
    assert doc["_overrides"] == {"engine.ollama.host": "env OLLAMA_HOST"}


def test_show_reports_a_bad_key_as_one_line_with_file_line_and_suggestion(home, capsys):
    (home / "config.toml").write_text('[engine]\ndefualt = "ollama"\n', encoding="utf-8")
    assert main(["config", "show"]) == 1
    err = capsys.readouterr().err
    assert err == (
        f"jarvis: error: {home / 'config.toml'}:2: unknown key 'engine.defualt'; valid here: auto_embedded, "
        "default, fallback, model (did you mean 'engine.default'?)\n"
    )


def test_show_prints_legacy_key_warning_as_one_line(home, capsys):
    (home / "config.toml").write_text('ollama_host = "http://a:1"\n', encoding="utf-8")
    assert main(["config", "show"]) == 0
    captured = capsys.readouterr()
    assert 'host = "http://a:1"' in captured.out
    assert "jarvis: warning:" in captured.err and "'ollama_host' is deprecated" in captured.err


def test_show_accepts_openjarvis_engine_keys_with_the_installed_engines(home, capsys):
    """The keys as OpenJarvis's documents write them, against the real engine schemas: flat keys under
    [engine], and [engine.llamacpp] binary_path (managed mode)."""
    pytest.importorskip("jarvis_engine_openai_compat", reason="the embedded engine's schema is in jarvis-engine-openai-compat")
    (home / "config.toml").write_text(
        '[engine]\nvllm_host = "http://gpu:8000"\n\n[engine.llamacpp]\nbinary_path = "/opt/llama-server"\n'
        'model_path = "/models/m.gguf"\n', encoding="utf-8")
    with installed_registry(load_entrypoints=True, allow=["core-defaults", "core-parsers", "engine-openai-compat"]):
        assert main(["config", "show"]) == 0
    captured = capsys.readouterr()
    assert "[engine.vllm]" in captured.out and 'host = "http://gpu:8000"' in captured.out
    assert "[engine.embedded]" in captured.out and 'binary_path = "/opt/llama-server"' in captured.out
    assert 'model_path = "/models/m.gguf"' in captured.out
    assert "'engine.vllm_host' is deprecated" in captured.err
    assert "'engine.llamacpp.binary_path' is deprecated; managed mode is the 'embedded' engine" in captured.err
