"""The prompt layout the Hermes, Llama, Mistral and Gemma providers share, built from the core's blocks.

Stable text first (identity, intro, call format, rules), request-dependent text last (speaker, devices,
tools, direct-answer policy), so llama.cpp reuses the cached prefix across requests. A family changes one
piece by overriding one method: :meth:`FamilyProvider.call_format` (how to write a call),
:meth:`FamilyProvider.tools_block` (how the tools are shown) or :meth:`FamilyProvider.example` (a concrete
call, for models that copy examples better than they follow schemas).

``compressed = True`` is the token-saving variant: the shorter rule set, and tool schemas through the core's
compactor (:func:`jarvis_core.prompts.compact.compact_tools`: no parameter descriptions, no format hints).
"""

from __future__ import annotations

import json
from typing import Any, Dict, List, Mapping, Optional, Sequence

from jarvis_core.prompts import NodeContext
from jarvis_core.prompts.blocks import (
    agent_context_summary,
    direct_answer_policy,
    fallback_line,
    function_calling_intro,
    identity_header,
    rules_block,
    speaker_block,
    tool_call_format,
    tool_catalogue,
    tools_section,
)
from jarvis_core.prompts.compact import compact_tools
from jarvis_core.prompts.context import coerce_tools
from jarvis_core.prompts.tagged import TaggedCallsProvider

__all__ = ["COMPRESSED_RULES", "FULL_RULES", "FamilyProvider"]

FULL_RULES = ("required", "one_at_a_time", "param_names", "meaning", "dates", "ask_missing", "speech")
COMPRESSED_RULES = ("required", "param_names", "dates")


class FamilyProvider(TaggedCallsProvider):
    """A text-mode provider with the shared layout; subclasses set the family metadata and flags."""

    size_tier = "medium"
    compressed: bool = False
    extra_rules: Sequence[str] = ()

    @property
    def rule_keys(self) -> Sequence[str]:
        return COMPRESSED_RULES if self.compressed else FULL_RULES

    def call_format(self) -> str:
        """How the model writes a call (default: JSON between :attr:`call_tags`)."""
        return tool_call_format(*self.call_tags)

    def shown_tools(self, tools: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
        """The schemas as the prompt shows them: compacted in the compressed variant."""
        return compact_tools(tools) if self.compressed else tools

    def tools_block(self, tools: List[Dict[str, Any]]) -> str:
        """The tools one JSON per line in ``<tools>``; ``""`` without tools."""
        return tools_section(self.shown_tools(tools))

    def example(self, tools: List[Dict[str, Any]]) -> str:
        """A concrete call to copy; none by default."""
        return ""

    def build_tools(self, tools: Any) -> List[Dict[str, Any]]:
        """Native-mode schemas (not used by these text-mode providers, kept consistent with the prompt)."""
        return self.shown_tools(super().build_tools(tools))

    def prompt_sections(
        self, ctx: NodeContext, tools: Sequence[Any], available_commands: Optional[Sequence[Mapping[str, Any]]],
    ) -> Sequence[str]:
        specs = coerce_tools(tools)
        guidance = "" if self.compressed else tool_catalogue(specs)
        return (
            identity_header(ctx.room, ctx.voice_mode),
            function_calling_intro(),
            self.call_format(),
            rules_block(self.rule_keys, extra=self.extra_rules),
            fallback_line(),
            speaker_block(ctx),
            agent_context_summary(ctx),
            self.tools_block(specs),
            self.example(specs),
            direct_answer_policy(available_commands),
            "Tools:\n" + guidance if guidance else "",
        )


def example_call(tools: List[Dict[str, Any]], open_tag: str = "<tool_call>", close_tag: str = "</tool_call>") -> str:
    """``Example:`` and a call of the first tool with its required parameters as placeholders; ``""``
    without tools."""
    if not tools:
        return ""
    fn = tools[0]["function"]
    required = (fn.get("parameters") or {}).get("required") or []
    args = {str(p): f"<{p}>" for p in required if isinstance(p, str)}
    body = json.dumps({"name": fn["name"], "arguments": args}, ensure_ascii=False)
    return f"Example:\n{open_tag}\n{body}\n{close_tag}"
