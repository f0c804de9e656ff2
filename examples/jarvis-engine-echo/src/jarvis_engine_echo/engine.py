"""The echo engine: answers with the last user message, word by word when streamed.

It shows the whole engine contract without a server: typed results (:class:`Completion`,
:class:`StreamChunk`), option allow-listing, ``max_tokens`` truncation with ``finish_reason="length"``,
usage counts, and ``list_models``/``health``.
"""

from __future__ import annotations

from typing import Any, AsyncIterator, List, Optional, Sequence

from jarvis_core.engine.base import InferenceEngine, ToolLike
from jarvis_core.engine.messages import coerce_messages
from jarvis_core.types import Completion, MessageLike, Role, StreamChunk, Usage

__all__ = ["EchoEngine"]


class EchoEngine(InferenceEngine):
    """Repeats the last user message. ``prefix`` is put before the answer.

    "Tokens" are whitespace-separated words: the answer stops after ``max_tokens`` of them.
    """

    engine_id = "echo"
    #: Options accepted beyond the named parameters; anything else raises InvalidOptionError.
    allowed_options = frozenset({"top_p", "seed"})

    def __init__(self, *, prefix: str = "") -> None:
        self.prefix = prefix

    def _answer(self, messages: Sequence[MessageLike], max_tokens: int) -> tuple[List[str], int, str]:
        convo = coerce_messages(messages)
        last_user = next((m.text or "" for m in reversed(convo) if m.role == Role.USER), "")
        words = (self.prefix + last_user).split()
        prompt_tokens = sum(len((m.text or "").split()) for m in convo)
        finish = "length" if len(words) > max_tokens else "stop"
        return words[:max_tokens], prompt_tokens, finish

    def generate(
        self,
        messages: Sequence[MessageLike],
        *,
        model: str,
        temperature: Optional[float] = None,
        max_tokens: int = 1024,
        tools: Optional[Sequence[ToolLike]] = None,
        **options: Any,
    ) -> Completion:
        self.check_options(options)
        words, prompt_tokens, finish = self._answer(messages, max_tokens)
        return Completion(
            content=" ".join(words),
            usage=Usage(prompt_tokens=prompt_tokens, completion_tokens=len(words)),
            model=model,
            finish_reason=finish,
        )

    async def stream_full(
        self,
        messages: Sequence[MessageLike],
        *,
        model: str,
        temperature: Optional[float] = None,
        max_tokens: int = 1024,
        tools: Optional[Sequence[ToolLike]] = None,
        **options: Any,
    ) -> AsyncIterator[StreamChunk]:
        self.check_options(options)
        words, prompt_tokens, finish = self._answer(messages, max_tokens)
        for i, word in enumerate(words):
            yield StreamChunk(content=word if i == 0 else " " + word)
        yield StreamChunk(
            finish_reason=finish, usage=Usage(prompt_tokens=prompt_tokens, completion_tokens=len(words))
        )

    def list_models(self) -> List[str]:
        return ["echo-1"]

    def health(self) -> bool:
        return True
