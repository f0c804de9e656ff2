"""``pip install jarvis-core jarvis-engine-ollama`` alone gives a working setup (built wheels, fresh venv).

Builds both wheels, creates a virtual environment WITHOUT system site packages, installs the two wheels
(their dependencies come from the package index), then checks that ``jarvis plugins`` lists the ``ollama``
engine and no other engine, and that ``jarvis ask --engine ollama`` prints the answer replayed by a
loopback :class:`~jarvis_core.testing.ReplayServer` speaking Ollama's NDJSON.
"""

from __future__ import annotations

import json

import pytest

from jarvis_core.testing import Exchange, ReplayServer

ANSWER = ["The", " sky", " scatters blue light."]

pytestmark = pytest.mark.slow


def _ndjson() -> list:
    lines = [{"model": "llama3.2", "created_at": "2025-07-07T20:22:19Z", "message": {"role": "assistant", "content": w},
              "done": False} for w in ANSWER]
    lines.append({"model": "llama3.2", "created_at": "2025-07-07T20:22:20Z", "message": {"role": "assistant", "content": ""},
                  "done": True, "done_reason": "stop", "prompt_eval_count": 26, "eval_count": 6})
    return lines


@pytest.fixture(scope="module")
def fresh_venv(fresh_venv_of):
    return fresh_venv_of("ollama-fresh", ["jarvis-core", "jarvis-engine-ollama"])


def test_only_the_ollama_engine_is_installed(fresh_venv):
    listing = json.loads(fresh_venv.run("jarvis", "plugins", "--json").stdout)
    dists = {p["distribution"] for p in listing["plugins"]}
    assert dists == {"jarvis-core", "jarvis-engine-ollama"}, dists
    engines = [e["key"] for p in listing["plugins"] for e in p["registered"].get("engine", [])]
    assert engines == ["ollama"]
    assert listing["failures"] == []
    # The fresh venv really is isolated: nothing of the dev environment leaks in.
    probe = fresh_venv.run("python", "-c", "import importlib.util as u; print(u.find_spec('jarvis_engine_cloud'))")
    assert probe.stdout.strip() == "None"


def test_jarvis_ask_prints_the_replayed_answer(fresh_venv):
    exchange = Exchange("POST", "/api/chat", match={"model": "llama3.2", "stream": True}, ndjson=_ndjson())
    with ReplayServer([exchange]) as server:
        run = fresh_venv.run("jarvis", "ask", "--engine", "ollama", "--host", server.url, "--model", "llama3.2",
                             "why is the sky blue?", timeout=120)
        (request,) = server.requests
    assert run.stdout.strip() == "".join(ANSWER)
    assert request.json["messages"][-1] == {"role": "user", "content": "why is the sky blue?"}
