"""The registered engines: vLLM, SGLang, llama.cpp, LM Studio and any OpenAI-compatible server.

Each differs from :class:`~.compat_engine.OpenAICompatEngine` only in class attributes:

========== ================ ============ ============================================================
engine     default host     health       notes
========== ================ ============ ============================================================
vllm       localhost:8000   ``/health``  ``repeat_penalty`` sent as ``repetition_penalty``; top_k -1 = off
sglang     localhost:30000  ``/health``  as vLLM
llamacpp   localhost:8080   ``/health``  503 while loading = not healthy; ``tool_mode`` auto reads
                                         ``/props`` and constrains tool calls when the template has none
lmstudio   localhost:1234   /v1/models   no ``min_p``; ``prepare`` loads the model (JIT) with 1 token
openai-... (required)       /v1/models   family defaults limited to OpenAI's own sampling fields
========== ================ ============ ============================================================
"""

from __future__ import annotations

from typing import ClassVar, FrozenSet, Mapping, Optional

from jarvis_core.engine.base import SAMPLING_OPTIONS
from jarvis_engine_openai_compat.compat_engine import COMMON_OPTIONS, LOCAL_SAMPLING, OpenAICompatEngine

__all__ = ["LMStudioEngine", "LlamaCppEngine", "OpenAICompatEngine", "SGLangEngine", "VLLMEngine"]

# chat_template_kwargs: per-request template switches (e.g. Qwen3's enable_thinking) on vLLM, SGLang, llama.cpp.
_LOCAL_OPTIONS = COMMON_OPTIONS | LOCAL_SAMPLING | {"chat_template_kwargs"}


class VLLMEngine(OpenAICompatEngine):
    """vLLM's OpenAI-compatible server (``vllm serve``)."""

    engine_id: ClassVar[str] = "vllm"
    default_host = "http://localhost:8000"
    health_path = "/health"
    allowed_options: ClassVar[FrozenSet[str]] = _LOCAL_OPTIONS
    default_sampling: ClassVar[FrozenSet[str]] = SAMPLING_OPTIONS
    option_renames: ClassVar[Mapping[str, str]] = {"repeat_penalty": "repetition_penalty"}
    top_k_disabled: ClassVar[Optional[int]] = -1


class SGLangEngine(VLLMEngine):
    """SGLang's OpenAI-compatible server (``python -m sglang.launch_server``)."""

    engine_id: ClassVar[str] = "sglang"
    default_host = "http://localhost:30000"


class LlamaCppEngine(OpenAICompatEngine):
    """llama.cpp's ``llama-server`` (one model per server; the ``model`` field is informational)."""

    engine_id: ClassVar[str] = "llamacpp"
    default_host = "http://localhost:8080"
    health_path = "/health"
    allowed_options: ClassVar[FrozenSet[str]] = _LOCAL_OPTIONS
    default_sampling: ClassVar[FrozenSet[str]] = SAMPLING_OPTIONS
    top_k_disabled: ClassVar[Optional[int]] = 0
    default_tool_mode: ClassVar[str] = "auto"

    def _auto_mode(self) -> Optional[str]:
        if self._template_tools is None:
            return None
        return "native" if self._template_tools else "json_schema"

    def prepare(self, model: str) -> None:
        """Check that the server is up: it serves the one model it was started with, whatever the name."""
        self.list_models()


class LMStudioEngine(OpenAICompatEngine):
    """LM Studio's local server."""

    engine_id: ClassVar[str] = "lmstudio"
    default_host = "http://localhost:1234"
    allowed_options: ClassVar[FrozenSet[str]] = COMMON_OPTIONS | {"top_k", "repeat_penalty"}
    default_sampling: ClassVar[FrozenSet[str]] = SAMPLING_OPTIONS - {"min_p"}

    def prepare(self, model: str) -> None:
        """Check the model is offered, then load it with a one-token request (LM Studio loads on first use)."""
        super().prepare(model)
        self.generate([{"role": "user", "content": "hi"}], model=model, max_tokens=1, temperature=0)
