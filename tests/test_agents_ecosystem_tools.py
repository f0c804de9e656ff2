"""Tools from the ecosystem used by jarvis's agents end to end: an MCP server's tool (``jarvis ask --agent
orchestrator --tools add``, also for a server just configured, and a managed agent of ``jarvis serve``,
against a real stdio MCP server written with the SDK), and the seed's ``jarvis ask --agent orchestrator --tools calculator,web_search`` with a
SearXNG backend on loopback.

The model is jarvis's ``openai-compat`` engine pointed at a loopback stand-in that scripts it: the first
turn calls the tools; the second answers only when the tool messages it is sent hold the tools' real
results, so the answer can only come from them.
"""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
import time
from typing import Any, Dict, List

import httpx
import pytest

from jarvis_core.testing import Exchange, ReplayServer

SERVER = pathlib.Path(__file__).resolve().parents[1] / "packages" / "jarvis-mcp" / "tests" / "data" / "mcp_server.py"
ANSWER = "2 + 3 = 5, says the MCP server"
TOKEN = "serve-token-0123456789abcdef"


def _tool_message(body: Any) -> List[str]:
    if not isinstance(body, dict):
        return []
    return [m.get("content") for m in body.get("messages", []) if m.get("role") == "tool"]


def _sse(delta: Dict[str, Any], finish: str) -> List[str]:
    def chunk(d: Dict[str, Any], reason: Any) -> str:
        return "data: " + json.dumps({"id": "x", "object": "chat.completion.chunk", "created": 0, "model": "m",
                                      "choices": [{"index": 0, "delta": d, "finish_reason": reason}]})
    return [chunk({"role": "assistant", **delta}, None), chunk({}, finish), "data: [DONE]"]


def _model(calls: Any = (("add", {"a": 2, "b": 3}),), results: Any = ("5",), answer: str = ANSWER) -> ReplayServer:
    tool_calls = [{"index": i, "id": f"call_{i}", "type": "function",
                   "function": {"name": name, "arguments": json.dumps(args)}} for i, (name, args) in enumerate(calls)]
    completion = {"id": "x", "object": "chat.completion", "created": 0, "model": "m",
                  "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": answer}}]}
    first = {"id": "x", "object": "chat.completion", "created": 0, "model": "m",
             "choices": [{"index": 0, "finish_reason": "tool_calls",
                          "message": {"role": "assistant", "content": None, "tool_calls": tool_calls}}]}

    def answered(body: Any) -> bool:
        return _tool_message(body) == list(results)

    return ReplayServer([
        Exchange("GET", "/v1/models", json={"object": "list", "data": [{"id": "m", "object": "model"}]}),
        Exchange("POST", "/v1/chat/completions", match=lambda b: answered(b) and bool(b.get("stream")),
                 sse=_sse({"content": answer}, "stop")),
        Exchange("POST", "/v1/chat/completions", match=answered, json=completion),
        Exchange("POST", "/v1/chat/completions", match=lambda b: bool(b.get("stream")),
                 sse=_sse({"tool_calls": tool_calls}, "tool_calls")),
        Exchange("POST", "/v1/chat/completions", json=first),
    ]).start()


@pytest.fixture
def home(tmp_path) -> pathlib.Path:
    (tmp_path / "config.toml").write_text(
        "[mcp.servers.calc]\n"
        f"command = {json.dumps(sys.executable)}\n"
        f"args = [{json.dumps(str(SERVER))}]\n"
        'tools = ["add"]\n'
        "[agents.orchestrator]\n"
        'mode = "function_calling"\n'
        "[server]\n"
        'tools = ["add"]\n', encoding="utf-8")  # the server lets API clients use the MCP tool
    return tmp_path


def _env(home: pathlib.Path) -> Dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JARVIS_", "OPENAI_", "OLLAMA_"))}
    env.update({"JARVIS_HOME": str(home), "PYTHONIOENCODING": "utf-8"})
    return env


def _ask_adds(home: pathlib.Path, backend: ReplayServer) -> None:
    """``jarvis ask --agent orchestrator --tools add``: the answer comes from the MCP server's result."""
    proc = subprocess.run(
        [sys.executable, "-m", "jarvis_core.cli.main", "ask", "--engine", "openai-compat", "--host",
         backend.url + "/v1", "--model", "m", "--agent", "orchestrator", "--tools", "add", "what is 2 + 3?"],
        env=_env(home), capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert ANSWER in proc.stdout
    assert any(_tool_message(r.json) == ["5"] for r in backend.requests)


def test_jarvis_ask_uses_an_mcp_tool(home):
    backend = _model()
    try:
        listed = subprocess.run([sys.executable, "-m", "jarvis_core.cli.main", "tools", "--json"], env=_env(home),
                                capture_output=True, text=True, timeout=120)
        assert listed.returncode == 0, listed.stderr
        [add] = [t for t in json.loads(listed.stdout) if t["key"] == "add"]
        assert add["server"] == "calc" and add["distribution"] == "jarvis-mcp"
        _ask_adds(home, backend)
    finally:
        backend.stop()


def test_jarvis_ask_uses_the_tool_of_a_server_just_configured(tmp_path):
    # no tools list, nothing cached, no jarvis tools or jarvis mcp tools first: asking for "add" lists the server
    (tmp_path / "config.toml").write_text(
        f"[mcp.servers.calc]\ncommand = {json.dumps(sys.executable)}\nargs = [{json.dumps(str(SERVER))}]\n"
        '[agents.orchestrator]\nmode = "function_calling"\n', encoding="utf-8")
    backend = _model()
    try:
        _ask_adds(tmp_path, backend)
        assert (tmp_path / "mcp" / "calc.tools.json").exists()  # kept for the next command
    finally:
        backend.stop()


def test_a_managed_agent_of_jarvis_serve_uses_an_mcp_tool(home, jarvis_serve):
    backend = _model()
    try:
        _proc, url = jarvis_serve("--engine", "openai-compat", "--engine-host", backend.url + "/v1", "--model", "m",
                                  env=_env(home))
        created = httpx.post(url + "/v1/managed-agents", timeout=120, json={  # builds the tools: starts the MCP server
            "name": "mcp", "agent_type": "orchestrator", "config": {"tools": ["add"]}})
        assert created.status_code == 201, created.text
        agent = created.json()["id"]
        queued = httpx.post(f"{url}/v1/managed-agents/{agent}/messages", timeout=10,
                            json={"content": "what is 2 + 3?", "stream": False})
        assert queued.status_code == 202, queued.text
        run = httpx.post(f"{url}/v1/managed-agents/{agent}/run", timeout=10)
        assert run.status_code == 202, run.text
        run_id = run.json()["run_id"]
        deadline = time.monotonic() + 120
        while True:
            state = httpx.get(f"{url}/v1/managed-agents/{agent}/runs/{run_id}", timeout=10).json()
            if state["status"] != "running":
                break
            assert time.monotonic() < deadline, "the run did not end"
            time.sleep(0.2)
        assert state["status"] == "succeeded", state
        messages = httpx.get(f"{url}/v1/managed-agents/{agent}/messages", timeout=10).json()["messages"]
        assert ANSWER in [m.get("content") for m in messages], messages
        assert any(_tool_message(r.json) == ["5"] for r in backend.requests)
    finally:
        backend.stop()


SEARXNG = {"query": "population of paris", "results": [
    {"url": "https://en.wikipedia.org/wiki/Paris", "title": "Paris - Wikipedia",
     "content": "Paris has 2,102,650 inhabitants."}]}


def test_the_seed_example_with_calculator_and_web_search(tmp_path):
    search = ReplayServer([Exchange("GET", "/search", json=SEARXNG)]).start()
    (tmp_path / "config.toml").write_text(
        f'[tools.web_search]\nbackend = "searxng"\nurl = "{search.url}"\n'
        '[agents.orchestrator]\nmode = "function_calling"\n', encoding="utf-8")
    hit = ("1. Paris - Wikipedia\n   https://en.wikipedia.org/wiki/Paris\n   Paris has 2,102,650 inhabitants.")
    answer = "Paris has 2,102,650 inhabitants; twice that is 4205300."
    backend = _model(calls=[("web_search", {"query": "population of paris"}), ("calculator", {"expression": "2 * 2102650"})],
                     results=[hit, "4205300"], answer=answer)
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "jarvis_core.cli.main", "ask", "--engine", "openai-compat", "--host",
             backend.url + "/v1", "--model", "m", "--agent", "orchestrator", "--tools", "calculator,web_search",
             "what is twice the population of Paris?"],
            env=_env(tmp_path), capture_output=True, text=True, timeout=180)
        assert proc.returncode == 0, proc.stderr[-3000:]
        assert answer in proc.stdout
        assert search.requests[0].query["q"] == "population of paris"
    finally:
        backend.stop()
        search.stop()


async def test_jarvis_serve_offers_jarvis_tools_over_mcp_http_with_its_token(tmp_path, jarvis_serve):
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    (tmp_path / "config.toml").write_text('[mcp]\nserve = ["calculator", "think"]\n', encoding="utf-8")
    backend = _model()
    try:
        _proc, url = jarvis_serve("--engine", "openai-compat", "--engine-host", backend.url + "/v1", "--model", "m",
                                  "--token", TOKEN, env=_env(tmp_path), headers={"Authorization": f"Bearer {TOKEN}"})
        assert httpx.post(url + "/mcp", json={}, timeout=10).status_code == 401  # the server's token guards /mcp
        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"})
        async with Client(streamable_http_client(url + "/mcp", http_client=http), mode="legacy") as client:
            names = sorted(t.name for t in (await client.list_tools()).tools)
            assert names == ["calculator", "think"]
            result = await client.call_tool("calculator", {"expression": "6 * 7"})
            assert (result.is_error, result.content[0].text) == (False, "42")
    finally:
        backend.stop()
