"""Checks for prompt-provider plugins: recorded replies read by ``parse_response``, the blocks every prompt
built from :mod:`jarvis_core.prompts.blocks` shares, and the backend-default rules that name a provider.

A case file is a JSON list of cases ``{"provider", "note", "raw", "expected_jarvis_json"}``: the provider's
registered name, what the case shows, a model's reply as it came, and what ``parse_response`` gives for it,
decoded (``null``: the reply passes through as it is). Run each case with::

    CASES = load_prompt_cases(pathlib.Path(__file__).parent / "data" / "prompt_provider_cases.json")

    @pytest.mark.parametrize("case", CASES, ids=prompt_case_id)
    def test_recorded_case(case):
        check_prompt_case(case)
"""

from __future__ import annotations

import json
import os
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from jarvis_core.defaults.resolver import Resolved, resolve
from jarvis_core.prompts import get_provider
from jarvis_core.testing.plugins import registry_with
from jarvis_core.testing.transcripts import json_list

__all__ = [
    "SAMPLE_COMMANDS",
    "SAMPLE_CONTEXT",
    "check_default_provider",
    "check_prompt_case",
    "check_shared_prompt",
    "load_prompt_cases",
    "parse_reply",
    "prompt_case_id",
]

#: A node context every shared block reads from: the room, the speaker, the voice mode, a memory and a device.
SAMPLE_CONTEXT: Mapping[str, Any] = {
    "room": "kitchen", "speaker_name": "alex", "voice_mode": "brief", "user_memories": ["takes tea black"],
    "agents": {"home_assistant": {"devices": [{"entity_id": "light.kitchen", "name": "Kitchen light",
                                               "area": "kitchen"}]}},
}
#: Commands that must always be called (``get_weather``) and that may be answered directly (``tell_joke``).
SAMPLE_COMMANDS: Tuple[Mapping[str, Any], ...] = (
    {"command_name": "get_weather", "allow_direct_answer": False},
    {"command_name": "tell_joke", "allow_direct_answer": True},
)


def load_prompt_cases(path: Union[str, os.PathLike[str]]) -> List[Dict[str, Any]]:
    """Read a case file (a JSON list of cases)."""
    return json_list(path, "cases")


def prompt_case_id(case: Mapping[str, Any]) -> str:
    """A test id for ``case``: its provider and the start of its note."""
    return f"{case['provider']}: {case['note'][:40]}"


def parse_reply(provider: str, raw: str) -> Any:
    """What the provider named ``provider`` reads from the reply ``raw``, decoded from its JSON; ``None`` where
    the reply passes through as it is."""
    out = get_provider(provider).parse_response(raw)
    return None if out is None else json.loads(out)


def check_prompt_case(case: Mapping[str, Any]) -> None:
    """Assert that ``case``'s provider reads its reply as recorded."""
    read = parse_reply(case["provider"], case["raw"])
    assert read == case["expected_jarvis_json"], f"{prompt_case_id(case)}: read {read!r}"


def check_shared_prompt(provider: str, tools: Sequence[Any]) -> str:
    """Assert that the system prompt of the provider named ``provider`` for :data:`SAMPLE_CONTEXT`, ``tools``
    (which name ``get_weather``) and :data:`SAMPLE_COMMANDS` holds the shared blocks: the identity and context
    line, the speaker and their memories, the devices, the always-call rule and the rule against invented live
    data. The prompt, for the provider's own checks."""
    prompt = get_provider(provider).build_system_prompt(SAMPLE_CONTEXT, "Europe/Rome", list(tools),
                                                        list(SAMPLE_COMMANDS))
    assert prompt.startswith("You are Jarvis, a function calling voice assistant.\nContext: room=kitchen, style=brief"), \
        f"{provider}: the prompt does not open with the identity and context line: {prompt[:120]!r}"
    for part in ("You are speaking with alex.", "- takes tea black", "Kitchen light (light.kitchen)",
                 "Always call, never answer from memory: get_weather", "never invent live data"):
        assert part in prompt, f"{provider}: {part!r} is not in the prompt"
    return prompt


def check_default_provider(model: str, provider: Optional[str], *, plugin: str, distribution: str) -> Resolved:
    """Assert that the backend defaults of the core and ``plugin`` (an entry-point name) choose ``provider``
    for ``model`` (``None``: none), from ``distribution``'s rules; the resolution, for further checks."""
    registry = registry_with(load_entrypoints=True, allow=["core-defaults", "core-parsers", plugin])
    resolved = resolve(model, registry=registry)
    assert resolved.extras.get("prompt_provider") == provider, (model, resolved.extras)
    if provider is not None:
        assert resolved.provenance["extras.prompt_provider"].distribution == distribution
    return resolved
