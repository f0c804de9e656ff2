"""``jarvis ask --agent operative "…"`` works as written: no operator id given, the operator ``default`` is
used and announced on stderr, and the next ask remembers (the real llamacpp engine against a loopback
server replaying a model's streamed answers)."""

from __future__ import annotations

import json
from typing import Any, Dict, List

import pytest

from jarvis_core.cli.main import main
from jarvis_core.testing import Exchange, ReplayServer, installed_registry

pytest.importorskip("jarvis_engine_openai_compat", reason="the llamacpp engine is in jarvis-engine-openai-compat")
pytest.importorskip("jarvis_agents", reason="the operative agent is in jarvis-agents")

PROPS = {"chat_template_caps": {"supports_tools": True, "supports_tool_calls": True}}


@pytest.fixture(autouse=True)
def real_registry(monkeypatch, tmp_path):
    monkeypatch.setenv("JARVIS_HOME", str(tmp_path / "home"))
    for var in ("JARVIS_CONFIG", "JARVIS_LOAD_PLUGINS"):
        monkeypatch.delenv(var, raising=False)
    with installed_registry(load_entrypoints=True, block=[], strict=False) as registry:
        yield registry


def _sse(text: str) -> List[str]:
    chunks: List[Dict[str, Any]] = [
        {"id": "c", "object": "chat.completion.chunk", "model": "m",
         "choices": [{"index": 0, "delta": {"role": "assistant", "content": text}, "finish_reason": None}]},
        {"id": "c", "object": "chat.completion.chunk", "model": "m",
         "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
         "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}},
    ]
    return [f"data: {json.dumps(c)}" for c in chunks] + ["data: [DONE]"]


@pytest.mark.parametrize("agent", ["operative", "monitor_operative"])
def test_ask_an_operative_without_an_operator_id(agent, capsys):
    # The answer, then (monitor_operative's default axes) its extra calls, answered with an empty list.
    replies = [Exchange("GET", "/props", json=PROPS),
               Exchange("POST", "/v1/chat/completions", sse=_sse("Noted."), times=1),
               Exchange("POST", "/v1/chat/completions", sse=_sse("[]"))]
    with ReplayServer(replies) as server:
        code = main(["ask", "--engine", "llamacpp", "--host", server.url, "--model", "m", "--agent", agent,
                     "remember: the code word is ORCHID"])
        out = capsys.readouterr()
    assert code == 0, out.err
    assert "[operator] no operator id given: remembering as operator 'default'" in out.err
    assert "needs an operator id" not in out.err
