"""``jarvis ask`` run in process (``main([...])``) over scripted engines registered as plugins: streaming
to stdout piece by piece, options reaching the engine, announcements on stderr, one-line errors, exit
codes, and the engine closed on every path."""

from __future__ import annotations

import io
import json
import sys

import pytest

from jarvis_core import hookimpl
from jarvis_core.agents import BaseAgent, TextDelta
from jarvis_core.cli.main import main
from jarvis_core.errors import EngineConnectionError
from jarvis_core.testing import FakeEngine, installed_registry
from jarvis_core.tools import BaseTool
from jarvis_core.types import Role, ToolSpec


@pytest.fixture(autouse=True)
def isolated_env(monkeypatch, tmp_path):
    for var in ("JARVIS_CONFIG", "JARVIS_ENGINE", "JARVIS_LOAD_PLUGINS", "JARVIS_DISABLE_PLUGINS", "JARVIS_DEBUG"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("JARVIS_HOME", str(tmp_path / "home"))


class Recorder(io.StringIO):
    """stdout that remembers each write, to see that the answer arrives in pieces."""

    def __init__(self):
        super().__init__()
        self.writes = []

    def write(self, text):
        self.writes.append(text)
        return super().write(text)

    def isatty(self):
        return False


def scripted(script, *, healthy=True, models=("m1",)):
    instances = []

    class Scripted(FakeEngine):
        def __init__(self, **options):
            super().__init__(list(script), healthy=healthy, models=models)
            self.options = options
            instances.append(self)

    Scripted.instances = instances
    return Scripted


class EchoAgent(BaseAgent):
    agent_id = "echo"
    accepts_tools = True

    async def loop(self, run):
        text = f"agent saw {run.input!r} with {len(self.tools)} tool(s)"
        yield TextDelta(run.run_id, 1, text)
        run.finish(text, "final")


class Clock(BaseTool):
    spec = ToolSpec("clock", "the time", {"type": "object", "properties": {}})

    def run(self, **arguments):
        return "noon"


def plugins(engines=None, agents=None, tools=None, discoverable=None):
    discoverable = discoverable or {}

    class Plugin:
        jarvis_plugin_name = "cli-test"

        @staticmethod
        @hookimpl
        def jarvis_register_engines(register):
            for key, cls in (engines or {}).items():
                register(key, cls, discoverable=discoverable.get(key, True))

        @staticmethod
        @hookimpl
        def jarvis_register_agents(register):
            for key, cls in (agents or {}).items():
                register(key, cls)

        @staticmethod
        @hookimpl
        def jarvis_register_tools(register):
            for key, cls in (tools or {}).items():
                register(key, cls)

    return installed_registry(Plugin())


def test_answer_streams_in_pieces_and_engine_is_closed(monkeypatch, capsys):
    cls = scripted([["Par", "is", "."]])
    out = Recorder()
    monkeypatch.setattr(sys, "stdout", out)
    with plugins({"fake": cls}):
        code = main(["ask", "--engine", "fake", "--model", "m", "What", "is", "the", "capital?"])
    assert code == 0
    assert out.writes == ["Par", "is", ".", "\n"]
    assert capsys.readouterr().err == ""
    (engine,) = cls.instances
    assert engine.closed
    call = engine.calls[0]
    assert call.method == "stream_full" and call.model == "m"
    assert [(m.role, m.content) for m in call.messages] == [
        (Role.SYSTEM, "You are a helpful assistant."), (Role.USER, "What is the capital?")
    ]
    assert (call.temperature, call.max_tokens) == (None, 1024)


def test_request_options_reach_the_engine(capsys):
    cls = scripted(["ok"])
    with plugins({"fake": cls}):
        code = main(["ask", "--engine", "fake", "--host", "http://h:1", "--model", "m", "--system", "",
                     "--temperature", "0", "--max-tokens", "7", "q"])
    assert code == 0 and capsys.readouterr().out == "ok\n"
    engine = cls.instances[0]
    assert engine.options == {"host": "http://h:1"}
    call = engine.calls[0]
    assert [m.role for m in call.messages] == [Role.USER]
    assert (call.temperature, call.max_tokens) == (0.0, 7)


def test_model_picked_is_announced_on_stderr(capsys):
    with plugins({"fake": scripted(["ok"], models=("small", "big"))}):
        assert main(["ask", "--engine", "fake", "q"]) == 0
    captured = capsys.readouterr()
    assert captured.out == "ok\n"
    assert captured.err == "jarvis: model small (the first of 2 offered by fake; choose with --model)\n"


def test_discovered_engine_is_announced(capsys):
    with plugins({"down": scripted(["x"], healthy=False), "up": scripted(["from up"])}):
        assert main(["ask", "--model", "m", "q"]) == 0
    captured = capsys.readouterr()
    assert captured.out == "from up\n"
    assert captured.err.startswith("jarvis: using up (found by probing;")


def test_json_output(capsys):
    with plugins({"fake": scripted(["whole"])}):
        assert main(["ask", "--engine", "fake", "--model", "m", "--json", "q"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["content"] == "whole" and doc["engine"] == "fake" and doc["model"] == "m"


def test_prompt_from_stdin(monkeypatch, capsys):
    cls = scripted(["ok"])
    monkeypatch.setattr(sys, "stdin", io.StringIO("  piped question \n"))
    with plugins({"fake": cls}):
        assert main(["ask", "--engine", "fake", "--model", "m", "-"]) == 0
    assert cls.instances[0].calls[0].messages[-1].content == "piped question"


def test_empty_question_is_a_usage_error(monkeypatch, capsys):
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))
    with plugins({"fake": scripted([])}):
        assert main(["ask", "--engine", "fake", "-"]) == 2
    assert capsys.readouterr().err == 'jarvis: error: the question is empty: jarvis ask "your question"\n'


def test_unknown_engine_lists_available(capsys):
    with plugins({"fake": scripted([]), "other": scripted([])}):
        assert main(["ask", "--engine", "nope", "q"]) == 1
    assert capsys.readouterr().err == "jarvis: error: unknown engine 'nope'; available: fake, other\n"


def test_engine_error_mid_stream_is_one_line_and_engine_closed(capsys):
    err = EngineConnectionError("fake: the server went away; is it running?", engine_id="fake")
    cls = scripted([["Hel", err]])
    with plugins({"fake": cls}):
        assert main(["ask", "--engine", "fake", "--model", "m", "q"]) == 1
    captured = capsys.readouterr()
    assert captured.out == "Hel\n"
    assert captured.err == "jarvis: error: fake: the server went away; is it running?\n"
    assert cls.instances[0].closed


def test_unexpected_exception_says_bug_and_debug_shows_traceback(capsys, monkeypatch):
    with plugins({"fake": scripted([ValueError("oops")])}):
        assert main(["ask", "--engine", "fake", "--model", "m", "q"]) == 1
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "unexpected ValueError: oops" in err and "--debug" in err
        assert main(["ask", "--debug", "--engine", "fake", "--model", "m", "q"]) == 1
        err = capsys.readouterr().err
        assert "Traceback (most recent call last)" in err and err.rstrip().splitlines()[-1].startswith("jarvis: error:")
        monkeypatch.setenv("JARVIS_DEBUG", "1")
        assert main(["ask", "--engine", "fake", "--model", "m", "q"]) == 1
        assert "Traceback" in capsys.readouterr().err


def test_ctrl_c_mid_stream_exits_130_and_closes_engine(capsys):
    cls = scripted([["partial", KeyboardInterrupt()]])
    with plugins({"fake": cls}):
        assert main(["ask", "--engine", "fake", "--model", "m", "q"]) == 130
    assert capsys.readouterr().out == "partial\n"
    assert cls.instances[0].closed


def test_nothing_reachable_is_one_line_saying_what_to_do(capsys):
    with plugins({"down": scripted([], healthy=False)}):
        assert main(["ask", "q"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith("jarvis: error: no inference engine is reachable (probed: down). Start a server")
    assert "pip install 'jarvis-engine-openai-compat[embedded]'" in err


def test_embedded_engine_used_when_nothing_reachable(capsys):
    embedded = scripted(["tiny answer"], models=("SmolLM2",))
    with plugins({"down": scripted([], healthy=False), "embedded": embedded}, discoverable={"embedded": False}):
        assert main(["ask", "q"]) == 0
    captured = capsys.readouterr()
    assert captured.out == "tiny answer\n"
    lines = captured.err.splitlines()
    assert lines[0].startswith("jarvis: no engine server is reachable; starting the embedded llama.cpp server")
    assert lines[1] == "jarvis: model SmolLM2 (the first offered by embedded; choose with --model)"
    assert embedded.instances[0].closed  # the managed server is stopped on exit


def test_configured_fallback_via_config_file(tmp_path, monkeypatch, capsys):
    config = tmp_path / "config.toml"
    config.write_text('[engine]\ndefault = "down"\nfallback = true\n', encoding="utf-8")
    monkeypatch.setenv("JARVIS_CONFIG", str(config))
    with plugins({"down": scripted([], healthy=False), "up": scripted(["fell back"])}):
        assert main(["ask", "--model", "m", "q"]) == 0
    captured = capsys.readouterr()
    assert captured.out == "fell back\n"
    assert "jarvis: down is not answering; falling back to up ([engine] fallback = true)" in captured.err


def test_config_error_is_one_line(tmp_path, monkeypatch, capsys):
    config = tmp_path / "config.toml"
    config.write_text("[engine]\ndefualt = 'x'\n", encoding="utf-8")
    monkeypatch.setenv("JARVIS_CONFIG", str(config))
    with plugins({"fake": scripted([])}):
        assert main(["ask", "--engine", "fake", "q"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(config) in err and "defualt" in err


def test_agent_and_tools(capsys):
    with plugins({"fake": scripted([])}, agents={"echo": EchoAgent}, tools={"clock": Clock}):
        assert main(["ask", "--engine", "fake", "--model", "m", "--agent", "echo", "--tools", "clock", "hi"]) == 0
        assert capsys.readouterr().out == "agent saw 'hi' with 1 tool(s)\n"
        assert main(["ask", "--engine", "fake", "--agent", "ech", "hi"]) == 1
        assert capsys.readouterr().err == "jarvis: error: unknown agent 'ech'; available: echo\n"
        assert main(["ask", "--engine", "fake", "--agent", "echo", "--tools", "clock,clok", "hi"]) == 1
        assert capsys.readouterr().err == "jarvis: error: unknown tool 'clok'; available: clock\n"


def test_unknown_names_are_reported_before_any_engine_is_built(capsys):
    cls = scripted([])
    with plugins({"fake": cls}, agents={"echo": EchoAgent}):
        assert main(["ask", "--engine", "fake", "--agent", "nope", "hi"]) == 1
    assert cls.instances == []


def test_a_failing_close_is_a_warning_line(capsys):
    class BadClose(FakeEngine):
        def __init__(self, **options):
            super().__init__([["fine"]])

        def close(self):
            raise OSError("socket already gone")

    with plugins({"fake": BadClose}):
        assert main(["ask", "--engine", "fake", "--model", "m", "q"]) == 0
        captured = capsys.readouterr()
        assert captured.out == "fine\n"
        assert captured.err == "jarvis: warning: closing the engine failed: OSError: socket already gone\n"
