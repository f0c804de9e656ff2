"""``pip install jarvis-core jarvis-prompts-qwen`` alone (built wheels, a fresh venv without the dev
environment): ``jarvis prompts list`` shows the Qwen providers and ``jarvis defaults`` names the provider of
a Qwen model and the distribution that supplied it."""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def qwen_venv(fresh_venv_of):
    return fresh_venv_of("qwen-fresh", ["jarvis-core", "jarvis-prompts-qwen"])


def test_only_core_and_qwen_are_installed_and_the_providers_are_listed(qwen_venv):
    plugins = json.loads(qwen_venv.run("jarvis", "plugins", "--json").stdout)
    assert {p["distribution"] for p in plugins["plugins"]} == {"jarvis-core", "jarvis-prompts-qwen"}
    assert plugins["failures"] == []
    listing = qwen_venv.run("jarvis", "prompts", "list").stdout
    for name in ("Qwen25MediumUntrained", "Qwen3_8B_Compressed", "Qwen3_5_9B_Compressed", "Qwen25_14B_Untrained"):
        assert name in listing
    assert json.loads(qwen_venv.run("jarvis", "prompts", "list", "--json").stdout)[0]["distribution"] == \
        "jarvis-prompts-qwen"


def test_defaults_name_the_provider_and_its_distribution(qwen_venv):
    out = qwen_venv.run("jarvis", "defaults", "Qwen/Qwen2.5-7B-Instruct").stdout
    assert "Qwen25MediumUntrained" in out and "jarvis-prompts-qwen" in out
    probe = qwen_venv.run("python", "-c", "from jarvis_core.cli.cmd_defaults import collect; import json; "
                          "print(json.dumps(collect('Qwen/Qwen2.5-7B-Instruct')['provenance']['extras.prompt_provider']))")
    assert json.loads(probe.stdout) == {"pattern": "qwen2.5-7b", "distribution": "jarvis-prompts-qwen"}
