"""``jarvis defaults MODEL [--backend B]``: the ``--json`` document and the table people read."""

from __future__ import annotations

import json

from jarvis_core.cli.main import main
from jarvis_core.testing import installed_registry


def _run(capsys, *argv):
    code = main(["defaults", *argv, "--json"])
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
    assert code == 2 and "MODEL is empty" in err


def test_table_shows_each_field_with_its_value_and_provenance(capsys, monkeypatch, tmp_path):
    cfg = tmp_path / "config.toml"
    cfg.write_text('[model_defaults."llama-3.1"]\ntop_k = 7\n', "utf-8")
    monkeypatch.setenv("JARVIS_CONFIG", str(cfg))
    # The core's rules only: an installed prompt-provider distribution adds its own llama-3.1:8b rule.
    with installed_registry(load_entrypoints=True, allow=["core-defaults", "core-parsers"]):
        assert main(["defaults", "llama3.1:8b", "--backend", "ollama"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[:3] == ["model    llama3.1:8b", "backend  ollama", ""]
    assert lines[3].split() == ["FIELD", "VALUE", "FROM"]
    value, source = lines[3].index("VALUE"), lines[3].index("FROM")
    rows = {line[:value].strip(): (line[value:source].strip(), line[source:]) for line in lines[4:lines.index("", 4)]}
    assert list(rows) == ["tool parser", "reasoning parser", "temperature", "top_p", "top_k", "min_p",
                          "repeat_penalty"]
    assert rows["tool parser"] == ("llama3_json", "rule 'llama-3.1' (jarvis-core)")
    assert rows["reasoning parser"] == ("-", "no rule")
    assert rows["temperature"] == ("1.5", "rule 'llama-3.1' (jarvis-core)")
    assert rows["top_k"] == ("7", "rule 'llama-3.1' (user config)")
    assert lines[-2] == "rules matched, most specific first: 'llama-3.1' (user config), 'llama-3.1' (jarvis-core), " \
                        "'llama-3' (jarvis-core)"
    assert lines[-1] == f"user rules: [model_defaults] of {cfg}"


def test_table_for_an_unknown_model_names_the_engine_default(capsys, monkeypatch, tmp_path):
    monkeypatch.delenv("JARVIS_CONFIG", raising=False)
    monkeypatch.setenv("JARVIS_HOME", str(tmp_path))
    assert main(["defaults", "acme/never-heard-of-it", "--no-user-config"]) == 0
    out = capsys.readouterr().out
    assert out == (
        "model    acme/never-heard-of-it (normalized: never-heard-of-it)\n"
        "backend  not given (rules for any backend)\n"
        "\n"
        "FIELD             VALUE  FROM\n"
        "tool parser       -      no rule\n"
        "reasoning parser  -      no rule\n"
        "temperature       0.7    engine default\n"
        "\n"
        "rules matched, most specific first: none\n"
        "user rules: left out (--no-user-config)\n"
    )
