"""The SDK and the CLI with this package's agents and tools, over a scripted engine: the request's settings
reach the agent, ask_full's shape, the answer streamed with each tool call and result on stderr, and the
``jarvis agents`` / ``jarvis tools`` listings."""

from __future__ import annotations

import json

import pytest

import jarvis_agents.plugin
from jarvis_agents.sandbox.jail import jail_status
from jarvis_core.cli.main import main
from jarvis_core.sdk import Jarvis
from jarvis_core.testing import FakeEngine, installed_registry
from jarvis_core.testing.plugins import simple_plugin
from jarvis_core.types import Completion, Usage

OPTIONS = {"stop", "response_format", "seed"}
CALL = json.dumps({"name": "calculator", "arguments": {"expression": "17*23"}})


@pytest.fixture(autouse=True)
def isolated_env(monkeypatch, tmp_path):
    for var in ("JARVIS_CONFIG", "JARVIS_ENGINE", "JARVIS_LOAD_PLUGINS", "JARVIS_DISABLE_PLUGINS", "JARVIS_DEBUG"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("JARVIS_HOME", str(tmp_path / "home"))


def script():
    return [Completion(content=CALL, usage=Usage(10, 5)), Completion(content="It is 391.", usage=Usage(20, 4))]


def test_ask_full_through_the_orchestrator_gets_the_requests_settings():
    engine = FakeEngine(script(), allowed_options=OPTIONS)
    with installed_registry(jarvis_agents.plugin):
        out = Jarvis(engine=engine, model="m", agent="orchestrator", tools=["calculator"]).ask_full(
            "What is 17 * 23?", system="You do arithmetic.", temperature=0.1, max_tokens=300).to_dict()
    assert out["content"] == "It is 391." and out["stop_reason"] == "final" and out["turns"] == 2
    assert [r["content"] for r in out["tool_results"]] == ["391"]
    assert out["usage"] == {"prompt_tokens": 30, "completion_tokens": 9, "total_tokens": 39}
    assert {c.temperature for c in engine.calls} == {0.1} and {c.max_tokens for c in engine.calls} == {300}
    assert engine.calls[0].messages[0].content.startswith("You do arithmetic.")


def test_extra_request_options_reach_the_agent_and_a_wrong_one_is_refused_by_name():
    import asyncio

    from jarvis_core.errors import InvalidOptionError

    engine = FakeEngine(script() + script(), allowed_options=OPTIONS)
    with installed_registry(jarvis_agents.plugin):
        j = Jarvis(engine=engine, model="m", agent="orchestrator", tools=["calculator"])
        out = j.ask_full("What is 17 * 23?", seed=7, mode="structured").to_dict()  # an engine option and an agent option
        assert out["content"] == "It is 391." and out["stop_reason"] == "final"
        assert [c.options.get("seed") for c in engine.calls] == [7, 7]
        assert "response_format" in engine.calls[0].options  # mode="structured" reached the orchestrator

        async def stream():
            return "".join([t async for t in j.ask_stream("What is 17 * 23?", seed=8)])

        assert asyncio.run(stream()) == "It is 391." and engine.calls[-1].options.get("seed") == 8
        calls = len(engine.calls)
        with pytest.raises(InvalidOptionError, match="'top_q'") as info:
            j.ask_full("What is 17 * 23?", top_q=0.5)  # the engine allows no top_q: named, never dropped
        assert info.value.names == ("top_q",)
        with pytest.raises(InvalidOptionError, match=r"'system_prompt'.*system="):
            j.ask_full("What is 17 * 23?", system_prompt="x")
        assert len(engine.calls) == calls  # nothing was sent


def test_the_default_system_prompt_does_not_beat_the_agents_config(tmp_path):
    config = tmp_path / "config.toml"
    config.write_text('[agents.simple]\nsystem_prompt = "Answer in French."\n', encoding="utf-8")
    engine = FakeEngine(["Bonjour"], allowed_options=OPTIONS)
    with installed_registry(jarvis_agents.plugin):
        assert Jarvis(str(config), engine=engine, model="m", agent="simple").ask("hi") == "Bonjour"
    assert engine.calls[0].messages[0].content == "Answer in French."


def test_the_agents_table_names_its_model_and_an_explicit_model_beats_it(tmp_path):
    config = tmp_path / "config.toml"
    config.write_text('[agents.simple]\nmodel = "big-model"\n', encoding="utf-8")
    engine = FakeEngine(["one", "two", "three"], allowed_options=OPTIONS)
    with installed_registry(jarvis_agents.plugin):
        out = Jarvis(str(config), engine=engine, agent="simple").ask_full("hi").to_dict()
        assert out["model"] == "big-model"
        assert Jarvis(str(config), engine=engine, model="m", agent="simple").ask_full("hi").to_dict()["model"] == "m"
        assert Jarvis(str(config), engine=engine, agent="simple").ask_full("hi", model="r").to_dict()["model"] == "r"
    assert [c.model for c in engine.calls] == ["big-model", "m", "r"]


def test_a_model_in_the_agents_table_must_be_a_model_id(tmp_path):
    from jarvis_core.errors import ConfigError

    config = tmp_path / "config.toml"
    config.write_text("[agents.simple]\nmodel = 5\n", encoding="utf-8")
    with installed_registry(jarvis_agents.plugin), pytest.raises(ConfigError, match=r"\[agents.simple\] model"):
        Jarvis(str(config), engine=FakeEngine(["x"]), agent="simple").ask("hi")


def fake_engine_plugin(items):
    """A plugin registering engine ``fake``, whose instances replay ``items``; ``.made`` lists them."""

    class Scripted(FakeEngine):
        made: list = []

        def __init__(self, **_options):
            super().__init__(list(items), allowed_options=OPTIONS)
            Scripted.made.append(self)

    plugin = simple_plugin("scripted-engine", engines={"fake": Scripted})
    plugin.engine_class = Scripted
    return plugin


def test_jarvis_ask_streams_the_answer_and_shows_tool_calls_on_stderr(capsys):
    with installed_registry(jarvis_agents.plugin, fake_engine_plugin(script())):
        code = main(["ask", "--engine", "fake", "--model", "m", "--agent", "orchestrator", "--tools", "calculator",
                     "What is 17 * 23?"])
    out, err = capsys.readouterr()
    assert code == 0 and out == "It is 391.\n"
    lines = err.splitlines()
    assert any(line.startswith("[mode] orchestrator mode auto chose structured") for line in lines)
    assert '[tool] calculator {"expression": "17*23"}' in lines
    assert any(line.startswith("[tool] calculator -> 391 (") for line in lines)


def test_jarvis_ask_json_and_a_run_that_did_not_finish(capsys):
    fragment = '{"name": "calculator", "arguments": {"expression": "1'
    cut = [Completion(content=fragment, finish_reason="length")] * 2
    with installed_registry(jarvis_agents.plugin, fake_engine_plugin(cut)):
        code = main(["ask", "--engine", "fake", "--model", "m", "--agent", "orchestrator", "--tools", "calculator",
                     "--json", "x"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["stop_reason"] == "error" and out["content"] == ""
    with installed_registry(jarvis_agents.plugin, fake_engine_plugin(cut)):
        main(["ask", "--engine", "fake", "--model", "m", "--agent", "orchestrator", "--tools", "calculator", "x"])
    assert "[agent] stopped: error: the constrained reply could not be used twice" in capsys.readouterr().err


def test_file_write_is_denied_without_an_approver_from_the_cli(capsys, tmp_path, monkeypatch):
    config = tmp_path / "config.toml"
    config.write_text(f'[tools.file_write]\nroots = ["{tmp_path}"]\n', encoding="utf-8")
    monkeypatch.setenv("JARVIS_CONFIG", str(config))
    call = json.dumps({"name": "file_write", "arguments": {"path": "a.txt", "content": "x"}})
    with installed_registry(jarvis_agents.plugin, fake_engine_plugin([call, json.dumps({"content": "could not write"})])):
        code = main(["ask", "--engine", "fake", "--model", "m", "--agent", "orchestrator", "--tools", "file_write",
                     "write it"])
    err = capsys.readouterr().err
    assert code == 0, err
    assert "[tool] file_write failed: error: denied" in err and not (tmp_path / "a.txt").exists()


def test_agents_and_tools_listings(capsys):
    with installed_registry(jarvis_agents.plugin):
        assert main(["agents"]) == 0
        table = capsys.readouterr().out.splitlines()
        assert table[0].split() == ["KEY", "DESCRIPTION", "ISOLATION", "DISTRIBUTION", "VERSION"]
        assert [line.split()[0] for line in table[1:]] == ["claude_code", "codeact", "monitor_operative",
                                                           "native_openhands", "native_react", "openhands",
                                                           "operative", "orchestrator", "react", "rlm", "simple"]
        assert main(["tools", "--json"]) == 0
        tools = {t["key"]: t for t in json.loads(capsys.readouterr().out)}
    assert set(tools) == {"calculator", "think", "file_read", "file_write", "llm", "memory_store", "memory_retrieve",
                          "memory_search", "code_interpreter", "shell_exec", "web_fetch", "web_search"}
    assert tools["file_write"]["confirm"] is True and tools["file_read"]["side_effects"] == "read"
    assert {k for k, t in tools.items() if t["open_world"]} == {"web_fetch", "web_search"}
    # which isolation the code-running tools get here (the jail, or "none (why)")
    assert tools["code_interpreter"]["isolation"] == tools["shell_exec"]["isolation"] == jail_status().describe()
    assert "isolation" not in tools["calculator"]
    with installed_registry():
        assert main(["tools"]) == 0
        assert "no tools installed; pip install jarvis-agents" in capsys.readouterr().out
