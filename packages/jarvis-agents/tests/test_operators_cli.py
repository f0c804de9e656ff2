"""``jarvis operators run|list|show`` through the real CLI entry point, with a scripted engine plugin and a
real SQLite file: one tick, a second tick that sees the first, a schedule, failures, and the listings."""

from __future__ import annotations

import json
import sys

import pytest

import jarvis_agents.plugin
from jarvis_core.cli.main import main
from jarvis_core.errors import EngineConnectionError
from jarvis_core.testing import FakeEngine, installed_registry
from jarvis_core.testing.plugins import simple_plugin
from jarvis_core.types import Completion, Role, ToolCall


@pytest.fixture(autouse=True)
def isolated_env(monkeypatch, tmp_path):
    for var in ("JARVIS_CONFIG", "JARVIS_ENGINE", "JARVIS_LOAD_PLUGINS", "JARVIS_DISABLE_PLUGINS", "JARVIS_DEBUG"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("JARVIS_HOME", str(tmp_path / "home"))


class Scripted(FakeEngine):
    """Engine ``fake``: every instance answers from the one shared script; ``made`` lists the instances."""

    script_items: list = []
    made: list = []

    def __init__(self, **_options):
        super().__init__()
        self.script = Scripted.script_items  # shared: one tick per CLI call takes what it needs
        Scripted.made.append(self)

    def supports_tools(self, model):
        return True  # so mode auto picks native tool calls


def jarvis(*argv, script=()):
    Scripted.script_items = list(script)
    Scripted.made = []
    with installed_registry(jarvis_agents.plugin, simple_plugin("scripted", engines={"fake": Scripted})):
        return main(list(argv))


def run_args(operator_id, *rest, db):
    return ("operators", "run", operator_id, "--engine", "fake", "--model", "m", "--db", str(db), *rest)


def test_run_once_then_a_second_run_sees_the_first(tmp_path, capsys):
    db = tmp_path / "ops.db"
    assert jarvis(*run_args("watch", "--once", "remember the code word is ORCHID", db=db), script=["ok"]) == 0
    assert capsys.readouterr().out == "ok\n"
    assert jarvis(*run_args("watch", "what is the code word?", db=db), script=["ORCHID"]) == 0
    assert capsys.readouterr().out == "ORCHID\n"
    sent = Scripted.made[0].calls[0].messages
    assert [(m.role, m.content) for m in sent[1:]] == [
        (Role.USER, "remember the code word is ORCHID"), (Role.ASSISTANT, "ok"), (Role.USER, "what is the code word?")]

    assert jarvis("operators", "list", "--db", str(db)) == 0
    table = capsys.readouterr().out.splitlines()
    assert table[0].split() == ["OPERATOR", "AGENT", "SCHEDULE", "TICKS", "FAILED", "LAST", "TICK", "LAST", "STATUS"]
    assert table[1].split()[:5] == ["watch", "operative", "manual", "2", "0"] and table[1].endswith("ok")

    assert jarvis("operators", "list", "--db", str(db), "--json") == 0
    (record,) = json.loads(capsys.readouterr().out)
    assert record["operator_id"] == "watch" and record["ticks"] == 2 and record["last"]["content"] == "ORCHID"

    assert jarvis("operators", "show", "watch", "--db", str(db)) == 0
    shown = capsys.readouterr().out
    assert "operator:     watch" in shown and "ticks:        2 (0 failed)" in shown
    assert "state:\n  ORCHID\n" in shown and "last 4 of 4 message(s):" in shown
    assert "  user: remember the code word is ORCHID" in shown

    assert jarvis("operators", "show", "watch", "--db", str(db), "--json", "--messages", "2") == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["state"] == "ORCHID" and doc["message_count"] == 4
    assert [m["content"] for m in doc["messages"]] == ["what is the code word?", "ORCHID"]


def test_run_json_and_tool_calls_on_stderr(tmp_path, capsys):
    script = [Completion(tool_calls=[ToolCall("c1", "calculator", '{"expression": "17*23"}')]), "391"]
    code = jarvis(*run_args("calc", "--tools", "calculator", "--json", "what is 17*23?", db=tmp_path / "o.db"),
                  script=script)
    out, err = capsys.readouterr()
    assert code == 0
    tick = json.loads(out)
    assert tick["ok"] is True and tick["content"] == "391" and tick["stop_reason"] == "final" and tick["tick"] == 1
    assert '[tool] calculator {"expression": "17*23"}' in err.splitlines()


def test_run_on_an_interval_prints_one_line_per_tick(tmp_path, capsys):
    code = jarvis(*run_args("feed", "--every", "50ms", "--max-ticks", "3", "check the feed", db=tmp_path / "o.db"),
                  script=["nothing new", EngineConnectionError("the engine is down", engine_id="fake"), "one item"])
    out, err = capsys.readouterr()
    assert code == 1  # one tick failed
    lines = out.splitlines()
    assert len(lines) == 3
    assert lines[0].endswith("feed tick 1 ok (final): nothing new")
    assert lines[1].endswith("feed tick 2 failed: EngineConnectionError: the engine is down")
    assert lines[2].endswith("feed tick 3 ok (final): one item")
    assert "every 0.05s" in err and "1 of 3 tick(s) failed" in err


def test_a_failed_single_tick_is_one_error_line_and_is_listed(tmp_path, capsys):
    db = tmp_path / "o.db"
    code = jarvis(*run_args("down", "tick", db=db), script=[EngineConnectionError("refused", engine_id="fake")])
    err = capsys.readouterr().err
    assert code == 1
    assert "jarvis: error: operator 'down': the tick failed: EngineConnectionError: refused" in err.splitlines()
    assert jarvis("operators", "list", "--db", str(db)) == 0
    assert "failed: EngineConnectionError: refused" in capsys.readouterr().out


def test_cron_without_croniter_names_the_extra_before_any_engine_starts(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "croniter", None)
    code = jarvis(*run_args("nightly", "--cron", "0 2 * * *", "tick", db=tmp_path / "o.db"))
    err = capsys.readouterr().err
    assert code == 1 and "croniter" in err and "pip install 'jarvis-agents[cron]'" in err
    assert Scripted.made == []


def test_a_bad_strategy_in_the_config_is_a_config_error(tmp_path, capsys, monkeypatch):
    config = tmp_path / "config.toml"
    config.write_text('[agents.monitor_operative]\nretrieval_strategy = "sqlite"\n', encoding="utf-8")
    monkeypatch.setenv("JARVIS_CONFIG", str(config))
    code = jarvis(*run_args("mon", "--agent", "monitor_operative", "tick", db=tmp_path / "o.db"))
    err = capsys.readouterr().err
    assert code == 1 and "retrieval_strategy must be one of keyword, semantic, hybrid_with_self_eval, none" in err
    assert all(e.closed for e in Scripted.made)


def test_monitor_operative_runs_with_its_axes_from_the_config(tmp_path, capsys, monkeypatch):
    config = tmp_path / "config.toml"
    config.write_text('[agents.monitor_operative]\ntask_decomposition = "phased"\n', encoding="utf-8")
    monkeypatch.setenv("JARVIS_CONFIG", str(config))
    code = jarvis(*run_args("mon", "--agent", "monitor_operative", "summarise the feed", db=tmp_path / "o.db"),
                  script=["1. Read the feed\n2. Summarise it", "Nothing happened."])
    assert code == 0 and capsys.readouterr().out == "Nothing happened.\n"
    assert "## Plan" in Scripted.made[0].calls[1].messages[0].content


def test_usage_errors(tmp_path, capsys):
    assert jarvis("operators") == 2
    assert "required: ACTION" in capsys.readouterr().err
    assert jarvis(*run_args("x", "--once", "--every", "5s", "tick", db=tmp_path / "o.db")) == 2
    assert "not allowed with argument" in capsys.readouterr().err
    assert jarvis(*run_args("x", "--every", "soon", "tick", db=tmp_path / "o.db")) == 2
    assert "not a duration" in capsys.readouterr().err
    assert jarvis(*run_args("bad id", "tick", db=tmp_path / "o.db")) == 1
    assert "operator id" in capsys.readouterr().err
    assert jarvis("operators", "show", "nobody", "--db", str(tmp_path / "o.db")) == 1
    assert "no operator 'nobody'" in capsys.readouterr().err
    assert jarvis("operators", "list", "--db", str(tmp_path / "empty.db")) == 0
    assert capsys.readouterr().out.startswith("no operators in ")


def test_help_lists_the_operators_command(capsys):
    assert jarvis("--help") == 0
    assert any(line.split()[:1] == ["operators"] for line in capsys.readouterr().out.splitlines())
