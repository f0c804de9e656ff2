"""Chat completions answered through a registered agent (``agent`` in the request, or the server's default),
with the official ``openai`` SDK against a real server; the agents come from an in-process test plugin."""

from __future__ import annotations

import openai
import pytest

from jarvis_core.testing import FakeEngine
from jarvis_core.types import Role, StreamChunk, Usage

ASK = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi?"}]


def client(server):
    return openai.OpenAI(base_url=server.url + "/v1", api_key="unused", max_retries=0)


def test_request_names_the_agent(managed):
    engine = FakeEngine(["Hello."], allowed_options={"stop"})
    server, _ = managed(engine)
    r = client(server).chat.completions.create(model="fake-model", messages=ASK, max_tokens=30, stop=["\n"],
                                               extra_body={"agent": "plain"})
    assert r.choices[0].message.content == "Hello." and r.choices[0].finish_reason == "stop"
    call = engine.calls[0]
    assert [(m.role, m.content) for m in call.messages] == [(Role.SYSTEM, "Be brief."), (Role.USER, "Hi?")]
    assert call.method == "stream_full" and call.max_tokens == 30 and call.options == {"stop": ["\n"]}


def test_server_default_agent_streams_with_usage(managed):
    engine = FakeEngine([[StreamChunk(content="Hel"), StreamChunk(content="lo."),
                          StreamChunk(finish_reason="stop", usage=Usage(4, 2))]])
    server, _ = managed(engine, agent="plain")
    chunks = list(client(server).chat.completions.create(model="fake-model", messages=ASK, stream=True,
                                                         stream_options={"include_usage": True}))
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "Hello."
    assert chunks[-1].choices == [] and chunks[-1].usage.total_tokens == 6


@pytest.mark.parametrize(("extra", "param"), [
    ({"agent": "nope"}, "agent"),
    ({"agent": "plain", "tools": [{"type": "function", "function": {"name": "x"}}]}, "tools"),
])
def test_agent_request_errors(managed, extra, param):
    engine = FakeEngine([])
    server, _ = managed(engine)
    with pytest.raises(openai.BadRequestError) as info:
        client(server).chat.completions.create(model="fake-model", messages=ASK, extra_body=extra)
    assert info.value.body["param"] == param and engine.calls == []
