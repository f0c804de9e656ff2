"""All 27 recorded ``parse_response`` cases, each through the installed provider of the name it records:
the Qwen ones from jarvis-prompts-qwen, the Hermes, Llama, Mistral and Gemma ones from
jarvis-prompts-families, found by name through the registry as a user would."""

from __future__ import annotations

import pathlib

import pytest

from jarvis_core.prompts import get_provider
from jarvis_core.testing import check_prompt_case, load_prompt_cases, prompt_case_id

CASES = load_prompt_cases(pathlib.Path(__file__).parent / "data" / "prompt_provider_cases.json")

pytestmark = pytest.mark.usefixtures("real_registry")  # every installed plugin, a private jarvis home


def test_the_file_covers_five_families():
    assert len(CASES) == 27
    families = {get_provider(c["provider"]).model_family for c in CASES}
    assert families == {"qwen", "hermes", "llama", "mistral", "gemma"}


@pytest.mark.parametrize("case", CASES, ids=prompt_case_id)
def test_recorded_case(case):
    check_prompt_case(case)
