"""A prepared ``/api/chat`` call and what the engine works out once per model."""

from __future__ import annotations

import json
from typing import Any, Dict, Optional

from jarvis_engine_ollama.options import wire_options
from jarvis_engine_ollama.truncation import prompt_chars

__all__ = ["ChatRequest", "ModelPlan"]


class ModelPlan:
    """What the engine works out once per model: its adapter, its checked default sampling options, and
    whether answers need the family's parsers (with and without tools)."""

    __slots__ = ("_passthrough", "adapter", "sampling")

    def __init__(self, adapter: Any) -> None:
        self.adapter = adapter
        self.sampling = wire_options(adapter.sampling({}), {}, max_tokens=None, num_ctx=None)
        self._passthrough: Dict[bool, bool] = {}

    def passthrough(self, tools: Any) -> bool:
        """True when answers to a request with (or without) ``tools`` need none of the family's parsers."""
        key = bool(tools)
        flag = self._passthrough.get(key)
        if flag is None:
            proc = self.adapter.stream_processor(tools=tools)
            # A processor that holds no parser would only copy every chunk, and postprocess change nothing.
            flag = self._passthrough[key] = (
                getattr(proc, "reasoning", True) is None and getattr(proc, "tool", True) is None
            )
        return flag


class ChatRequest:
    """One prepared ``/api/chat`` call: the body plus what is needed to read its answer."""

    __slots__ = ("adapter", "body", "model", "num_ctx", "passthrough", "tools")

    def __init__(
        self, body: Dict[str, Any], model: str, adapter: Any, tools: Any, num_ctx: Optional[int], passthrough: bool
    ) -> None:
        self.body, self.model, self.adapter, self.tools, self.num_ctx = body, model, adapter, tools, num_ctx
        #: True when the family has no parser to run on this answer (post-processing would change nothing).
        self.passthrough = passthrough

    def prompt_chars(self) -> int:
        """Characters of the prompt's texts and tool schemas (for the truncation check)."""
        tools = self.body.get("tools")
        return prompt_chars(self.body["messages"], len(json.dumps(tools)) if tools else 0)
