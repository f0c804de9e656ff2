"""An agent's configured model may be an alias: ``jarvis serve``'s agent chat (a request naming no model runs
``[agents.<key>] model``) and its managed agents (``config.model``, else ``[agents.<type>] model``) get the
alias's model and options (the request's and the agent config's own beat them), with the official ``openai``
SDK against a real server; an alias naming another engine is a 400."""

from __future__ import annotations

import httpx
import openai
import pytest

from jarvis_core.config import load_config
from jarvis_core.testing import FakeEngine

ASK = [{"role": "user", "content": "Hi?"}]


@pytest.fixture
def config(tmp_path):
    path = tmp_path / "config.toml"
    path.write_text('[aliases]\nfast = { model = "small", options = { temperature = 0.3, seed = 7 } }\n'
                    'elsewhere = { model = "m", engine = "ollama" }\n'
                    '[agents.plain]\nmodel = "fast"\n'
                    '[agents.tool-user]\nmodel = "elsewhere"\n')
    return load_config(path)


def client(server):
    return openai.OpenAI(base_url=server.url + "/v1", api_key="unused", max_retries=0)


def test_agent_chat_runs_the_agents_configured_alias(managed, config):
    engine = FakeEngine(default="Hello.", allowed_options={"seed", "stop"})
    server, _ = managed(engine, config=config)
    c = client(server)
    reply = c.chat.completions.create(model="", messages=ASK, extra_body={"agent": "plain"})
    assert reply.choices[0].message.content == "Hello." and reply.model == "small"
    c.chat.completions.create(model="other", messages=ASK, temperature=0.9, extra_body={"agent": "plain"})
    configured, named = engine.calls
    assert (configured.model, configured.temperature, configured.options) == ("small", 0.3, {"seed": 7})
    assert (named.model, named.temperature, named.options) == ("other", 0.9, {})
    with pytest.raises(openai.BadRequestError) as info:
        c.chat.completions.create(model="", messages=ASK, extra_body={"agent": "tool-user"})
    assert "names engine 'ollama'" in str(info.value) and info.value.body["code"] == "model_not_found"


def test_managed_agents_resolve_their_models_alias(managed, config):
    engine = FakeEngine(default="Hello.", allowed_options={"seed", "stop"})
    server, _ = managed(engine, config=config)
    url = server.url + "/v1/managed-agents"

    def ask(agent_config):
        created = httpx.post(url, json={"name": "a", "agent_type": "plain", "config": agent_config})
        assert created.status_code in (200, 201), created.text
        agent_id = created.json()["id"]
        with httpx.stream("POST", f"{url}/{agent_id}/messages", json={"content": "Hi?", "stream": True},
                          timeout=30) as sent:
            assert sent.status_code == 200
            assert b"[DONE]" in sent.read()

    ask({})  # [agents.plain] model = "fast"
    ask({"model": "fast", "temperature": 0.8})
    from_table, from_config = engine.calls
    assert (from_table.model, from_table.temperature, from_table.options) == ("small", 0.3, {"seed": 7})
    assert (from_config.model, from_config.temperature, from_config.options) == ("small", 0.8, {"seed": 7})
    refused = httpx.post(url, json={"name": "b", "agent_type": "plain", "config": {"model": "elsewhere"}})
    assert refused.status_code == 400 and refused.json()["error"]["param"] == "config.model"
