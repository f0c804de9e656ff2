"""Mistral providers: ``<tool_call>`` blocks first, Mistral's own ``[TOOL_CALLS]`` output as the fallback.

They are meant to be served with a ChatML template (Mistral's own template drops the system role, which
carries the whole prompt). A model that still writes its native ``[TOOL_CALLS] [{…}]`` array (or a single
object, or the v11 ``[TOOL_CALLS]name[ARGS]{…}`` form) is read by the core's ``mistral`` tool parser; the
call ids Mistral adds are dropped (Jarvis JSON has none) and date keys become lists.

- ``Mistral7bMediumUntrained``: Mistral 7B Instruct, the full layout.
- ``MixtralLargeUntrained``: Mixtral 8x7B / 8x22B, the same with forced tool calls.
- ``Ministral14bLargeUntrained``: Ministral 3 14B; what is spoken is cut at the first chat-template marker
  the model writes past its turn.
"""

from __future__ import annotations

from typing import List, Optional

from jarvis_core.parsers.mistral import TOKEN, MistralParser
from jarvis_core.prompts.jarvis_json import JarvisReply, JarvisToolCall, decode_object
from jarvis_core.prompts.output import normalize_array_params
from jarvis_prompts_families.layout import FamilyProvider

__all__ = ["Ministral14bLargeUntrained", "MixtralLargeUntrained", "Mistral7bMediumUntrained", "native_calls"]

#: Chat-template markers that end what the model meant to say.
CHAT_MARKERS = ("<|im_start|>", "<|im_end|>", "[INST]", "[/INST]", "</s>")


def native_calls(text: str) -> List[JarvisToolCall]:
    """The calls after Mistral's ``[TOOL_CALLS]`` token: an array or the v11 form, read by the core's
    ``mistral`` parser, or a single ``{"name", "arguments"}`` object (which that parser does not take)."""
    at = text.find(TOKEN)
    if at == -1:
        return []
    found: List[Optional[JarvisToolCall]] = [
        JarvisToolCall.from_object({"name": c.name, "arguments": c.arguments})
        for c in MistralParser().parse(text).tool_calls]
    if not found:
        single = decode_object(text[at + len(TOKEN):])
        found = [JarvisToolCall.from_object(single)]
    return [JarvisToolCall(c.name, normalize_array_params(c.arguments)) for c in found if c is not None]


class Mistral7bMediumUntrained(FamilyProvider):
    """Mistral 7B Instruct: ``<tool_call>`` text, ``[TOOL_CALLS]`` understood too."""

    model_family = "mistral"

    def read_calls(self, text: str) -> Optional[JarvisReply]:
        reply = super().read_calls(text)
        if reply is not None and reply.tool_calls:
            return reply
        calls = native_calls(text)
        return JarvisReply.calls(calls) if calls else reply


class MixtralLargeUntrained(Mistral7bMediumUntrained):
    """Mixtral: the Mistral prompt; a reply that calls no tool is asked again once."""

    size_tier = "large"
    force_tool_calls = True


class Ministral14bLargeUntrained(Mistral7bMediumUntrained):
    """Ministral 3 14B: the Mistral prompt; spoken text ends at the first chat marker."""

    model_family = "ministral"
    size_tier = "large"

    def clean_output(self, raw: str) -> str:
        cut = min((i for i in (raw.find(m) for m in CHAT_MARKERS) if i != -1), default=len(raw))
        return raw[:cut]
