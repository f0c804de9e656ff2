"""Gemma providers: ``<tool_call>`` calls with a concrete example in the prompt (Gemma copies examples better
than it follows schemas).

- ``Gemma2MediumUntrained`` / ``Gemma2Compressed``: Gemma 2 (full and compressed layouts).
- ``Gemma3MediumUntrained`` / ``Gemma3Compressed``: Gemma 3 also writes calls in markdown fences, even inside
  the ``message`` of an otherwise empty Jarvis JSON reply; both are rescued as calls. Chat-template tokens
  leaking into the reply (ChatML's and Gemma's turn markers) are stripped.
- ``Gemma4_31B_Untrained``: Gemma 4 31B; its thinking channel (``<|channel>thought … <channel|>``) and
  turn tokens are stripped before the Gemma 3 reading. Serve it with a ChatML template, not Gemma's.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from jarvis_core.prompts.jarvis_json import JarvisReply
from jarvis_core.prompts.output import parse_tagged_calls, strip_think
from jarvis_prompts_families.layout import FamilyProvider, example_call

__all__ = ["Gemma2Compressed", "Gemma2MediumUntrained", "Gemma3Compressed", "Gemma3MediumUntrained",
           "Gemma4_31B_Untrained"]

#: Chat-template tokens a Gemma reply may carry past its own turn.
TURN_TOKENS = ("<|im_start|>assistant", "<|im_start|>", "<|im_end|>", "<start_of_turn>model", "<start_of_turn>",
               "<end_of_turn>", "<|turn>model", "<|turn>", "<turn|>", "<eos>")


class Gemma2MediumUntrained(FamilyProvider):
    """Gemma 2 9B/27B: the full layout plus a concrete call example."""

    model_family = "gemma"

    def example(self, tools: List[Dict[str, Any]]) -> str:
        return example_call(self.shown_tools(tools), *self.call_tags)


class Gemma2Compressed(Gemma2MediumUntrained):
    """Gemma 2 with the compressed layout."""

    compressed = True


class Gemma3MediumUntrained(Gemma2MediumUntrained):
    """Gemma 3: fenced calls rescued (also from the message of an empty Jarvis JSON), turn tokens stripped."""

    def clean_output(self, raw: str) -> str:
        for token in TURN_TOKENS:
            raw = raw.replace(token, "")
        return raw

    def read_calls(self, text: str) -> Optional[JarvisReply]:
        reply = super().read_calls(text)
        if reply is not None:
            return reply
        wrapped = JarvisReply.parse(text)
        if wrapped is None or wrapped.tool_calls or not wrapped.message:
            return None
        hidden = parse_tagged_calls(wrapped.message, array_params=self.array_params)
        return hidden if hidden is not None and hidden.tool_calls else None


class Gemma3Compressed(Gemma3MediumUntrained):
    """Gemma 3 with the compressed layout."""

    compressed = True


class Gemma4_31B_Untrained(Gemma3MediumUntrained):
    """Gemma 4 31B: the thinking channel and turn tokens stripped, then the Gemma 3 reading."""

    size_tier = "large"
    think_delimiters = ("<|channel>", "<channel|>")

    def clean_output(self, raw: str) -> str:
        return super().clean_output(strip_think(raw, *self.think_delimiters))
