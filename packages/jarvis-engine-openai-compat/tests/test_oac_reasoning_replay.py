"""A thinking model's earlier reasoning is replayed in the history as ``reasoning_content`` on
OpenAI-compatible servers: the request to a REAL llama.cpp server (SmolLM2, through a loopback proxy that
records the bodies) carries it, the server accepts it, and messages without reasoning carry none."""

from __future__ import annotations

from typing import Any, Iterator

import pytest

from jarvis_core.engine.openai_wire import build_chat_payload
from jarvis_core.testing import RecordingProxy
from jarvis_core.types import Message, Role
from jarvis_engine_openai_compat.engines.llamacpp import LlamaCppEngine

pytestmark = [pytest.mark.llamacpp]

HISTORY = [
    Message.system("You are a helpful assistant."),
    Message.user("What is 2+2?"),
    Message(Role.ASSISTANT, "4", reasoning="Two plus two is four."),
    Message.user("And 3+3?"),
]


@pytest.fixture
def recording_proxy(llama_server: Any) -> Iterator[RecordingProxy]:
    with RecordingProxy(llama_server.url, timeout=120) as proxy:
        yield proxy


def test_reasoning_in_the_history_reaches_a_real_llama_cpp_server(recording_proxy):
    with LlamaCppEngine(host=recording_proxy.url) as engine:
        answer = engine.generate(HISTORY, model="smollm2", temperature=0, max_tokens=8)
    assert answer.finish_reason in ("stop", "length")  # the server took the field without complaint
    (body,) = [r["json"] for r in recording_proxy.seen if r["path"] == "/v1/chat/completions"]
    assert body["messages"][2] == {"role": "assistant", "content": "4", "reasoning_content": "Two plus two is four."}
    assert all("reasoning_content" not in m for i, m in enumerate(body["messages"]) if i != 2)


def test_dict_messages_with_reasoning_and_the_default_leave_out():
    dicts = [{"role": "assistant", "content": "4", "reasoning": "2+2"}, {"role": "user", "content": "x"}]
    replayed = build_chat_payload(dicts, model="m", reasoning_field="reasoning_content")["messages"]
    assert replayed[0] == {"role": "assistant", "content": "4", "reasoning_content": "2+2"}
    plain = build_chat_payload(HISTORY, model="m")["messages"]  # OpenAI's own API: no reasoning field
    assert all(set(m) == {"role", "content"} for m in plain)
