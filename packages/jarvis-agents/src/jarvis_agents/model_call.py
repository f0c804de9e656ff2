"""One model call for its text: what a tool or a REPL asks a model on an agent's behalf."""

from __future__ import annotations

from typing import Any, List, Optional, Sequence, Tuple

from jarvis_core.types import Message, Usage

__all__ = ["complete_text"]


async def complete_text(engine: Any, messages: Sequence[Message], *, model: str, **options: Any
                        ) -> Tuple[str, Optional[Usage]]:
    """Stream one completion from ``engine`` and return its text and usage (``None`` when not reported).

    ``options`` go to ``stream_full`` as they are (``temperature``, ``max_tokens``, engine options)."""
    parts: List[str] = []
    usage: Optional[Usage] = None
    async for chunk in engine.stream_full(list(messages), model=model, **options):
        if chunk.content:
            parts.append(chunk.content)
        usage = chunk.usage or usage
    return "".join(parts), usage
