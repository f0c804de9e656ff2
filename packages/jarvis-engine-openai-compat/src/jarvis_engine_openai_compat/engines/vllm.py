"""vLLM's OpenAI-compatible server (``vllm serve``, default ``http://localhost:8000``, ``/health``).

It takes the local samplers (``top_k``, ``min_p``, ``repeat_penalty`` sent as ``repetition_penalty``;
``top_k <= 0`` is sent as -1, vLLM's "off") and per-request template switches (``chat_template_kwargs``).
"""

from __future__ import annotations

from typing import ClassVar, FrozenSet, Mapping, Optional

from jarvis_core.engine.base import SAMPLING_OPTIONS
from jarvis_engine_openai_compat.engines.base import LOCAL_OPTIONS, OpenAICompatEngine

__all__ = ["VLLMEngine"]


class VLLMEngine(OpenAICompatEngine):
    """vLLM's OpenAI-compatible server (``vllm serve``)."""

    engine_id: ClassVar[str] = "vllm"
    default_host = "http://localhost:8000"
    health_path = "/health"
    allowed_options: ClassVar[FrozenSet[str]] = LOCAL_OPTIONS
    default_sampling: ClassVar[FrozenSet[str]] = SAMPLING_OPTIONS
    option_renames: ClassVar[Mapping[str, str]] = {"repeat_penalty": "repetition_penalty"}
    top_k_disabled: ClassVar[Optional[int]] = -1
