"""Qwen 2.5 providers with a compressed prompt (fewer tokens, fewer rules): ``Qwen25Compressed`` (the
original 7B variant: always call a tool), ``Qwen25_3B_Compressed`` (the same for 3B) and
``Qwen25_7B_Compressed`` (four rules and the date keys, tools block last).
"""

from __future__ import annotations

from typing import Any, Mapping, Optional, Sequence

from jarvis_core.prompts import NodeContext
from jarvis_core.prompts.blocks import (
    ANTI_HALLUCINATION,
    agent_context_summary,
    direct_answer_policy,
    identity_header,
    rules_block,
    speaker_block,
    tool_call_format,
    tools_json_lines,
)
from jarvis_prompts_qwen.base import QwenTextProvider

__all__ = ["Qwen25Compressed", "Qwen25_3B_Compressed", "Qwen25_7B_Compressed"]

ALWAYS_CALL = ("Always answer by calling one of the functions below when any of them fits the request; reply in "
               "words only when none does.")


class Qwen25Compressed(QwenTextProvider):
    """Compressed Qwen 2.5 prompt; always call a tool when one fits (tool calls forced)."""

    size_tier = "medium"
    force_tool_calls = True
    rule_keys: Sequence[str] = ("required", "param_names", "dates")

    def prompt_sections(
        self, ctx: NodeContext, tools: Sequence[Any], available_commands: Optional[Sequence[Mapping[str, Any]]],
    ) -> Sequence[str]:
        return (
            identity_header(ctx.room, ctx.voice_mode),
            ALWAYS_CALL + " " + ANTI_HALLUCINATION.format(terminology="function"),
            tool_call_format(),
            rules_block(self.rule_keys),
            speaker_block(ctx),
            agent_context_summary(ctx),
            direct_answer_policy(available_commands),
            "Functions:\n" + tools_json_lines(tools) if tools else "",
        )


class Qwen25_3B_Compressed(Qwen25Compressed):
    """The compressed prompt for Qwen 2.5 3B."""

    size_tier = "small"


class Qwen25_7B_Compressed(Qwen25Compressed):
    """Qwen 2.5 7B, compressed: four rules (required parameters, one call at a time, choose by meaning, date
    keys) and the tools block last."""

    rule_keys = ("required", "one_at_a_time", "meaning", "dates")
