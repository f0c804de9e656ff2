"""LM Studio's local server (default ``http://localhost:1234``, probed through ``/v1/models``).

It has no ``min_p`` sampler, and loads a model on its first request: :meth:`LMStudioEngine.prepare`
sends a one-token request so that the load happens before the caller's first real one.
"""

from __future__ import annotations

from typing import ClassVar, FrozenSet

from jarvis_core.engine.base import SAMPLING_OPTIONS
from jarvis_engine_openai_compat.engines.base import COMMON_OPTIONS, LOCAL_SAMPLING, OpenAICompatEngine

__all__ = ["LMStudioEngine"]


class LMStudioEngine(OpenAICompatEngine):
    """LM Studio's local server."""

    engine_id: ClassVar[str] = "lmstudio"
    default_host = "http://localhost:1234"
    allowed_options: ClassVar[FrozenSet[str]] = COMMON_OPTIONS | (LOCAL_SAMPLING - {"min_p"})
    default_sampling: ClassVar[FrozenSet[str]] = SAMPLING_OPTIONS - {"min_p"}

    def prepare(self, model: str) -> None:
        """Check the model is offered, then load it with a one-token request (LM Studio loads on first use)."""
        super().prepare(model)
        self.generate([{"role": "user", "content": "hi"}], model=model, max_tokens=1, temperature=0)
