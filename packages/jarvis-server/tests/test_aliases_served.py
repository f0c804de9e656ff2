"""A request's ``model`` may be an alias from the config: the engine gets the alias's model and options (the
request's own beat them), streamed or not; an alias for another engine is a 400 naming the field."""

from __future__ import annotations

import openai
import pytest

from jarvis_core.config import load_config
from jarvis_core.testing import FakeEngine


def client(server) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.url + "/v1", api_key="unused", max_retries=0)


@pytest.fixture
def config(tmp_path, monkeypatch):
    path = tmp_path / "config.toml"
    path.write_text('[aliases]\nfast = { model = "small", options = { temperature = 0.3, seed = 7 } }\n'
                    'elsewhere = { model = "m", engine = "ollama" }\n')
    return load_config(path)


def test_the_model_field_resolves_an_alias(serve, config):
    engine = FakeEngine(default="hi")
    server = serve(engine, config=config)
    c = client(server)
    reply = c.chat.completions.create(model="fast", messages=[{"role": "user", "content": "q"}])
    assert reply.choices[0].message.content == "hi"
    chunks = list(c.chat.completions.create(model="fast", messages=[{"role": "user", "content": "q"}],
                                            temperature=0.9, stream=True))
    assert "".join(ch.choices[0].delta.content or "" for ch in chunks if ch.choices) == "hi"
    plain = c.chat.completions.create(model="other", messages=[{"role": "user", "content": "q"}])
    assert plain.choices[0].message.content == "hi"
    first, second, third = engine.calls
    assert (first.model, first.temperature, first.options) == ("small", 0.3, {"seed": 7})
    assert (second.model, second.temperature) == ("small", 0.9)
    assert third.model == "other"


def test_an_alias_for_another_engine_is_a_400(serve, config):
    server = serve(FakeEngine(default="hi"), config=config)
    with pytest.raises(openai.BadRequestError) as info:
        client(server).chat.completions.create(model="elsewhere", messages=[{"role": "user", "content": "q"}])
    assert "names engine 'ollama'" in str(info.value) and info.value.body["param"] == "model"


def test_v1_models_lists_the_aliases_this_server_answers(serve, tmp_path):
    path = tmp_path / "config.toml"
    path.write_text('[aliases]\nfast = { model = "small", options = { temperature = 0.3, seed = 7 } }\n'
                    'here = { model = "big", engine = "fake" }\n'
                    'elsewhere = { model = "m", engine = "ollama" }\n')
    server = serve(FakeEngine(default="hi", models=["fake-model", "small"]), config=load_config(path))
    listed = {m.id: m for m in client(server).models.list()}
    assert list(listed) == ["fake-model", "small", "fast", "here"]  # not the alias for another engine
    fast = listed["fast"].model_dump()
    assert fast["object"] == "model" and fast["owned_by"] == "fake"
    # What it resolves to, and only the names of its options (never their values).
    assert fast["jarvis"] == {"alias_of": "small", "engine": "fake", "options": ["seed", "temperature"]}
    assert "0.3" not in str(fast) and listed["here"].model_dump()["jarvis"]["alias_of"] == "big"
