"""A prepared ``/api/chat`` call, and the wire form of a model's default sampling values."""

from __future__ import annotations

import json
from typing import Any, Dict, Optional

from jarvis_engine_ollama.options import wire_options
from jarvis_engine_ollama.truncation import prompt_chars

__all__ = ["ChatRequest", "default_options"]


def default_options(adapter: Any) -> Dict[str, Any]:
    """The model's default sampling values as checked wire options (kept with the adapter: ``adapter.derived``)."""
    return wire_options(adapter.sampling({}), {}, max_tokens=None, num_ctx=None)


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
