"""A real server (uvicorn on loopback) keeps answering ``/health`` while a codeact run whose cell left a detached
process behind ends and its jailed REPL is closed; the agent's model is a scripted fake."""

from __future__ import annotations

import threading
import time

import httpx
import psutil
import pytest

import jarvis_agents.plugin
from jarvis_agents.sandbox.jail import jail_status
from jarvis_core.testing import FakeEngine, installed_registry
from jarvis_server.app import create_app
from jarvis_server.running import BackgroundServer
from jarvis_server.settings import ServerSettings

DETACHED_CELL = ("```python\nimport subprocess\n"
                 "subprocess.Popen(['sleep', '94.5'], start_new_session=True)\nprint('left it running')\n```")


@pytest.mark.skipif(not jail_status().available, reason=f"no jail here: {jail_status().reason}")
def test_health_answers_within_half_a_second_while_a_detached_process_cell_is_closed():
    engine = FakeEngine([DETACHED_CELL, "done"])
    with installed_registry(jarvis_agents.plugin):
        # codeact runs code, so [server] agent_types must name it (code-running agents are off over HTTP by default)
        settings = ServerSettings(agent_types=("codeact",))
        server = BackgroundServer(create_app(engine, engine_key="fake", model="fake-model", settings=settings)).start()
        try:
            slowest: list = []
            stop = threading.Event()

            def poll() -> None:
                with httpx.Client(base_url=server.url, timeout=5) as client:
                    while not stop.is_set():
                        started = time.monotonic()
                        assert client.get("/health").status_code == 200
                        slowest.append(time.monotonic() - started)
                        time.sleep(0.02)

            poller = threading.Thread(target=poll)
            poller.start()
            try:
                with httpx.Client(base_url=server.url, timeout=60) as client:
                    reply = client.post("/v1/chat/completions", json={
                        "model": "fake-model", "agent": "codeact",
                        "messages": [{"role": "user", "content": "leave something running"}]})
                time.sleep(0.5)  # the close happens as the run ends: keep polling past it
            finally:
                stop.set()
                poller.join()
        finally:
            server.stop()
    assert reply.status_code == 200, reply.text
    assert reply.json()["choices"][0]["message"]["content"] == "done"
    assert "left it running" in (engine.calls[1].messages[-1].content or "")
    assert slowest and max(slowest) < 0.5, max(slowest)
    end = time.monotonic() + 5
    while any(p.info["cmdline"] == ["sleep", "94.5"] for p in psutil.process_iter(["cmdline"])):
        assert time.monotonic() < end, "the detached process outlived the run"
        time.sleep(0.05)
