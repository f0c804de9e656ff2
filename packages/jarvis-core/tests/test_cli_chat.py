"""``jarvis chat``: one engine for the whole session, the conversation carried (or not, with ``--fresh``),
commands, per-question errors that do not end the session, and Ctrl-C at the prompt."""

from __future__ import annotations

import io
import sys

import pytest

from jarvis_core.cli.main import main
from jarvis_core.errors import ContextLengthError
from jarvis_core.testing import FakeEngine, installed_registry
from jarvis_core.testing.plugins import simple_plugin
from jarvis_core.types import Role


@pytest.fixture(autouse=True)
def isolated_env(monkeypatch, tmp_path):
    for var in ("JARVIS_CONFIG", "JARVIS_ENGINE", "JARVIS_LOAD_PLUGINS", "JARVIS_DISABLE_PLUGINS", "JARVIS_DEBUG"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("JARVIS_HOME", str(tmp_path / "home"))


def scripted(script):
    instances = []

    class Scripted(FakeEngine):
        def __init__(self, **options):
            super().__init__(list(script))
            instances.append(self)

    Scripted.instances = instances
    return Scripted


def chat(monkeypatch, cls, stdin, *args):
    monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
    with installed_registry(simple_plugin("p", engines={"fake": cls})):
        return main(["chat", "--engine", "fake", "--model", "m", *args])


def test_one_engine_answers_every_line_and_keeps_the_conversation(monkeypatch, capsys):
    cls = scripted([["Hi", "!"], "Fine."])
    assert chat(monkeypatch, cls, "hello\n\nhow are you?\n") == 0
    assert capsys.readouterr().out == "Hi!\nFine.\n"
    (engine,) = cls.instances  # one engine for the session, closed at the end
    assert engine.closed
    second = engine.calls[1].messages
    assert [(m.role, m.content) for m in second] == [
        (Role.SYSTEM, "You are a helpful assistant."), (Role.USER, "hello"), (Role.ASSISTANT, "Hi!"),
        (Role.USER, "how are you?"),
    ]


def test_fresh_and_reset_forget_the_conversation(monkeypatch, capsys):
    cls = scripted(["a", "b"])
    assert chat(monkeypatch, cls, "one\ntwo\n", "--fresh") == 0
    assert [m.content for m in cls.instances[0].calls[1].messages] == ["You are a helpful assistant.", "two"]

    cls = scripted(["a", "b"])
    assert chat(monkeypatch, cls, "one\n/reset\ntwo\n") == 0
    assert [m.content for m in cls.instances[0].calls[1].messages] == ["You are a helpful assistant.", "two"]


def test_exit_command_stops_reading(monkeypatch, capsys):
    cls = scripted(["a"])
    assert chat(monkeypatch, cls, "one\n/exit\ntwo\n") == 0
    assert capsys.readouterr().out == "a\n"
    assert len(cls.instances[0].calls) == 1


def test_an_engine_error_is_reported_and_the_session_goes_on(monkeypatch, capsys):
    err = ContextLengthError("fake: the conversation no longer fits the context; /reset to start over")
    cls = scripted([err, "after"])
    assert chat(monkeypatch, cls, "too long\nnext\n") == 0
    captured = capsys.readouterr()
    assert captured.out == "after\n"
    assert captured.err == "jarvis: error: fake: the conversation no longer fits the context; /reset to start over\n"


def test_ctrl_c_at_the_prompt_exits_130_and_closes(monkeypatch, capsys):
    class InterruptedStdin(io.StringIO):
        def readline(self, *args):
            raise KeyboardInterrupt

    cls = scripted([])
    monkeypatch.setattr(sys, "stdin", InterruptedStdin())
    with installed_registry(simple_plugin("p", engines={"fake": cls})):
        assert main(["chat", "--engine", "fake", "--model", "m"]) == 130
    assert cls.instances[0].closed


def test_ctrl_c_during_an_answer_only_stops_that_answer(monkeypatch, capsys):
    cls = scripted([["part", KeyboardInterrupt()], "next answer"])
    assert chat(monkeypatch, cls, "first\nsecond\n") == 0
    captured = capsys.readouterr()
    assert captured.out == "part\nnext answer\n"
    assert "jarvis: answer interrupted" in captured.err
