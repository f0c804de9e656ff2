"""Qwen 2.5 providers with the full ("untrained") prompt: ``Qwen25MediumUntrained`` (7B, the reference
layout), ``Qwen25LargeUntrained`` (14B: language rule, stricter date keys, forced tool calls),
``Qwen25_14B_Untrained`` (lazy tool loading, not forced) and ``Qwen25_32B_Untrained`` (not forced).

Layout: stable text first (identity, format, rules), request-dependent text last (speaker, devices, tools),
so llama.cpp reuses the cached prefix across requests.
"""

from __future__ import annotations

from typing import Any, List, Mapping, Optional, Sequence

from jarvis_core.prompts import NodeContext
from jarvis_core.prompts.blocks import (
    DATE_KEYS,
    agent_context_summary,
    direct_answer_policy,
    fallback_line,
    identity_header,
    rules_block,
    speaker_block,
    tool_call_format,
    tool_catalogue,
)
from jarvis_core.prompts.context import coerce_tools
from jarvis_core.prompts.lazy import GET_TOOLS
from jarvis_prompts_qwen.base import QwenTextProvider, function_calling_intro, join_sections, tools_section

__all__ = ["Qwen25LargeUntrained", "Qwen25MediumUntrained", "Qwen25_14B_Untrained", "Qwen25_32B_Untrained"]


class Qwen25MediumUntrained(QwenTextProvider):
    """Qwen 2.5 7B Instruct: tools one JSON per line in ``<tools>``, calls as ``<tool_call>`` blocks."""

    size_tier = "medium"
    extra_rules: Sequence[str] = ()

    def tools_block(self, tools: List[Any]) -> str:
        """The ``<tools>`` block (what the model's chat template would show); ``""`` without tools."""
        return tools_section(tools)

    def prompt_sections(
        self, ctx: NodeContext, tools: Sequence[Any], available_commands: Optional[Sequence[Mapping[str, Any]]],
    ) -> Sequence[str]:
        specs = coerce_tools(tools)
        catalogue = tool_catalogue(specs)
        return (
            identity_header(ctx.room, ctx.voice_mode),
            function_calling_intro(),
            tool_call_format(),
            rules_block(extra=self.extra_rules),
            fallback_line(),
            speaker_block(ctx),
            agent_context_summary(ctx),
            self.tools_block(specs),
            direct_answer_policy(available_commands),
            "Tools:\n" + catalogue if catalogue and not self.lazy_tool_loading else "",
        )


class Qwen25LargeUntrained(Qwen25MediumUntrained):
    """Qwen 2.5 14B: the 7B layout plus a language rule and a stricter date-key rule; forces tool calls."""

    size_tier = "large"
    force_tool_calls = True
    extra_rules = (
        "Reply in the language the user spoke.",
        "A date parameter holds date keys only (" + ", ".join(DATE_KEYS) + "); if you are about to write a "
        "number-based date, write the matching key instead.",
    )


class Qwen25_14B_Untrained(Qwen25LargeUntrained):
    """Qwen 2.5 14B with lazy tool loading: the prompt lists what each tool is for and offers only
    ``get_tools``; the model fetches the schemas it needs, which the session answers
    (:mod:`jarvis_core.prompts.lazy`). Tool calls are not forced: the model may answer from context."""

    lazy_tool_loading = True
    force_tool_calls = False

    def tools_block(self, tools: List[Any]) -> str:
        listing = tool_catalogue(tools)
        if not listing:
            return ""
        head = "Capabilities (call get_tools with the names you need to see their parameters, then call them):\n"
        return join_sections(head + listing, tools_section([GET_TOOLS]))


class Qwen25_32B_Untrained(Qwen25LargeUntrained):
    """Qwen 2.5 32B: follows instructions well enough that tool calls are not forced."""

    force_tool_calls = False
