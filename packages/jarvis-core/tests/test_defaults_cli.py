"""``jarvis defaults MODEL [--backend B]``."""

from __future__ import annotations

import json

from jarvis_core.cli.main import main


def _run(capsys, *argv):
    code = main(["defaults", *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_prints_resolution_with_provenance(capsys, monkeypatch, tmp_path):
    monkeypatch.delenv("JARVIS_CONFIG", raising=False)
    monkeypatch.setenv("JARVIS_HOME", str(tmp_path))
    code, out, _ = _run(capsys, "llama3.1:8b", "--backend", "ollama")
    assert code == 0
    doc = json.loads(out)
    assert doc["backend"] == "ollama" and doc["tool_parser"] == "llama3_json"
    assert doc["provenance"]["tool_parser"] == {"pattern": "llama-3.1", "distribution": "jarvis-core"}
    assert doc["effective_sampling"]["temperature"] == 1.5


def test_user_config_rules_apply_and_are_named(capsys, monkeypatch, tmp_path):
    cfg = tmp_path / "config.toml"
    cfg.write_text('[model_defaults."qwen3"]\ntemperature = 0\n', "utf-8")
    monkeypatch.setenv("JARVIS_CONFIG", str(cfg))
    code, out, _ = _run(capsys, "Qwen/Qwen3-8B")
    doc = json.loads(out)
    assert code == 0 and doc["sampling"]["temperature"] == 0
    assert doc["provenance"]["temperature"]["distribution"] == "user config"
    assert doc["effective_sources"]["temperature"] == "user config"
    code, out, _ = _run(capsys, "Qwen/Qwen3-8B", "--no-user-config")
    assert json.loads(out)["sampling"]["temperature"] == 0.6


def test_config_errors_are_reported_not_ignored(capsys, monkeypatch, tmp_path):
    cfg = tmp_path / "config.toml"
    cfg.write_text('[model_defaults."qwen3"]\ntemprature = 0\n', "utf-8")
    monkeypatch.setenv("JARVIS_CONFIG", str(cfg))
    code, out, err = _run(capsys, "qwen3:8b")
    assert code == 1 and out == ""
    assert "temprature" in err and "Traceback" not in err


def test_unknown_model_and_empty_model(capsys, monkeypatch, tmp_path):
    monkeypatch.delenv("JARVIS_CONFIG", raising=False)
    monkeypatch.setenv("JARVIS_HOME", str(tmp_path))
    code, out, _ = _run(capsys, "acme/never-heard-of-it")
    doc = json.loads(out)
    assert code == 0 and doc["tool_parser"] is None and doc["effective_sampling"] == {"temperature": 0.7}
    code, out, err = _run(capsys, " ")
    assert code == 1 and "MODEL is empty" in err
