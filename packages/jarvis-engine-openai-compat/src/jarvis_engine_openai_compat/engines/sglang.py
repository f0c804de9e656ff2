"""SGLang's OpenAI-compatible server (``python -m sglang.launch_server``, default ``http://localhost:30000``).

It speaks vLLM's dialect (the same extra samplers and switches), so it is a :class:`~.vllm.VLLMEngine`
with another key and port.
"""

from __future__ import annotations

from typing import ClassVar

from jarvis_engine_openai_compat.engines.vllm import VLLMEngine

__all__ = ["SGLangEngine"]


class SGLangEngine(VLLMEngine):
    """SGLang's OpenAI-compatible server (``python -m sglang.launch_server``)."""

    engine_id: ClassVar[str] = "sglang"
    default_host = "http://localhost:30000"
