"""All 27 recorded ``parse_response`` cases, each through the installed provider of the name it records:
the Qwen ones from jarvis-prompts-qwen, the Hermes, Llama, Mistral and Gemma ones from
jarvis-prompts-families, found by name through the registry as a user would."""

from __future__ import annotations

import json
import pathlib

import pytest

from jarvis_core.plugins.registry import reset_registry
from jarvis_core.prompts import get_provider

CASES = json.loads((pathlib.Path(__file__).parent / "data" / "prompt_provider_cases.json").read_text(encoding="utf-8"))


@pytest.fixture(autouse=True)
def fresh_registry(monkeypatch, tmp_path):
    monkeypatch.setenv("JARVIS_HOME", str(tmp_path))
    for var in ("JARVIS_LOAD_PLUGINS", "JARVIS_DISABLE_PLUGINS", "JARVIS_CONFIG"):
        monkeypatch.delenv(var, raising=False)
    reset_registry()
    yield
    reset_registry()


def test_the_file_covers_five_families():
    assert len(CASES) == 27
    families = {get_provider(c["provider"]).model_family for c in CASES}
    assert families == {"qwen", "hermes", "llama", "mistral", "gemma"}


@pytest.mark.parametrize("case", CASES, ids=[f"{c['provider']}: {c['note'][:40]}" for c in CASES])
def test_recorded_case(case):
    out = get_provider(case["provider"]).parse_response(case["raw"])
    assert (None if out is None else json.loads(out)) == case["expected_jarvis_json"]
