"""What every Qwen text-mode provider shares: ``<tool_call>`` output read into Jarvis JSON, the plain-text
response format, the ``<tools>`` block (left out when there are no tools, as Qwen's own chat template does),
and training examples in the model's own call format.

Qwen 3 adds thinking: :class:`QwenThinkingProvider` strips closed and unclosed ``<think>`` blocks (and
``<message>`` wrappers) before the Qwen 2.5 logic, and appends its control token to every user turn.
"""

from __future__ import annotations

import json
from typing import Any, Dict, Mapping, Optional, Sequence

from jarvis_core.prompts import PromptProvider
from jarvis_core.prompts.blocks import (
    ANTI_HALLUCINATION,
    RULES,
    fallback_line,
    identity_header,
    rules_block,
    tool_call_format,
    tools_json_lines,
)
from jarvis_core.prompts.output import parse_tagged_calls, strip_think

__all__ = ["TOOLS_INTRO", "QwenTextProvider", "QwenThinkingProvider", "join_sections", "tools_section"]

TEXT_FORMAT: Dict[str, Any] = {"type": "text"}

#: The line Qwen's chat template puts before the ``<tools>`` block.
TOOLS_INTRO = "You are provided with function signatures within <tools></tools> XML tags:"


def join_sections(*sections: str) -> str:
    """The non-empty sections, separated by blank lines."""
    return "\n\n".join(s.strip("\n") for s in sections if s and s.strip())


def tools_section(tools: Sequence[Any], intro: str = TOOLS_INTRO) -> str:
    """``intro`` and the tools one JSON object per line in ``<tools>``; ``""`` when there are no tools (an
    empty ``<tools></tools>`` block only invites the model to invent one)."""
    return intro + "\n" + tools_json_lines(tools) if tools else ""


def function_calling_intro() -> str:
    """The opening instruction of the Qwen function-calling prompts."""
    return ("You are a function calling AI model. You may call one or more functions to assist with the user "
            "query. " + RULES["required"].format(terminology="function") + " "
            + ANTI_HALLUCINATION.format(terminology="function"))


class QwenTextProvider(PromptProvider):
    """Base of the Qwen providers that read ``<tool_call>{json}</tool_call>`` from the reply text."""

    model_family = "qwen"
    training_tier = "untrained"

    @property
    def name(self) -> str:
        return type(self).__name__

    def get_response_format(self) -> Optional[Dict[str, Any]]:
        """Plain text: the calls are tags in the text, so no JSON grammar may constrain the output."""
        return dict(TEXT_FORMAT)

    def clean_output(self, raw: str) -> str:
        """Model noise removed before the calls are read (nothing for Qwen 2.5)."""
        return raw

    def parse_response(self, raw_content: str) -> Optional[str]:
        """``<tool_call>`` blocks, a bare or fenced call object, Jarvis JSON (passed on: None) or plain text,
        with ``resolved_datetimes`` given as one string wrapped in a list. Never raises."""
        reply = parse_tagged_calls(self.clean_output(raw_content or ""))
        return None if reply is None else reply.to_json()

    def build_training_system_prompt(self) -> str:
        """The inference prompt's fixed parts (identity, format, rules), without tools or devices."""
        return join_sections(identity_header(), function_calling_intro(), tool_call_format(), rules_block(),
                             fallback_line())

    def build_training_completion(self, tool_call: Mapping[str, Any]) -> str:
        """The call as the model writes it at inference: a ``<tool_call>`` block after a space."""
        return f" <tool_call>\n{json.dumps(dict(tool_call), ensure_ascii=False)}\n</tool_call>"

    def get_capabilities(self) -> Dict[str, Any]:
        caps = super().get_capabilities()
        caps.update(force_tool_calls=self.force_tool_calls, lazy_tool_loading=self.lazy_tool_loading,
                    user_message_suffix=self.user_message_suffix)
        return caps


class QwenThinkingProvider(QwenTextProvider):
    """Qwen 3: thinking is switched per user turn with a control token (``/think`` or ``/no_think``; the
    ``/nothink`` spelling some documents show is ignored by the model), and stripped from the reply."""

    user_message_suffix = "/no_think"

    def clean_output(self, raw: str) -> str:
        text = strip_think(raw, *self.think_delimiters)
        return text.replace("<message>", "").replace("</message>", "")

    def sanitize_text(self, text: str) -> str:
        return self.clean_output(text).strip()
