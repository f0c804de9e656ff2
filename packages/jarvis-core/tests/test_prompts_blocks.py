"""The shared prompt building blocks (``jarvis_core.prompts.blocks``) and the array normalisation of
``jarvis_core.prompts.output``, tested directly rather than through a provider's whole prompt."""

from __future__ import annotations

import json
import pathlib

import pytest

from jarvis_core.prompts import NodeContext
from jarvis_core.prompts.blocks import (
    DEVICE_LIST_LIMIT,
    agent_context_summary,
    direct_answer_policy,
    identity_header,
    rules_block,
    speaker_block,
    tool_catalogue,
    tools_json_lines,
)
from jarvis_core.prompts.output import normalize_array_params

CASES = json.loads((pathlib.Path(__file__).resolve().parent / "data" / "prompt_provider_cases.json")
                   .read_text(encoding="utf-8"))

WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "Current   weather\nfor a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"},
                                                    "units": {}}},
    "allow_direct_answer": False, "included_system_prompt_text": "Use the city the user is in\n when none is said.",
    "antipatterns": ["climate history", "forecast for next year"]}}
CLOCK = {"name": "clock", "description": "", "parameters": {"type": "object", "properties": {}}}


def _devices(n: int, domain: str = "light"):
    return [{"entity_id": f"{domain}.lamp_{i}", "name": f"Lamp {i}", "area": "kitchen" if i % 2 else "hall"}
            for i in range(n)]


def _context(devices) -> NodeContext:
    return NodeContext.coerce({"agents": {"home_assistant": {"devices": devices}}})


# -- agent context summary ------------------------------------------------------------------------------
def test_few_devices_are_listed_by_room():
    text = agent_context_summary(_context(_devices(3)))
    assert text.splitlines() == ["Smart home devices:", "- hall: Lamp 0 (light.lamp_0), Lamp 2 (light.lamp_2)",
                                 "- kitchen: Lamp 1 (light.lamp_1)"]


def test_exactly_the_limit_is_still_listed():
    text = agent_context_summary(_context(_devices(DEVICE_LIST_LIMIT)))
    assert text.startswith("Smart home devices:\n- hall: ") and "light.lamp_19" in text


def test_over_twenty_devices_are_counted_by_domain_with_a_pointer_to_the_listing_tool():
    devices = _devices(18) + _devices(3, domain="switch") + [{"name": "no id", "domain": "cover"}]
    assert len(devices) > DEVICE_LIST_LIMIT
    text = agent_context_summary(_context(devices))
    assert text == ("Smart home devices: 1 cover, 18 light, 3 switch. Call get_ha_entities to find the exact "
                    "entity before acting on one.")
    assert "lamp_0" not in text and "kitchen" not in text  # no per-device listing
    assert "Call list_entities" in agent_context_summary(_context(devices), entities_tool="list_entities")


@pytest.mark.parametrize("agents", [{}, {"home_assistant": {"devices": []}}, {"home_assistant": "garbage"},
                                    {"homeassistant": {"devices": "not a list"}}])
def test_no_usable_devices_means_no_section(agents):
    assert agent_context_summary(NodeContext.coerce({"agents": agents})) == ""


# -- direct-answer policy ---------------------------------------------------------------------------------
def test_a_command_without_the_flag_must_be_called():
    text = direct_answer_policy([{"command_name": "get_weather"}, {"command_name": "tell_joke", "allow_direct_answer": True},
                                 {"command_name": "set_timer", "allow_direct_answer": False}])
    assert text.splitlines() == ["Direct answer policy:", "- Always call, never answer from memory: get_weather, set_timer",
                                 "- May be answered directly when you know the answer: tell_joke"]


def test_only_unflagged_commands_give_only_the_must_call_line():
    assert direct_answer_policy([{"command_name": "get_weather"}]).splitlines() == [
        "Direct answer policy:", "- Always call, never answer from memory: get_weather"]
    assert direct_answer_policy(None) == "" and direct_answer_policy([]) == ""


# -- tool formatting --------------------------------------------------------------------------------------
def test_tool_catalogue_with_parameters():
    text = tool_catalogue([WEATHER, CLOCK], with_parameters=True)
    assert text.splitlines() == [
        "- get_weather(city: string, days: integer, units: any): Current weather for a city",
        "  Use the city the user is in when none is said.",
        "  Not for: climate history",
        "  Not for: forecast for next year",
        "- clock()",
    ]


def test_tool_catalogue_without_parameters_lists_names_and_descriptions():
    assert tool_catalogue([WEATHER, CLOCK]).splitlines()[0] == "- get_weather: Current weather for a city"
    assert tool_catalogue([]) == ""


def test_tools_json_lines_keep_only_the_standard_keys():
    lines = tools_json_lines([WEATHER, CLOCK]).splitlines()
    assert lines[0] == "<tools>" and lines[-1] == "</tools>"
    first = json.loads(lines[1])
    assert set(first["function"]) == {"name", "description", "parameters"}
    assert json.loads(lines[2])["function"]["name"] == "clock"


# -- identity, speaker, rules -----------------------------------------------------------------------------
def test_identity_is_speaker_agnostic_and_the_speaker_block_is_separate():
    ctx = NodeContext.coerce({"room": "den", "speaker_name": "sam", "user_memories": "- likes jazz\n- vegan"})
    assert identity_header(ctx.room, ctx.voice_mode) == \
        "You are Jarvis, a function calling voice assistant.\nContext: room=den, style=brief"
    assert speaker_block(ctx).splitlines() == [
        "You are speaking with sam.", "",
        "User profile (answer questions about these directly, without calling a tool):", "- likes jazz", "- vegan"]
    assert speaker_block(NodeContext()) == ""


def test_rules_block_numbers_rules_and_uses_the_terminology():
    text = rules_block(("one_at_a_time", "param_names"), extra=["Be brief."], terminology="tool")
    assert text.splitlines() == ["Rules:", "1. Call one tool at a time.",
                                 "2. Use the exact parameter names of the tool schema.", "3. Be brief."]


# -- array normalisation on the other families' reference cases ------------------------------------------
def _expected_arguments(provider: str):
    return [call["arguments"] for case in CASES if case["provider"] == provider
            for call in (case["expected_jarvis_json"] or {}).get("tool_calls", [])]


@pytest.mark.parametrize("provider", ["Llama31MediumUntrained", "Mistral7bMediumUntrained"])
def test_expected_arguments_are_already_normalised(provider):
    expected = _expected_arguments(provider)
    assert expected and all(normalize_array_params(args) == args for args in expected)


def test_llama31_raw_arguments_normalise_to_the_expected_ones():
    case = next(c for c in CASES if c["provider"] == "Llama31MediumUntrained" and "resolved_datetimes" in c["raw"])
    raw_args = json.loads(case["raw"].split(">", 1)[1])
    assert raw_args["resolved_datetimes"] == "yesterday"
    assert normalize_array_params(raw_args) == case["expected_jarvis_json"]["tool_calls"][0]["arguments"]


def test_mistral_raw_arguments_normalise_to_the_expected_ones():
    case = next(c for c in CASES if c["provider"] == "Mistral7bMediumUntrained" and "resolved_datetimes" in c["raw"])
    (raw_call,) = json.loads(case["raw"].split("[TOOL_CALLS]", 1)[1])
    assert raw_call["arguments"]["resolved_datetimes"] == "today"
    assert normalize_array_params(raw_call["arguments"]) == case["expected_jarvis_json"]["tool_calls"][0]["arguments"]
