"""What every Qwen text-mode provider shares: the core's :class:`~jarvis_core.prompts.tagged.TaggedCallsProvider`
(``<tool_call>`` output read into Jarvis JSON, the plain-text response format, training examples in the
model's own call format) with the Qwen family's metadata.

Qwen 3 adds thinking: :class:`QwenThinkingProvider` strips closed and unclosed ``<think>`` blocks (and
``<message>`` wrappers) before the Qwen 2.5 logic, and appends its control token to every user turn.

``join_sections``, ``tools_section``, ``function_calling_intro`` and ``TOOLS_INTRO`` are the core's
(:mod:`jarvis_core.prompts.blocks`), re-exported here for the modules that import them from this one.
"""

from __future__ import annotations

from jarvis_core.prompts.blocks import TOOLS_INTRO, function_calling_intro, join_sections, tools_section
from jarvis_core.prompts.output import strip_think
from jarvis_core.prompts.tagged import TaggedCallsProvider

__all__ = ["TOOLS_INTRO", "QwenTextProvider", "QwenThinkingProvider", "function_calling_intro", "join_sections",
           "tools_section"]


class QwenTextProvider(TaggedCallsProvider):
    """Base of the Qwen providers that read ``<tool_call>{json}</tool_call>`` from the reply text."""

    model_family = "qwen"


class QwenThinkingProvider(QwenTextProvider):
    """Qwen 3: thinking is switched per user turn with a control token (``/think`` or ``/no_think``; the
    ``/nothink`` spelling some documents show is ignored by the model), and stripped from the reply."""

    user_message_suffix = "/no_think"

    def clean_output(self, raw: str) -> str:
        text = strip_think(raw, *self.think_delimiters)
        return text.replace("<message>", "").replace("</message>", "")
