"""The managed-agents stream as a client written to the documented API reads it: a plain httpx SSE reader
that knows only the documented names (``event: tool_calls`` with ``calls[].tool_name``/``arguments``,
``event: tool_result`` with ``tool_name``/``output``, chunks and ``[DONE]``), and the 503 an unavailable
engine gets before any stream starts (a real llamacpp engine pointed at a closed loopback port)."""

from __future__ import annotations

import json
import socket
from typing import Any, Dict, List

import httpx
import pytest

from jarvis_core.testing import FakeEngine
from jarvis_core.types import Completion, StreamChunk, ToolCall, Usage

A = "/v1/managed-agents"


def documented_client(url: str, agent_id: str, text: str) -> Dict[str, Any]:
    """What a client of the documented API does: POST a streamed message, read SSE lines, keep the documented
    fields. It knows nothing of jarvis's extra fields."""
    seen: Dict[str, Any] = {"answer": "", "calls": [], "results": [], "done": False}
    event = "message"
    with httpx.stream("POST", f"{url}{A}/{agent_id}/messages", json={"content": text, "stream": True}) as r:
        assert r.status_code == 200
        for line in r.iter_lines():
            if line.startswith("event:"):
                event = line.split(":", 1)[1].strip()
            elif line.startswith("data:"):
                data = line.split(":", 1)[1].strip()
                if data == "[DONE]":
                    seen["done"] = True
                elif event == "tool_calls":
                    seen["calls"] += [(c["tool_name"], json.loads(c["arguments"])) for c in json.loads(data)["calls"]]
                elif event == "tool_result":
                    body = json.loads(data)
                    seen["results"].append((body["tool_name"], body["output"]))
                else:
                    seen["answer"] += json.loads(data)["choices"][0]["delta"].get("content") or ""
            elif line == "":
                event = "message"
    return seen


def test_a_client_knowing_only_the_documented_names_reads_calls_results_and_answer(managed):
    engine = FakeEngine([Completion(tool_calls=[ToolCall("c1", "add", '{"a": 2, "b": 3}')], usage=Usage(10, 5)),
                         [StreamChunk(content="The sum is 5."), StreamChunk(finish_reason="stop", usage=Usage(20, 4))]])
    server, _ = managed(engine)
    agent = httpx.post(server.url + A, json={"name": "h", "agent_type": "tool-user", "config": {"tools": ["add"]}}).json()
    seen = documented_client(server.url, agent["id"], "2+3?")
    assert seen == {"answer": "The sum is 5.", "calls": [("add", {"a": 2, "b": 3})], "results": [("add", "5")],
                    "done": True}


def test_our_extra_fields_stay_beside_the_documented_ones(managed):
    engine = FakeEngine([Completion(tool_calls=[ToolCall("c1", "add", '{"a": 1, "b": 1}')]), "Two."])
    server, _ = managed(engine)
    agent = httpx.post(server.url + A, json={"name": "h", "agent_type": "tool-user", "config": {"tools": ["add"]}}).json()
    with httpx.stream("POST", f"{server.url}{A}/{agent['id']}/messages", json={"content": "1+1", "stream": True}) as r:
        events = managed.kit.sse_events(r.iter_lines())
    named: List[Any] = [(n, d) for n, d in events if n in ("tool_calls", "tool_result")]
    assert named[0] == ("tool_calls", {"calls": [{"tool_name": "add", "arguments": '{"a": 1, "b": 1}', "id": "c1"}]})
    name, result = named[1]
    assert name == "tool_result" and result["tool_name"] == "add" and result["output"] == "2"
    assert result["tool_call_id"] == "c1" and result["ok"] is True and result["truncated"] is False
    assert result["duration_ms"] >= 0 and "name" not in result and "content" not in result


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_an_unavailable_engine_is_a_503_before_the_stream_starts(managed):
    engines = pytest.importorskip("jarvis_engine_openai_compat.engines.llamacpp")
    engine = engines.LlamaCppEngine(host=f"http://127.0.0.1:{_closed_port()}")
    server, _ = managed(engine)
    agent = httpx.post(server.url + A, json={"name": "h", "agent_type": "plain"}).json()
    r = httpx.post(f"{server.url}{A}/{agent['id']}/messages", json={"content": "hi", "stream": True}, timeout=30)
    assert r.status_code == 503 and not r.headers["content-type"].startswith("text/event-stream")
    assert r.json()["error"]["code"] == "engine_unavailable" and "not answering" in r.json()["error"]["message"]
    assert httpx.get(server.url + "/health").status_code == 503  # the same verdict as /health
    run_id = r.headers.get("x-jarvis-run-id")
    assert run_id is None
    stored = httpx.get(f"{server.url}{A}/{agent['id']}/messages").json()["messages"]
    assert [(m["role"], m["status"]) for m in stored] == [("user", "pending")]  # the next /run delivers it
