"""The CLI driving a real HTTP engine plugin (``ollama``) against the loopback replay server: the answer is
written piece by piece as the NDJSON lines arrive, a ``chat`` session reuses one pooled connection and
closes it at the end, and an engine found by probing is announced."""

from __future__ import annotations

import io
import json
import sys

import pytest

from jarvis_core.cli.main import main
from jarvis_core.testing import Exchange, ReplayServer, installed_registry

pytest.importorskip("jarvis_engine_ollama", reason="needs the jarvis-engine-ollama plugin installed")

PIECES = ["The", " sky", " scatters", " blue light."]


def _ndjson(pieces):
    lines = [{"model": "llama3.2", "created_at": "2025-07-07T20:22:19Z",
              "message": {"role": "assistant", "content": p}, "done": False} for p in pieces]
    lines.append({"model": "llama3.2", "created_at": "2025-07-07T20:22:20Z",
                  "message": {"role": "assistant", "content": ""}, "done": True, "done_reason": "stop",
                  "prompt_eval_count": 26, "eval_count": len(pieces)})
    return lines


EXCHANGES = [
    Exchange("GET", "/api/version", json={"version": "0.9.0"}),
    Exchange("GET", "/api/tags", json={"models": [{"name": "llama3.2:latest", "model": "llama3.2:latest"}]}),
    Exchange("POST", "/api/chat", match={"stream": True}, ndjson=_ndjson(PIECES), delay=0.01),
]


class Recorder(io.StringIO):
    def __init__(self):
        super().__init__()
        self.writes = []

    def write(self, text):
        self.writes.append(text)
        return super().write(text)


@pytest.fixture(autouse=True)
def isolated_env(monkeypatch, tmp_path):
    for var in ("JARVIS_CONFIG", "JARVIS_ENGINE", "JARVIS_LOAD_PLUGINS", "JARVIS_DISABLE_PLUGINS", "OLLAMA_HOST"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("JARVIS_HOME", str(tmp_path / "home"))


@pytest.fixture
def ollama_only():
    """The installed ollama plugin (a real entry point) and nothing else, as the process registry."""
    with installed_registry(load_entrypoints=True, allow=["engine-ollama"]) as registry:
        yield registry


@pytest.fixture
def server():
    with ReplayServer(EXCHANGES) as srv:
        yield srv


def test_ask_writes_each_piece_as_it_arrives(server, ollama_only, monkeypatch, capsys):
    out = Recorder()
    monkeypatch.setattr(sys, "stdout", out)
    code = main(["ask", "--engine", "ollama", "--host", server.url, "--model", "llama3.2", "Why is the sky blue?"])
    assert code == 0, capsys.readouterr().err
    assert out.writes == [*PIECES, "\n"]
    chat = next(r for r in server.requests if r.path == "/api/chat")
    body = json.loads(chat.body)
    assert body["model"] == "llama3.2" and body["stream"] is True
    assert body["messages"][0] == {"role": "system", "content": "You are a helpful assistant."}
    assert body["messages"][-1] == {"role": "user", "content": "Why is the sky blue?"}


def test_chat_session_reuses_one_connection_and_closes_it(server, ollama_only, monkeypatch, capsys):
    monkeypatch.setattr(sys, "stdin", io.StringIO("one\ntwo\nthree\n"))
    code = main(["chat", "--engine", "ollama", "--host", server.url, "--model", "llama3.2", "--fresh"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert captured.out == "The sky scatters blue light.\n" * 3
    assert server.connection_count == 1
    assert server.wait_until(lambda s: s.open_connections == 0)


def test_probed_engine_and_model_are_announced(server, ollama_only, monkeypatch, capsys):
    monkeypatch.setenv("OLLAMA_HOST", server.url)
    assert main(["ask", "hello"]) == 0
    captured = capsys.readouterr()
    assert captured.out == "The sky scatters blue light.\n"
    assert captured.err.splitlines() == [
        f"jarvis: using ollama at {server.url} (found by probing; pin it with [engine] default or --engine)",
        "jarvis: model llama3.2:latest (the first offered by ollama; choose with --model)",
    ]


def test_unreachable_engine_is_one_line_saying_what_to_do(ollama_only, capsys):
    from jarvis_core.testing import closed_port_url

    code = main(["ask", "--engine", "ollama", "--host", closed_port_url(), "--model", "llama3.2", "hi"])
    assert code == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("jarvis: error: ollama: cannot reach ")
    assert "--host" in err
