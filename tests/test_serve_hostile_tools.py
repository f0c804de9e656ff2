"""Hostile tool input through a real ``jarvis serve`` process: the server keeps answering ``/health``.

The engine is jarvis's ``openai-compat`` engine pointed at a loopback stand-in that scripts the model: its
first turn calls the built-in tools with the input under test, its second answers. A managed agent runs
that turn through ``/run`` while this test polls ``/health``; every answer must come within 0.5 s.
"""

from __future__ import annotations

import json
import os
import pathlib
import time
from typing import Any, Dict, Iterator, List, Tuple

import httpx
import pytest

from jarvis_core.testing import Exchange, ReplayServer

HEALTH_BOUND_S = 0.5


def _has_tool_result(body: Any) -> bool:
    return isinstance(body, dict) and any(m.get("role") == "tool" for m in body.get("messages", []))


def _model(calls: List[Tuple[str, Dict[str, Any]]]) -> List[Exchange]:
    """A streaming model whose first turn makes ``calls`` (tool name, arguments) and whose second answers."""
    tool_calls = [{"index": i, "id": f"call_{i}", "type": "function",
                   "function": {"name": name, "arguments": json.dumps(args)}} for i, (name, args) in enumerate(calls)]

    def sse(delta: Dict[str, Any], finish: str) -> List[str]:
        def chunk(d: Dict[str, Any], reason: Any) -> str:
            return "data: " + json.dumps({"id": "x", "object": "chat.completion.chunk", "created": 0, "model": "m",
                                          "choices": [{"index": 0, "delta": d, "finish_reason": reason}]})
        return [chunk({"role": "assistant", **delta}, None), chunk({}, finish), "data: [DONE]"]

    return [
        Exchange("GET", "/v1/models", json={"object": "list", "data": [{"id": "m", "object": "model"}]}),
        Exchange("POST", "/v1/chat/completions", match=_has_tool_result, sse=sse({"content": "done"}, "stop")),
        Exchange("POST", "/v1/chat/completions", sse=sse({"tool_calls": tool_calls}, "tool_calls")),
    ]


class Serve:
    def __init__(self, url: str, home: pathlib.Path, poller: httpx.Client) -> None:
        self.url, self.home, self.poller = url, home, poller

    def health_s(self) -> float:
        """Seconds ``/health`` took to answer 200 (failing the test past the bound)."""
        started = time.monotonic()
        try:
            status = self.poller.get(self.url + "/health").status_code
        except httpx.TimeoutException:
            pytest.fail(f"/health did not answer within {HEALTH_BOUND_S}s while the tool call was in flight")
        assert status == 200
        return time.monotonic() - started


@pytest.fixture
def serve(tmp_path, jarvis_serve) -> Iterator[Any]:
    made: List[Tuple[httpx.Client, ReplayServer]] = []

    def start(calls: List[Tuple[str, Dict[str, Any]]], config: str = "") -> Tuple[Serve, ReplayServer]:
        backend = ReplayServer(_model(calls)).start()
        # one client for the polls: a new one per poll would time building its SSL context, not the server
        poller = httpx.Client(timeout=HEALTH_BOUND_S)
        made.append((poller, backend))
        home = tmp_path / "home"
        home.mkdir()
        # The mode is the server's to set ([server] agent_options leaves it out): native calls, as the stand-in scripts.
        (home / "config.toml").write_text('[agents.orchestrator]\nmode = "function_calling"\n' + config, encoding="utf-8")
        env = {k: v for k, v in os.environ.items() if not k.startswith(("JARVIS_", "OPENAI_", "OLLAMA_"))}
        env.update({"JARVIS_HOME": str(home), "PYTHONIOENCODING": "utf-8"})
        # waited for with the poller, so its connection is open before the test times anything
        _proc, url = jarvis_serve("--engine", "openai-compat", "--engine-host", backend.url + "/v1", "--model", "m",
                                 env=env, client=poller)
        return Serve(url, home, poller), backend

    yield start
    for poller, backend in made:
        poller.close()
        backend.stop()


def _run_agent_polling_health(server: Serve, tools: List[str]) -> Tuple[Dict[str, Any], List[float]]:
    """Create a managed agent with ``tools``, queue one message, ``/run`` it, and poll ``/health`` until the
    run ends; returns the run and the health latencies."""
    created = httpx.post(server.url + "/v1/managed-agents", timeout=10,
                         json={"name": "hostile", "agent_type": "orchestrator", "config": {"tools": tools}})
    assert created.status_code == 201, created.text
    agent = created.json()["id"]
    queued = httpx.post(f"{server.url}/v1/managed-agents/{agent}/messages", timeout=10,
                        json={"content": "go", "stream": False})
    assert queued.status_code == 202, queued.text
    run = httpx.post(f"{server.url}/v1/managed-agents/{agent}/run", timeout=10)
    assert run.status_code == 202, run.text
    run_id = run.json()["run_id"]
    latencies: List[float] = []
    deadline = time.monotonic() + 60
    while True:
        latencies.append(server.health_s())
        state = httpx.get(f"{server.url}/v1/managed-agents/{agent}/runs/{run_id}", timeout=HEALTH_BOUND_S).json()
        if state["status"] != "running":
            return state, latencies
        assert time.monotonic() < deadline, "the run did not end within 60 s"
        time.sleep(0.05)


def _tool_results(backend: ReplayServer) -> List[str]:
    """The tool results the model was sent in its second turn."""
    bodies = [r.json for r in backend.requests if _has_tool_result(r.json)]
    assert bodies, [r.json for r in backend.requests]
    return [m["content"] for m in bodies[0]["messages"] if m.get("role") == "tool"]


def test_hostile_calculator_input_never_stalls_health(serve):
    expressions = ["1e999999999", "9.9e99999999", "1e10000000", "9**9**9**9"]
    server, backend = serve([("calculator", {"expression": e}) for e in expressions])
    state, latencies = _run_agent_polling_health(server, ["calculator"])
    assert state["status"] == "succeeded", (state.get("error"), [(r.path, r.json) for r in backend.requests])
    results = _tool_results(backend)
    assert len(results) == len(expressions)
    assert all("CalculatorError" in r and "too large" in r for r in results), results
    assert max(latencies) < HEALTH_BOUND_S


def test_a_dripping_page_never_stalls_health_and_ends_at_the_deadline(serve):
    with ReplayServer([Exchange("GET", "/drip", headers={"content-type": "text/plain"}, raw=[b"x"] * 200,
                                delay=0.5)]) as drip:
        config = f'[tools.web_fetch]\nallow = ["127.0.0.1:{drip.port}"]\ntimeout = 1\ndeadline = 2\n'
        server, backend = serve([("web_fetch", {"url": f"{drip.url}/drip?call={i}"}) for i in range(4)], config)
        state, latencies = _run_agent_polling_health(server, ["web_fetch"])
        assert state["status"] == "succeeded", state.get("error")
        results = _tool_results(backend)
        assert len(results) == 4 and all("deadline of 2s" in r for r in results), results
        assert max(latencies) < HEALTH_BOUND_S
        assert drip.wait_until(lambda s: s.open_connections == 0)  # the fetches' connections are closed
