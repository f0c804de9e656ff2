"""Hermes providers (Nous Hermes 2 Pro / Hermes 3): ``<tool_call>`` calls, ``<scratch_pad>`` reasoning stripped.

- ``HermesMediumUntrained``: the full layout. Tools are described in the prompt and read back from text tags
  (a grammar-constrained ``chatml-function-calling`` path measured 15-30 s per reply against 1.3 s).
- ``HermesCompressed``: the compressed layout (shorter rules, compacted schemas).
- ``HermesMediumMlx``: for MLX 4-bit builds, which write numbers as strings: an argument that is a whole
  number in a string becomes an integer, and date keys given as one string become a list.
- ``HermesMediumTrained``: the full layout for the date-key LoRA merged into Hermes (training tier
  ``trained``).

Hermes keeps ``resolved_datetimes`` as the model wrote it (no list wrapping), except the MLX variant.
"""

from __future__ import annotations

import re
from typing import Any, Dict, FrozenSet, Mapping, Optional

from jarvis_core.prompts.jarvis_json import JarvisReply, JarvisToolCall
from jarvis_core.prompts.output import ARRAY_PARAMS, strip_think
from jarvis_prompts_families.layout import FamilyProvider

__all__ = ["HermesCompressed", "HermesMediumMlx", "HermesMediumTrained", "HermesMediumUntrained"]

_WHOLE_NUMBER = re.compile(r"-?\d{1,18}")


class HermesMediumUntrained(FamilyProvider):
    """Hermes 3 8B (and Hermes 2 Pro): full prompt, ``<tool_call>`` text, ``<scratch_pad>`` stripped."""

    model_family = "hermes"
    array_params: FrozenSet[str] = frozenset()
    think_delimiters = ("<scratch_pad>", "</scratch_pad>")

    def clean_output(self, raw: str) -> str:
        return strip_think(raw, *self.think_delimiters)


class HermesCompressed(HermesMediumUntrained):
    """Hermes with the compressed prompt: the shorter rule set and compacted tool schemas."""

    compressed = True


class HermesMediumTrained(HermesMediumUntrained):
    """Hermes with the date-key LoRA merged: the same prompt; the tool classifier stays on."""

    training_tier = "trained"


def _coerce_numbers(arguments: Mapping[str, Any]) -> Dict[str, Any]:
    return {k: int(v) if isinstance(v, str) and _WHOLE_NUMBER.fullmatch(v.strip()) else v
            for k, v in arguments.items()}


class HermesMediumMlx(HermesMediumUntrained):
    """Hermes on MLX (4-bit): whole numbers written as strings become integers, date keys become lists."""

    array_params = ARRAY_PARAMS

    def read_calls(self, text: str) -> Optional[JarvisReply]:
        reply = super().read_calls(text)
        if reply is None or not reply.tool_calls:
            return reply
        calls = [JarvisToolCall(c.name, _coerce_numbers(c.arguments), c.failure_message) for c in reply.tool_calls]
        return JarvisReply(message=reply.message, tool_calls=calls, error=reply.error)
