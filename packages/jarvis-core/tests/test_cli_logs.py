"""``jarvis ask`` / ``jarvis chat`` keep the conversation log and ``jarvis logs`` reads it, run in process over
scripted engines: what is logged (usage, reasoning, tool calls and results, model, engine, agent), ``-c`` and
``--cid`` sending the history, the off switches, a log that cannot be written, and listing, showing and
searching (text and ``--json``)."""

from __future__ import annotations

import json

import pytest

from jarvis_core import hookimpl
from jarvis_core.agents.tool_agent import ToolUsingAgent
from jarvis_core.cli.main import main
from jarvis_core.convlog import ConversationLog
from jarvis_core.testing import FakeEngine, installed_registry
from jarvis_core.tools import BaseTool
from jarvis_core.types import Completion, Role, ToolCall, ToolSpec, Usage


@pytest.fixture(autouse=True)
def isolated_env(monkeypatch, tmp_path):
    for var in ("JARVIS_CONFIG", "JARVIS_ENGINE", "JARVIS_LOAD_PLUGINS", "JARVIS_DISABLE_PLUGINS", "JARVIS_DEBUG",
                "JARVIS_NO_LOG"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("JARVIS_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def scripted(*script):
    """An engine class whose instances (one per command) answer from one shared script, in order."""
    instances, remaining = [], list(script)

    class Scripted(FakeEngine):
        def __init__(self, **options):
            super().__init__(models=("m1",), default=lambda call: remaining.pop(0))
            instances.append(self)

    Scripted.instances = instances
    return Scripted


class Loop(ToolUsingAgent):
    agent_id = "loop"


class Clock(BaseTool):
    spec = ToolSpec("clock", "the time", {"type": "object", "properties": {}})

    def run(self, **arguments):
        return "noon"


def plugins(engine):
    class Plugin:
        jarvis_plugin_name = "logs-test"

        @staticmethod
        @hookimpl
        def jarvis_register_engines(register):
            register("fake", engine)

        @staticmethod
        @hookimpl
        def jarvis_register_agents(register):
            register("loop", Loop)

        @staticmethod
        @hookimpl
        def jarvis_register_tools(register):
            register("clock", Clock)

    return installed_registry(Plugin())


def answer(text, prompt_tokens, completion_tokens, reasoning=None):
    return Completion(content=text, reasoning=reasoning, usage=Usage(prompt_tokens, completion_tokens))


def logged(home):
    with ConversationLog(home / "logs.db") as log:
        return list(reversed(log.responses()))


def test_ask_logs_the_answer_and_c_continues_it(isolated_env, capsys):
    engine = scripted(answer("Hello Zorblax.", 20, 4, reasoning="greet them"), answer("Zorblax.", 31, 3))
    with plugins(engine):
        assert main(["ask", "--engine", "fake", "--model", "m", "My name is Zorblax."]) == 0
        assert main(["ask", "--engine", "fake", "--model", "m", "-c", "What is my name?"]) == 0
    assert capsys.readouterr().out == "Hello Zorblax.\nZorblax.\n"
    first_call, second_call = [e.calls[0] for e in engine.instances]
    assert [(m.role, m.content) for m in second_call.messages] == [
        (Role.SYSTEM, "You are a helpful assistant."), (Role.USER, "My name is Zorblax."),
        (Role.ASSISTANT, "Hello Zorblax."), (Role.USER, "What is my name?"),
    ]
    assert len(first_call.messages) == 2
    one, two = logged(isolated_env)
    assert one.conversation_id == two.conversation_id
    assert (one.prompt, one.response, one.reasoning, one.system) == (
        "My name is Zorblax.", "Hello Zorblax.", "greet them", "You are a helpful assistant.")
    assert (one.model, one.engine, one.agent) == ("m", "fake", None)
    assert one.usage == {"prompt_tokens": 20, "completion_tokens": 4, "total_tokens": 24}
    assert two.usage["prompt_tokens"] == 31 and two.duration_s >= 0


def test_cid_continues_a_given_conversation_and_a_new_ask_starts_one(isolated_env, capsys):
    engine = scripted("a1", "b1", "a2")
    with plugins(engine):
        assert main(["ask", "--engine", "fake", "--model", "m", "qa1"]) == 0
        assert main(["ask", "--engine", "fake", "--model", "m", "qb1"]) == 0
        cid = logged(isolated_env)[0].conversation_id
        assert main(["ask", "--engine", "fake", "--model", "m", "--cid", cid[:6], "qa2"]) == 0
    sent = [(m.role, m.content) for m in engine.instances[2].calls[0].messages][1:]
    assert sent == [(Role.USER, "qa1"), (Role.ASSISTANT, "a1"), (Role.USER, "qa2")]
    a1, b1, a2 = logged(isolated_env)
    assert a1.conversation_id == a2.conversation_id != b1.conversation_id


def test_c_with_an_empty_log_is_a_usage_error(capsys):
    with plugins(scripted("x")):
        assert main(["ask", "--engine", "fake", "--model", "m", "-c", "q"]) == 2
    assert "no logged conversation to continue" in capsys.readouterr().err


@pytest.mark.parametrize("switch", ["flag", "env", "config"])
def test_the_log_can_be_switched_off(isolated_env, monkeypatch, switch, capsys):
    args = ["ask", "--engine", "fake", "--model", "m", "q"]
    if switch == "flag":
        args.insert(1, "--no-log")
    elif switch == "env":
        monkeypatch.setenv("JARVIS_NO_LOG", "1")
    else:
        isolated_env.mkdir(parents=True)
        (isolated_env / "config.toml").write_text("[log]\nenabled = false\n")
    with plugins(scripted("a")):
        assert main(args) == 0
    assert capsys.readouterr().out == "a\n"
    assert not (isolated_env / "logs.db").exists()


def test_a_log_that_cannot_be_written_never_fails_the_answer(isolated_env, monkeypatch, capsys):
    isolated_env.mkdir(parents=True)
    (isolated_env / "logs.db").mkdir()  # a directory where the file should be
    monkeypatch.setattr("sys.stdin", __import__("io").StringIO("one\ntwo\n"))
    with plugins(scripted("first", "second")):
        assert main(["chat", "--engine", "fake", "--model", "m"]) == 0
    captured = capsys.readouterr()
    assert captured.out == "first\nsecond\n"
    assert captured.err.count("could not be written") == 1, captured.err


def test_chat_logs_one_conversation_and_c_continues_it(isolated_env, monkeypatch, capsys):
    import io

    engine = scripted("r1", "r2", "r3")
    with plugins(engine):
        monkeypatch.setattr("sys.stdin", io.StringIO("q1\nq2\n"))
        assert main(["chat", "--engine", "fake", "--model", "m"]) == 0
        monkeypatch.setattr("sys.stdin", io.StringIO("q3\n"))
        assert main(["chat", "--engine", "fake", "--model", "m", "-c"]) == 0
    sent = [m.content for m in engine.instances[1].calls[0].messages[1:]]
    assert sent == ["q1", "r1", "q2", "r2", "q3"]
    assert len({r.conversation_id for r in logged(isolated_env)}) == 1


def test_agent_tool_calls_and_results_are_logged(isolated_env, capsys):
    engine = scripted(
        Completion(content="", tool_calls=[ToolCall("c1", "clock", "{}")], usage=Usage(10, 2)),
        Completion(content="It is noon.", usage=Usage(15, 4)),
    )
    with plugins(engine):
        assert main(["ask", "--engine", "fake", "--model", "m", "--agent", "loop", "--tools", "clock",
                     "what time is it?"]) == 0
    assert capsys.readouterr().out == "It is noon.\n"
    (r,) = logged(isolated_env)
    assert r.agent == "loop" and r.response == "It is noon."
    assert r.tool_calls == ({"id": "c1", "name": "clock", "arguments": "{}"},)
    assert r.tool_results == ({"tool_call_id": "c1", "name": "clock", "ok": True, "content": "noon"},)
    assert r.usage == {"prompt_tokens": 25, "completion_tokens": 6, "total_tokens": 31}


def test_json_answers_are_logged_too(isolated_env, capsys):
    with plugins(scripted(answer("whole", 3, 1, reasoning="hmm"))):
        assert main(["ask", "--engine", "fake", "--model", "m", "--json", "q"]) == 0
    (r,) = logged(isolated_env)
    assert (r.response, r.reasoning, r.usage["total_tokens"]) == ("whole", "hmm", 4)


def test_logs_lists_shows_and_searches(isolated_env, capsys):
    with plugins(scripted("Paris is the capital.", "Rome.", "Bern.")):
        for q in ("capital of France?", "capital of Italy?", "capital of Switzerland?"):
            assert main(["ask", "--engine", "fake", "--model", "m", q]) == 0
    capsys.readouterr()
    assert main(["logs", "-n", "1"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("#3  ") and "fake/m" in out and "> capital of Switzerland?\nBern.\n" in out
    assert "Rome" not in out
    assert main(["logs", "-n", "0", "--json"]) == 0
    records = json.loads(capsys.readouterr().out)
    assert [r["id"] for r in records] == [3, 2, 1] and records[0]["engine"] == "fake"
    assert main(["logs", "search", "france"]) == 0
    out = capsys.readouterr().out
    assert "Paris is the capital." in out and "Rome" not in out
    assert main(["logs", "-q", "italy", "--json"]) == 0
    assert [r["response"] for r in json.loads(capsys.readouterr().out)] == ["Rome."]
    assert main(["logs", "show", "2"]) == 0
    shown = capsys.readouterr().out
    assert "## system\nYou are a helpful assistant." in shown and "## response\nRome." in shown
    assert main(["logs", "show", "9"]) == 2
    assert "no logged answer has id 9" in capsys.readouterr().err
    assert main(["logs", "path"]) == 0
    assert capsys.readouterr().out.strip() == str(isolated_env / "logs.db")


def test_logs_on_a_missing_log_says_so_and_creates_nothing(isolated_env, capsys):
    assert main(["logs"]) == 0
    assert "nothing logged" in capsys.readouterr().err
    assert not (isolated_env / "logs.db").exists()
