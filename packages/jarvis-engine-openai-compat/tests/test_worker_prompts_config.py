"""The BIOS layer (stable text first, time and budget last) and the worker config's validation."""

from __future__ import annotations

import datetime as dt

import pytest

from jarvis_core.errors import ConfigError
from jarvis_core.types import ToolSpec
from jarvis_engine_openai_compat.worker import RestartPolicy, TimeoutProfile, ToolLimits, WorkerConfig
from jarvis_engine_openai_compat.worker.prompts import (
    DEFAULT_PLATFORM_GUIDANCE,
    build_bios,
    current_time_line,
    resolve_timezone,
)
from jarvis_engine_openai_compat.worker.signals import control_tool_specs

UTC = dt.timezone.utc
TOOLS = [ToolSpec("weather", "The weather.", {"type": "object", "properties": {"city": {"type": "string"}}}),
         *control_tool_specs()]


def bios(now, **kw):
    return build_bios(now=now, timezone_name="UTC", **kw)


def test_stable_text_comes_first_and_changing_text_last():
    text = bios(dt.datetime(2025, 1, 7, 14, 5, tzinfo=UTC), tools=TOOLS, control_tools=True, tool_budget=3,
                ctx_per_slot=4096, capability_hints=("You can read French.",))
    parts = text.split("\n\n")
    assert parts[0] == DEFAULT_PLATFORM_GUIDANCE
    assert parts[1].startswith("Tool rules:")
    assert parts[2].startswith("Control tools send a one-way signal")
    assert parts[3] == "Capabilities: You can read French. Your context window holds 4096 tokens, this prompt included."
    assert parts[4] == "Current date and time: Tuesday 2025-01-07 14:05 (UTC, UTC+00:00)."
    assert parts[5] == "Tool turns available for this request: 3."


def test_only_the_tail_differs_between_two_requests():
    """The prefix cache keeps working: everything before the date line is byte-identical."""
    a = bios(dt.datetime(2025, 1, 7, 14, 5, 1, tzinfo=UTC), tools=TOOLS, control_tools=True, tool_budget=3)
    b = bios(dt.datetime(2025, 3, 9, 23, 59, 59, tzinfo=UTC), tools=TOOLS, control_tools=True, tool_budget=1)
    cut = a.index("Current date and time")
    assert a[:cut] == b[:cut]
    assert a != b


def test_time_is_rounded_to_the_minute():
    one = bios(dt.datetime(2025, 1, 7, 14, 5, 1, tzinfo=UTC))
    two = bios(dt.datetime(2025, 1, 7, 14, 5, 59, 999, tzinfo=UTC))
    assert one == two


def test_no_tools_means_no_tool_text():
    text = bios(dt.datetime(2025, 1, 7, tzinfo=UTC))
    assert "Tool" not in text and "tool" not in text


def test_json_mode_lists_the_tools_and_the_reply_format():
    text = bios(dt.datetime(2025, 1, 7, tzinfo=UTC), tools=TOOLS, json_tools=True, tool_budget=2)
    assert 'To call a tool, reply with {"name": <tool name>, "arguments": {...}}' in text
    assert '{"name": "weather", "description": "The weather.", "parameters": {"type": "object", ' in text


def test_time_zone_names_and_offsets():
    paris = resolve_timezone("Europe/Paris")
    line = current_time_line(dt.datetime(2025, 7, 1, 9, 30, tzinfo=paris), "Europe/Paris")
    assert line == "Current date and time: Tuesday 2025-07-01 09:30 (Europe/Paris, UTC+02:00)."
    with pytest.raises(ConfigError, match="unknown time zone 'Mars/Olympus'"):
        resolve_timezone("Mars/Olympus")
    assert resolve_timezone(None) is not None


def test_platform_guidance_can_be_replaced():
    text = bios(dt.datetime(2025, 1, 7, tzinfo=UTC), platform_guidance="You run in a lab.")
    assert text.startswith("You run in a lab.\n\n")


# -- config ----------------------------------------------------------------------------------------
def test_defaults_follow_the_issue():
    cfg = WorkerConfig(model_path="m.gguf")
    assert cfg.timeouts.absolute is None  # no absolute timeout by default
    assert cfg.stop_on_decision_request is True
    assert cfg.model_alias == "m"
    assert cfg.tool_mode == "auto"


@pytest.mark.parametrize("build, key", [
    (lambda: WorkerConfig(model_path="m", slots=0), "slots"),
    (lambda: WorkerConfig(model_path="m", threads=0), "threads"),
    (lambda: WorkerConfig(model_path="m", max_tokens=True), "max_tokens"),
    (lambda: WorkerConfig(model_path="m", tool_mode="xml"), "tool_mode"),
    (lambda: TimeoutProfile(stall_window=0), "stall_window"),
    (lambda: TimeoutProfile(absolute=-1), "absolute"),
    (lambda: RestartPolicy(crash_loop_max=0), "crash_loop_max"),
    (lambda: ToolLimits(output_cap=10), "output_cap"),
])
def test_bad_values_are_config_errors_naming_the_field(build, key):
    with pytest.raises(ConfigError) as info:
        build()
    assert info.value.key == key
    assert key in str(info.value)


def test_config_is_immutable():
    cfg = WorkerConfig(model_path="m.gguf")
    with pytest.raises(AttributeError):
        cfg.slots = 3  # type: ignore[misc]


def test_backoff_doubles_up_to_the_cap_with_bounded_jitter():
    pol = RestartPolicy(backoff_base=1.0, backoff_cap=10.0, jitter=0.1)
    assert [pol.backoff(n, 0.5) for n in range(1, 7)] == [1.0, 2.0, 4.0, 8.0, 10.0, 10.0]
    assert pol.backoff(3, 0.0) == pytest.approx(3.6)
    assert pol.backoff(3, 0.999999) == pytest.approx(4.4, rel=1e-4)
