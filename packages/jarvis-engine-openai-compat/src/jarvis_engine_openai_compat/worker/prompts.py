"""The "BIOS" system-prompt layer the worker puts in front of every conversation.

Order of the final messages: one system message holding the BIOS layer, then (after a blank line) the
caller's system prompt, then the conversation.

**Why this order inside the BIOS layer.** llama.cpp reuses a slot's KV cache only for the longest prefix
whose bytes match the previous prompt. So the layer starts with text that never changes for a worker
(platform guidance, tool rules, tool list, capability hints) and ends with the parts that change: the date
and time (rounded to the minute, so requests within one minute share them) and the tool budget. Within one
request the whole layer is computed once, so every turn of the tool loop re-sends identical bytes and only
the new turns are evaluated; the remaining budget on later turns travels in the tool results, at the end.
"""

from __future__ import annotations

import datetime as _dt
from typing import Optional, Sequence

from jarvis_core.errors import ConfigError
from jarvis_core.tools import json_mode
from jarvis_core.types import ToolSpec

__all__ = ["DEFAULT_PLATFORM_GUIDANCE", "build_bios", "current_time_line", "resolve_timezone"]

DEFAULT_PLATFORM_GUIDANCE = (
    "You run on a local llama.cpp server managed by jarvis. An orchestrator program reads your replies; "
    "keep them focused and do not invent facts you were not given."
)

_NATIVE_TOOL_RULES = (
    "Tool rules: call a tool only when it helps with the task. Each turn in which you call tools uses one "
    "tool turn of a limited budget; when none are left, answer with what you have. Tool output may be cut "
    "to a size limit, and a tool may time out; read its result before relying on it."
)
_CONTROL_RULES = (
    "Control tools send a one-way signal to the orchestrator: low_confidence, needs_external_info, "
    "needs_stronger_reasoner, tool_limits_reached and decision_request. Call decision_request when a "
    "decision is not yours to make; it ends your turn."
)


def resolve_timezone(name: Optional[str]) -> _dt.tzinfo:
    """The tzinfo for an IANA name (``None``: the machine's local zone). Unknown names raise ConfigError."""
    if not name:
        local = _dt.datetime.now().astimezone().tzinfo
        return local if local is not None else _dt.timezone.utc
    try:
        from zoneinfo import ZoneInfo, ZoneInfoNotFoundError
    except ImportError:  # pragma: no cover - Python < 3.9 is not supported anyway
        raise ConfigError("time zones need Python's zoneinfo module", key="timezone") from None
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ConfigError(f"unknown time zone {name!r} (use an IANA name such as 'Europe/Paris')",
                          key="timezone") from None


def current_time_line(now: _dt.datetime, zone_name: Optional[str]) -> str:
    """``Current date and time: Tuesday 2025-01-07 14:05 (Europe/Paris, UTC+01:00).`` (minute precision)."""
    offset = now.strftime("%z")
    utc = f"UTC{offset[:3]}:{offset[3:]}" if offset else "UTC"
    label = zone_name or now.tzname() or utc
    return f"Current date and time: {now.strftime('%A %Y-%m-%d %H:%M')} ({label}, {utc})."


def build_bios(
    *,
    now: _dt.datetime,
    timezone_name: Optional[str] = None,
    tools: Sequence[ToolSpec] = (),
    control_tools: bool = False,
    tool_budget: int = 0,
    json_tools: bool = False,
    ctx_per_slot: Optional[int] = None,
    capability_hints: Sequence[str] = (),
    platform_guidance: Optional[str] = None,
) -> str:
    """The BIOS layer text: stable parts first, then date/time and the tool budget (see the module doc).

    ``now`` must be timezone-aware. ``tools`` are every tool offered this request, control tools
    included; ``json_tools`` adds the JSON reply format and lists the tools in the text (in native mode the
    server's chat template shows them to the model instead).
    """
    parts = [platform_guidance or DEFAULT_PLATFORM_GUIDANCE]
    if tools:
        parts.append(_NATIVE_TOOL_RULES)
        if control_tools:
            parts.append(_CONTROL_RULES)
        if json_tools:
            parts.append(json_mode.tool_note(tools))
    hints = list(capability_hints)
    if ctx_per_slot:
        hints.append(f"Your context window holds {ctx_per_slot} tokens, this prompt included.")
    if hints:
        parts.append("Capabilities: " + " ".join(hints))
    # -- the parts below change over time; they must stay last (prefix cache) ---------------------
    parts.append(current_time_line(now.replace(second=0, microsecond=0), timezone_name))
    if tools:
        parts.append(f"Tool turns available for this request: {tool_budget}.")
    return "\n\n".join(parts)
