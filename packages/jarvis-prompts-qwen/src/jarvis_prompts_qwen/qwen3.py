"""Qwen 3 and Qwen 3.5 providers.

- ``Qwen3LargeUntrained`` (30B-A3B) and ``Qwen3_14B_Compressed``: ``<tool_call>`` text, ``/no_think`` on
  every user turn, thinking and ``<message>`` wrappers stripped from the reply.
- ``Qwen3_8B_Compressed``: tools block first (it helped this model), ``/no_think``, closed and unclosed
  ``<think>`` stripped. ``Qwen3_8B_Thinking`` is the same prompt with ``/think``: the model reasons before
  answering (slower: hundreds of reasoning tokens per turn), and the reasoning is stripped the same way.
- ``Qwen3_5_9B_Compressed``: native tools; the prompt has no tools block and no format rules.
"""

from __future__ import annotations

from typing import Any, Dict, Mapping, Optional, Sequence

from jarvis_core.prompts import NodeContext
from jarvis_core.prompts.blocks import (
    ANTI_HALLUCINATION,
    agent_context_summary,
    direct_answer_policy,
    fallback_line,
    identity_header,
    rules_block,
    speaker_block,
    tool_call_format,
)
from jarvis_core.prompts.output import strip_think
from jarvis_prompts_qwen.base import QwenThinkingProvider, function_calling_intro, tools_section

__all__ = ["Qwen3LargeUntrained", "Qwen3_14B_Compressed", "Qwen3_5_9B_Compressed", "Qwen3_8B_Compressed",
           "Qwen3_8B_Thinking"]


class Qwen3LargeUntrained(QwenThinkingProvider):
    """Qwen 3 30B-A3B: the Qwen 2.5 layout, thinking off by default."""

    size_tier = "large"

    def prompt_sections(
        self, ctx: NodeContext, tools: Sequence[Any], available_commands: Optional[Sequence[Mapping[str, Any]]],
    ) -> Sequence[str]:
        return (
            identity_header(ctx.room, ctx.voice_mode),
            function_calling_intro(),
            tool_call_format(),
            rules_block(),
            fallback_line(),
            speaker_block(ctx),
            agent_context_summary(ctx),
            tools_section(tools),
            direct_answer_policy(available_commands),
        )


class Qwen3_14B_Compressed(Qwen3LargeUntrained):
    """Qwen 3 14B: the large prompt with the shorter rule set."""

    def prompt_sections(
        self, ctx: NodeContext, tools: Sequence[Any], available_commands: Optional[Sequence[Mapping[str, Any]]],
    ) -> Sequence[str]:
        return (
            identity_header(ctx.room, ctx.voice_mode),
            ANTI_HALLUCINATION.format(terminology="function"),
            tool_call_format(),
            rules_block(("required", "param_names", "dates")),
            speaker_block(ctx),
            agent_context_summary(ctx),
            tools_section(tools),
            direct_answer_policy(available_commands),
        )


class Qwen3_8B_Compressed(QwenThinkingProvider):
    """Qwen 3 8B: tools first, then format and rules. ``thinking=True`` sends ``/think`` instead of
    ``/no_think`` (slower: hundreds of reasoning tokens per turn); the registered ``Qwen3_8B_Thinking`` is
    that setting under its own name."""

    size_tier = "medium"

    def __init__(self, thinking: bool = False) -> None:
        self.thinking = thinking
        self.user_message_suffix = "/think" if thinking else "/no_think"

    def get_capabilities(self) -> Dict[str, Any]:
        return {**super().get_capabilities(), "thinking": self.thinking}

    def prompt_sections(
        self, ctx: NodeContext, tools: Sequence[Any], available_commands: Optional[Sequence[Mapping[str, Any]]],
    ) -> Sequence[str]:
        return (
            identity_header(ctx.room, ctx.voice_mode),
            tools_section(tools),
            ANTI_HALLUCINATION.format(terminology="function"),
            tool_call_format(),
            rules_block(("required", "one_at_a_time", "param_names", "dates")),
            direct_answer_policy(available_commands),
            speaker_block(ctx),
            agent_context_summary(ctx),
        )


class Qwen3_8B_Thinking(Qwen3_8B_Compressed):
    """``Qwen3_8B_Compressed`` with thinking on (``/think`` on every user turn), so ``--prompt-provider
    Qwen3_8B_Thinking`` (or a ``[model_defaults]`` rule naming it) turns thinking on without code."""

    def __init__(self) -> None:
        super().__init__(thinking=True)


class Qwen3_5_9B_Compressed(QwenThinkingProvider):
    """Qwen 3.5 9B with native tool calling: tools go in the request, calls come back structured."""

    model_family = "qwen3.5"
    size_tier = "medium"
    supports_native_tools = True

    def get_response_format(self) -> None:
        return None

    def parse_response(self, raw_content: str) -> None:
        """Not used in native mode: the engine returns structured calls."""
        return None

    def sanitize_text(self, text: str) -> str:
        return strip_think(text, *self.think_delimiters)

    def prompt_sections(
        self, ctx: NodeContext, tools: Sequence[Any], available_commands: Optional[Sequence[Mapping[str, Any]]],
    ) -> Sequence[str]:
        return (
            identity_header(ctx.room, ctx.voice_mode),
            ANTI_HALLUCINATION.format(terminology="tool"),
            rules_block(("meaning", "dates", "ask_missing", "speech"), terminology="tool"),
            fallback_line("tool"),
            speaker_block(ctx),
            agent_context_summary(ctx),
            direct_answer_policy(available_commands),
        )
