"""Shared building blocks prompt providers assemble their system prompts from.

The text is written once here, so a rule fixed for one family is fixed for all. Rules that mention the
callable things take a ``terminology`` (``"function"`` or ``"tool"``) so each family can use the word its
chat template uses.

Layout advice for providers (llama.cpp reuses the KV cache of the longest shared prefix): stable text
first (identity, rules), request-dependent text last (tools, devices). :func:`identity_header` is
deliberately speaker-agnostic for that reason; the speaker goes in :func:`speaker_block`.
"""

from __future__ import annotations

import json
from typing import Any, Dict, List, Mapping, Optional, Sequence

from jarvis_core.prompts.context import NodeContext, coerce_tools

__all__ = [
    "ANTI_HALLUCINATION",
    "DATE_KEYS",
    "RULES",
    "agent_context_summary",
    "direct_answer_policy",
    "TOOLS_INTRO",
    "fallback_line",
    "function_calling_intro",
    "identity_header",
    "join_sections",
    "rules_block",
    "speaker_block",
    "tool_call_format",
    "tool_catalogue",
    "tools_json_lines",
    "tools_section",
]

#: The natural date keys models put in date parameters; the downstream system resolves them.
DATE_KEYS = ("today", "tomorrow", "day_after_tomorrow", "yesterday", "this_weekend", "this_year", "next_week")

ANTI_HALLUCINATION = (
    "When a request matches an available {terminology}, call it: never invent live data (weather, scores, "
    "news, device states) and never claim to have done something you did not do. Facts listed in the user "
    "profile are yours to answer from directly."
)

#: The shared rules, by key, each with a ``{terminology}`` slot where it names the callable things.
RULES: Dict[str, str] = {
    "required": "Fill in every required {terminology} parameter; when one is implied but not said, use the "
    "most natural default (a date defaults to today).",
    "one_at_a_time": "Call one {terminology} at a time.",
    "param_names": "Use the exact parameter names of the {terminology} schema.",
    "meaning": "Choose the {terminology} whose purpose matches what the user means, not the one sharing a word "
    "with the request.",
    "dates": "For date parameters such as resolved_datetimes use only these keys as strings: "
    + ", ".join(f'"{k}"' for k in DATE_KEYS)
    + ". Never write ISO dates or timestamps.",
    "ask_missing": "Ask for clarification only when a required parameter is missing or ambiguous; never ask "
    "about an optional one.",
    "speech": "The request comes from speech recognition and may contain misheard words or misspelled names; "
    "read it charitably.",
}

_DEFAULT_RULES = ("required", "one_at_a_time", "param_names", "meaning", "dates", "ask_missing", "speech")


def identity_header(room: str = "unknown", voice_mode: str = "brief", *, name: str = "Jarvis") -> str:
    """The first lines of every prompt: who the assistant is, the room and the reply style (no speaker)."""
    return f"You are {name}, a function calling voice assistant.\nContext: room={room}, style={voice_mode}"


def speaker_block(context: NodeContext) -> str:
    """Who is speaking and what is known about them; ``""`` when nothing is (unknown speaker, no memories)."""
    lines: List[str] = []
    if context.user and context.user != "default":
        lines.append(f"You are speaking with {context.user}.")
    if context.user_memories:
        if lines:
            lines.append("")
        lines.append("User profile (answer questions about these directly, without calling a tool):")
        lines.extend(f"- {m}" for m in context.user_memories)
    return "\n".join(lines)


def rules_block(
    keys: Sequence[str] = _DEFAULT_RULES,
    *,
    extra: Sequence[str] = (),
    terminology: str = "function",
    title: str = "Rules:",
) -> str:
    """A numbered rules list from :data:`RULES` keys, then any provider-specific ``extra`` rules."""
    texts = [RULES[k].format(terminology=terminology) for k in keys] + list(extra)
    return "\n".join([title, *(f"{i}. {t}" for i, t in enumerate(texts, 1))])


def fallback_line(terminology: str = "function") -> str:
    """When to answer in words instead of calling something."""
    return (f"Answer with a brief spoken reply only for general knowledge, greetings or jokes that no "
            f"{terminology} covers.")


def tool_call_format(open_tag: str = "<tool_call>", close_tag: str = "</tool_call>") -> str:
    """How to write a call between tags, with a ``failure_message`` to speak if the call fails."""
    example = '{"name": "<function-name>", "arguments": {"<arg-name>": "<arg-value>"}, ' \
              '"failure_message": "<short spoken reply if the call fails>"}'
    return (f"For each function call, write a JSON object with the function name and arguments between "
            f"{open_tag}{close_tag} tags:\n{open_tag}\n{example}\n{close_tag}")


def tools_json_lines(tools: Any, *, open_tag: str = "<tools>", close_tag: str = "</tools>") -> str:
    """The tools as one compact JSON object per line between tags (Qwen's and Hermes' template layout)."""
    lines = [json.dumps(_clean(t), ensure_ascii=False, separators=(",", ":")) for t in coerce_tools(tools)]
    return "\n".join([open_tag, *lines, close_tag])


#: The line Qwen's and Hermes' chat templates put before the ``<tools>`` block.
TOOLS_INTRO = "You are provided with function signatures within <tools></tools> XML tags:"


def tools_section(tools: Any, intro: str = TOOLS_INTRO) -> str:
    """``intro`` and the tools one JSON object per line in ``<tools>``; ``""`` when there are no tools (an
    empty ``<tools></tools>`` block only invites the model to invent one)."""
    return intro + "\n" + tools_json_lines(tools) if tools else ""


def join_sections(*sections: str) -> str:
    """The non-empty sections, separated by blank lines."""
    return "\n\n".join(s.strip("\n") for s in sections if s and s.strip())


def function_calling_intro(terminology: str = "function") -> str:
    """The opening instruction of a function-calling prompt: call what fits, fill required parameters,
    never invent live data."""
    return (f"You are a {terminology} calling AI model. You may call one or more {terminology}s to assist with "
            "the user query. " + RULES["required"].format(terminology=terminology) + " "
            + ANTI_HALLUCINATION.format(terminology=terminology))


def _clean(tool: Mapping[str, Any]) -> Dict[str, Any]:
    """The OpenAI wrapper with only the standard function keys (Jarvis extras stay out of the JSON)."""
    fn = tool["function"]
    return {"type": "function", "function": {k: fn[k] for k in ("name", "description", "parameters") if k in fn}}


def tool_catalogue(tools: Any, *, with_parameters: bool = False) -> str:
    """A readable list: ``- name: description`` per tool (optionally ``name(param: type, …)``), followed by
    each tool's ``included_system_prompt_text`` and ``antipatterns`` when it has them."""
    lines: List[str] = []
    for tool in coerce_tools(tools):
        fn = tool["function"]
        head = fn["name"]
        if with_parameters:
            props = (fn.get("parameters") or {}).get("properties") or {}
            head += "(" + ", ".join(f"{p}: {(s or {}).get('type', 'any')}" for p, s in props.items()) + ")"
        desc = " ".join(str(fn.get("description") or "").split())
        lines.append(f"- {head}: {desc}" if desc else f"- {head}")
        guidance = fn.get("included_system_prompt_text")
        if guidance:
            lines.append(f"  {' '.join(str(guidance).split())}")
        for bad in fn.get("antipatterns") or ():
            lines.append(f"  Not for: {bad}")
    return "\n".join(lines)


def direct_answer_policy(available_commands: Optional[Sequence[Mapping[str, Any]]]) -> str:
    """Which commands may be answered from knowledge and which must always be called.

    A command without ``allow_direct_answer`` counts as must-call (the safe side: no invented live data).
    ``""`` when there are no commands.
    """
    commands = list(available_commands or ())
    if not commands:
        return ""
    direct = [c["command_name"] for c in commands if c.get("allow_direct_answer")]
    must = [c["command_name"] for c in commands if not c.get("allow_direct_answer")]
    lines = ["Direct answer policy:"]
    if must:
        lines.append("- Always call, never answer from memory: " + ", ".join(must))
    if direct:
        lines.append("- May be answered directly when you know the answer: " + ", ".join(direct))
    return "\n".join(lines)


#: Up to this many devices are listed by room; beyond it only counts are given.
DEVICE_LIST_LIMIT = 20


def agent_context_summary(context: NodeContext, *, entities_tool: str = "get_ha_entities") -> str:
    """What the node's agents know, in a few lines: Home Assistant devices listed by room when there are
    few of them, else counted by domain with a pointer to the tool that lists them; ``""`` when none."""
    ha = context.agents.get("home_assistant") or context.agents.get("homeassistant")
    devices = ha.get("devices") if isinstance(ha, Mapping) else None
    if not isinstance(devices, list) or not devices:
        return ""
    rows = [d for d in devices if isinstance(d, Mapping)]
    if len(rows) <= DEVICE_LIST_LIMIT:
        by_room: Dict[str, List[str]] = {}
        for d in rows:
            label = str(d.get("entity_id") or d.get("name") or "?")
            if d.get("name") and d.get("entity_id"):
                label = f"{d['name']} ({d['entity_id']})"
            by_room.setdefault(str(d.get("area") or d.get("room") or "unassigned"), []).append(label)
        lines = ["Smart home devices:"]
        lines.extend(f"- {room}: {', '.join(names)}" for room, names in sorted(by_room.items()))
        return "\n".join(lines)
    counts: Dict[str, int] = {}
    for d in rows:
        domain = str(d.get("domain") or str(d.get("entity_id") or "other").split(".")[0])
        counts[domain] = counts.get(domain, 0) + 1
    listing = ", ".join(f"{n} {domain}" for domain, n in sorted(counts.items()))
    return f"Smart home devices: {listing}. Call {entities_tool} to find the exact entity before acting on one."
