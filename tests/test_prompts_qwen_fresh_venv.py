"""``pip install jarvis-core jarvis-prompts-qwen`` alone (built wheels, a fresh venv without the dev
environment): ``jarvis prompts list`` shows the Qwen providers and ``jarvis defaults`` names the provider of
a Qwen model and the distribution that supplied it."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
import venv

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
WHEELS_OF = [ROOT / "packages" / "jarvis-core", ROOT / "packages" / "jarvis-prompts-qwen"]

pytestmark = pytest.mark.slow


def _ok(cmd: list, env: dict) -> subprocess.CompletedProcess:
    run = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, env=env, timeout=600)
    assert run.returncode == 0, f"{' '.join(map(str, cmd))} failed ({run.returncode}):\n{run.stdout}\n{run.stderr}"
    return run


@pytest.fixture(scope="module")
def jarvis_bin(tmp_path_factory):
    pytest.importorskip("hatchling", reason="building the wheels needs hatchling (tests/requirements.txt)")
    tmp = tmp_path_factory.mktemp("qwen-fresh")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JARVIS_", "PYTHON", "VIRTUAL_ENV"))}
    env["JARVIS_HOME"] = str(tmp / "home")
    _ok([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", *WHEELS_OF, "-w", tmp / "w"], env)
    wheels = sorted((tmp / "w").glob("*.whl"))
    assert [w.name.split("-")[0] for w in wheels] == ["jarvis_core", "jarvis_prompts_qwen"], wheels
    venv.EnvBuilder(with_pip=True, system_site_packages=False, clear=True).create(tmp / "venv")
    bindir = tmp / "venv" / ("Scripts" if os.name == "nt" else "bin")
    _ok([bindir / "python", "-m", "pip", "install", "--disable-pip-version-check", "-q", *wheels], env)
    return bindir, env


def test_only_core_and_qwen_are_installed_and_the_providers_are_listed(jarvis_bin):
    bindir, env = jarvis_bin
    plugins = json.loads(_ok([bindir / "jarvis", "plugins", "--json"], env).stdout)
    assert {p["distribution"] for p in plugins["plugins"]} == {"jarvis-core", "jarvis-prompts-qwen"}
    assert plugins["failures"] == []
    listing = _ok([bindir / "jarvis", "prompts", "list"], env).stdout
    for name in ("Qwen25MediumUntrained", "Qwen3_8B_Compressed", "Qwen3_5_9B_Compressed", "Qwen25_14B_Untrained"):
        assert name in listing
    assert json.loads(_ok([bindir / "jarvis", "prompts", "list", "--json"], env).stdout)[0]["distribution"] == \
        "jarvis-prompts-qwen"


def test_defaults_name_the_provider_and_its_distribution(jarvis_bin):
    bindir, env = jarvis_bin
    out = _ok([bindir / "jarvis", "defaults", "Qwen/Qwen2.5-7B-Instruct"], env).stdout
    assert "Qwen25MediumUntrained" in out and "jarvis-prompts-qwen" in out
    probe = _ok([bindir / "python", "-c", "from jarvis_core.cli.cmd_defaults import collect; import json; "
                 "print(json.dumps(collect('Qwen/Qwen2.5-7B-Instruct')['provenance']['extras.prompt_provider']))"], env)
    assert json.loads(probe.stdout) == {"pattern": "qwen2.5-7b", "distribution": "jarvis-prompts-qwen"}
