"""``[agents.<key>] model = "<alias>"`` is resolved as an alias wherever an agent runs its configured model:
``jarvis ask --agent`` (through the CLI's entry point) and the SDK get the alias's model, engine and options
(the agent's own table and the caller's arguments beat the options), against a loopback server replaying a
model (the real llamacpp engine). ``jarvis serve``'s agent chat and managed agents: see
packages/jarvis-server/tests/test_agent_aliases_served.py."""

from __future__ import annotations

import pytest

from jarvis_core.cli.main import main
from jarvis_core.testing import Exchange, ReplayServer

pytest.importorskip("jarvis_engine_openai_compat", reason="the llamacpp engine is in jarvis-engine-openai-compat")
pytest.importorskip("jarvis_agents", reason="the simple agent is in jarvis-agents")

pytestmark = pytest.mark.usefixtures("real_registry")  # every installed plugin, a private jarvis home

PROPS = {"chat_template_caps": {"supports_tools": True, "supports_tool_calls": True}}


def _config(tmp_path, monkeypatch, url, agent_table=""):
    # The default engine is one nobody answers: only the alias's engine (llamacpp, on the replay server) works.
    path = tmp_path / "config.toml"
    path.write_text(f'''
[engine]
default = "ollama"

[engine.ollama]
host = "http://127.0.0.1:9"

[engine.llamacpp]
host = "{url}"

[aliases]
fast = {{ model = "small-model", engine = "llamacpp", options = {{ temperature = 0.3, seed = 7 }} }}

[agents.simple]
model = "fast"
{agent_table}
''')
    monkeypatch.setenv("JARVIS_CONFIG", str(path))
    return path


def _chat_bodies(server):
    return [r.json for r in server.requests if r.path == "/v1/chat/completions"]


def test_jarvis_ask_agent_runs_the_alias_of_its_configured_model(tmp_path, monkeypatch, capsys, chat_reply):
    with ReplayServer([Exchange("GET", "/props", json=PROPS, times=None), chat_reply("Hello.")]) as server:
        _config(tmp_path, monkeypatch, server.url)
        code = main(["ask", "--agent", "simple", "say hello"])
        out = capsys.readouterr()
    assert code == 0, out.err
    assert out.out.strip() == "Hello."
    (body,) = _chat_bodies(server)
    assert (body["model"], body["temperature"], body["seed"]) == ("small-model", 0.3, 7)


def test_the_agents_table_and_the_callers_arguments_beat_the_alias_options(tmp_path, monkeypatch, chat_reply):
    from jarvis_core.sdk import Jarvis

    with ReplayServer([Exchange("GET", "/props", json=PROPS, times=None), chat_reply("One."),
                       chat_reply("Two.")]) as server:
        _config(tmp_path, monkeypatch, server.url, "temperature = 0.6\n")
        with Jarvis(agent="simple") as j:
            first = j.ask_full("q")
            j.ask_full("q", temperature=0.1, seed=11)
    assert (first.content, first.model, first.engine) == ("One.", "small-model", "llamacpp")
    table, explicit = _chat_bodies(server)
    assert (table["model"], table["temperature"], table["seed"]) == ("small-model", 0.6, 7)
    assert (explicit["temperature"], explicit["seed"]) == (0.1, 11)
