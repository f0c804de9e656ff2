"""``pip install jarvis-core jarvis-engine-ollama`` alone gives a working setup (built wheels, fresh venv).

Builds both wheels, creates a virtual environment WITHOUT system site packages, installs the two wheels
(their dependencies come from the package index), then checks that ``jarvis plugins`` lists the ``ollama``
engine and no other engine, and that ``jarvis ask --engine ollama`` prints the answer replayed by a
loopback :class:`~jarvis_core.testing.ReplayServer` speaking Ollama's NDJSON.
"""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
import venv

import pytest

from jarvis_core.testing import Exchange, ReplayServer

ROOT = pathlib.Path(__file__).resolve().parents[1]
PACKAGES = [ROOT / "packages" / "jarvis-core", ROOT / "packages" / "jarvis-engine-ollama"]
ANSWER = ["The", " sky", " scatters blue light."]

pytestmark = pytest.mark.slow


def _ndjson() -> list:
    lines = [{"model": "llama3.2", "created_at": "2025-07-07T20:22:19Z", "message": {"role": "assistant", "content": w},
              "done": False} for w in ANSWER]
    lines.append({"model": "llama3.2", "created_at": "2025-07-07T20:22:20Z", "message": {"role": "assistant", "content": ""},
                  "done": True, "done_reason": "stop", "prompt_eval_count": 26, "eval_count": 6})
    return lines


def _run(cmd: list, env: dict, timeout: float = 600) -> subprocess.CompletedProcess:
    run = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, env=env, timeout=timeout)
    assert run.returncode == 0, f"{' '.join(map(str, cmd))} failed ({run.returncode}):\n{run.stdout}\n{run.stderr}"
    return run


@pytest.fixture(scope="module")
def fresh_venv(tmp_path_factory):
    pytest.importorskip("hatchling", reason="building the wheels needs hatchling (tests/requirements.txt)")
    tmp = tmp_path_factory.mktemp("ollama-fresh")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JARVIS_", "OLLAMA_", "PYTHON", "VIRTUAL_ENV"))}
    env["JARVIS_HOME"] = str(tmp / "jarvis-home")  # no user config file
    wheels = tmp / "wheels"
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", *PACKAGES, "-w", wheels], env)
    built = sorted(wheels.glob("*.whl"))
    assert [w.name.split("-")[0] for w in built] == ["jarvis_core", "jarvis_engine_ollama"], built
    target = tmp / "venv"
    venv.EnvBuilder(with_pip=True, system_site_packages=False, clear=True).create(target)
    bindir = target / ("Scripts" if os.name == "nt" else "bin")
    python = bindir / "python"
    _run([python, "-m", "pip", "install", "--disable-pip-version-check", "-q", *built], env)
    return bindir, env


def test_only_the_ollama_engine_is_installed(fresh_venv):
    bindir, env = fresh_venv
    listing = json.loads(_run([bindir / "jarvis", "plugins", "--json"], env).stdout)
    dists = {p["distribution"] for p in listing["plugins"]}
    assert dists == {"jarvis-core", "jarvis-engine-ollama"}, dists
    engines = [e["key"] for p in listing["plugins"] for e in p["registered"].get("engine", [])]
    assert engines == ["ollama"]
    assert listing["failures"] == []
    # The fresh venv really is isolated: nothing of the dev environment leaks in.
    probe = _run([bindir / "python", "-c", "import importlib.util as u; print(u.find_spec('jarvis_engine_cloud'))"], env)
    assert probe.stdout.strip() == "None"


def test_jarvis_ask_prints_the_replayed_answer(fresh_venv):
    bindir, env = fresh_venv
    exchange = Exchange("POST", "/api/chat", match={"model": "llama3.2", "stream": True}, ndjson=_ndjson())
    with ReplayServer([exchange]) as server:
        run = _run([bindir / "jarvis", "ask", "--engine", "ollama", "--host", server.url, "--model", "llama3.2",
                    "why is the sky blue?"], env, timeout=120)
        (request,) = server.requests
    assert run.stdout.strip() == "".join(ANSWER)
    assert request.json["messages"][-1] == {"role": "user", "content": "why is the sky blue?"}
