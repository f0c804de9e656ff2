"""The registered reasoning parsers, as configurations of :class:`~jarvis_core.parsers.think.ThinkParser`
(plus Granite's phrase-delimited format). Each docstring says how the family differs.
"""

from __future__ import annotations

from typing import Any, List, Optional

from jarvis_core.parsers.base import ParsedDelta, ReasoningParser
from jarvis_core.parsers.think import _FUNCTION_OPENERS, REASONING, ThinkParser

__all__ = [
    "DeepSeekR1Reasoning",
    "DeepSeekV3Reasoning",
    "Gemma4Reasoning",
    "Glm45Reasoning",
    "IdentityReasoning",
    "KimiK2Reasoning",
    "MiniMaxM2AppendThinkReasoning",
    "MiniMaxM2Reasoning",
    "MistralReasoning",
    "NemotronV3Reasoning",
    "Qwen3Reasoning",
    "SeedOssReasoning",
]


class DeepSeekR1Reasoning(ThinkParser):
    """``deepseek_r1`` (also QwQ): everything before ``</think>`` is reasoning; no end tag = all reasoning."""

    name = "deepseek_r1"


class Qwen3Reasoning(ThinkParser):
    """``qwen3``: like deepseek_r1, plus ``<tool_call>`` followed by ``<function`` ends reasoning (Qwen3.5);
    ``enable_thinking=False`` makes tag-less output content."""

    name = "qwen3"
    implicit_ends = (("<tool_call>", _FUNCTION_OPENERS),)
    thinking_keys = ("enable_thinking",)


class DeepSeekV3Reasoning(ThinkParser):
    """``deepseek_v3``: deepseek_r1 when ``thinking=True`` is asked for, otherwise no parsing at all."""

    name = "deepseek_v3"
    thinking_keys = ("thinking", "enable_thinking")
    thinking_default = False
    disabled_mode = "identity"


class KimiK2Reasoning(ThinkParser):
    """``kimi_k2``: deepseek_r1-like; its tool section ends reasoning; ``thinking=False`` disables parsing."""

    name = "kimi_k2"
    implicit_ends = (("<|tool_calls_section_begin|>", ()),)
    thinking_keys = ("thinking",)
    disabled_mode = "identity"


class Glm45Reasoning(ThinkParser):
    """``glm45`` / ``glm47``: reasoning only inside a closed ``<think>…</think>``; anything else is content."""

    name = "glm45"
    starts_in_reasoning = False
    strict = True
    orphan_end = "keep"


class MistralReasoning(ThinkParser):
    """``mistral`` (Magistral): ``[THINK]…[/THINK]``; content before and after; no tags = all content."""

    name = "mistral"
    start_token = "[THINK]"
    end_token = "[/THINK]"
    starts_in_reasoning = False
    orphan_end = "drop"


class Gemma4Reasoning(ThinkParser):
    """``gemma4``: ``<|channel>thought\n…<channel|>`` then the answer; content before an opening tag and when
    there is none (thinking is off unless the template's ``enable_thinking`` asked for it). The channel's
    ``thought`` label is not reasoning and is removed, also when a stream splits it."""

    name = "gemma4"
    start_token = "<|channel>"
    end_token = "<channel|>"
    starts_in_reasoning = False
    orphan_end = "drop"
    thinking_keys = ("enable_thinking",)
    label = "thought\n"

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self._label_held: Optional[str] = ""  # None once the start of the channel is decided

    def _reasoning(self, text: str, out: List[ParsedDelta]) -> None:
        if self._label_held is None or not text:
            super()._reasoning(text, out)
            return
        held = self._label_held + text
        if len(held) < len(self.label) and self.label.startswith(held):
            self._label_held = held  # could still be the label: wait for more
            return
        self._label_held = None
        super()._reasoning(held[len(self.label):] if held.startswith(self.label) else held, out)

    def _flush_label(self, out: List[ParsedDelta]) -> None:
        held, self._label_held = self._label_held, None
        if held and held.strip() != self.label.strip():
            super()._reasoning(held, out)

    def _close(self, out: List[ParsedDelta]) -> None:
        self._flush_label(out)
        super()._close(out)

    def _finish(self) -> List[ParsedDelta]:
        out = super()._finish()
        if self.state == REASONING:
            self._flush_label(out)
        return out


class MiniMaxM2Reasoning(ThinkParser):
    """``minimax_m2``: deepseek_r1-like (the template opens the thinking)."""

    name = "minimax_m2"


class NemotronV3Reasoning(ThinkParser):
    """``nemotron_v3``: deepseek_r1-like; ``enable_thinking=False`` makes tag-less output content."""

    name = "nemotron_v3"
    thinking_keys = ("enable_thinking",)


class SeedOssReasoning(ThinkParser):
    """``seed_oss``: ``<seed:think>…</seed:think>``, deepseek_r1-like."""

    name = "seed_oss"
    start_token = "<seed:think>"
    end_token = "</seed:think>"


class IdentityReasoning(ReasoningParser):
    """``identity``: no reasoning; everything is content."""

    name = "identity"

    def _feed(self, delta: str) -> List[ParsedDelta]:
        return [ParsedDelta(content=delta)]

    def _finish(self) -> List[ParsedDelta]:
        return []


class MiniMaxM2AppendThinkReasoning(ReasoningParser):
    """``minimax_m2_append_think``: no split; ``<think>`` is put back in front of the content."""

    name = "minimax_m2_append_think"

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self._started = False

    def _feed(self, delta: str) -> List[ParsedDelta]:
        if not self._started:
            self._started = True
            delta = "<think>" + delta
        return [ParsedDelta(content=delta)]

    def _finish(self) -> List[ParsedDelta]:
        return []
