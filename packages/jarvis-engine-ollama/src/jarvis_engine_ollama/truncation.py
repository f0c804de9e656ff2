"""Noticing that Ollama cut the prompt to fit its context window, and saying so.

Ollama never rejects a prompt that is too long: it drops the oldest messages (keeping the system prompt and
the last message) and, if that is not enough, cuts tokens out of the prompt; when the answer then runs past
the window it shifts the context, forgetting the start. It only logs this on the *server*. The engine
therefore checks every finished response against the window it asked for (``num_ctx``) and reports a cut
with a :class:`PromptTruncatedWarning`, a ``PROMPT_TRUNCATED`` event and ``metadata["prompt_truncated"]``.

The rule (two signals; either is enough):

``window_full``
    ``prompt_eval_count + eval_count >= num_ctx``. The tokens the server evaluated filled the whole window,
    so either the prompt was cut to fit or the context shifted while answering. This cannot fire falsely:
    a window is never overfilled without a cut. It can miss cuts when part of the prompt came from the
    KV cache, because Ollama then counts only the newly evaluated tokens.

``estimate_exceeds``
    A *lower bound* on the prompt's size already exceeds ``num_ctx``: the characters of all message texts
    and tool schemas divided by :data:`MAX_CHARS_PER_TOKEN` (6). Tokenizers of current model families
    average 3-4.5 characters per token on prose and code, so a real prompt is very unlikely to be smaller
    than this bound; when even the bound does not fit, the server must have dropped something, cache or not.

Nothing is checked when ``num_ctx`` is unknown (the engine was told ``num_ctx=0``: "let the server decide").
"""

from __future__ import annotations

import warnings
from typing import Any, Dict, Mapping, Optional, Sequence

from jarvis_core.events import EventBus, EventType

__all__ = ["MAX_CHARS_PER_TOKEN", "PromptTruncatedWarning", "check_truncation", "prompt_chars", "report_truncation"]

#: Characters per token assumed for the lower bound of a prompt's token count (generous on purpose).
MAX_CHARS_PER_TOKEN = 6


class PromptTruncatedWarning(UserWarning):
    """Ollama cut the prompt (or shifted the context) to fit ``num_ctx``: the model did not see everything."""


def prompt_chars(messages: Sequence[Mapping[str, Any]], tools_chars: int = 0) -> int:
    """Characters of every message text (content and thinking) plus ``tools_chars`` for the tool schemas."""
    total = tools_chars
    for m in messages:
        content = m.get("content")
        if isinstance(content, str):
            total += len(content)
        thinking = m.get("thinking")
        if isinstance(thinking, str):
            total += len(thinking)
    return total


def check_truncation(
    *,
    num_ctx: Optional[int],
    prompt_eval_count: Optional[int],
    eval_count: Optional[int],
    chars: int,
) -> Optional[Dict[str, Any]]:
    """The facts of a detected cut (``reason``, counts, window), or ``None`` when the prompt fitted."""
    if not num_ctx:
        return None
    estimated = chars // MAX_CHARS_PER_TOKEN
    reason = None
    if prompt_eval_count is not None and prompt_eval_count + (eval_count or 0) >= num_ctx:
        reason = "window_full"
    elif estimated > num_ctx:
        reason = "estimate_exceeds"
    if reason is None:
        return None
    return {
        "reason": reason,
        "num_ctx": num_ctx,
        "prompt_eval_count": prompt_eval_count,
        "eval_count": eval_count,
        "estimated_min_prompt_tokens": estimated,
    }


def report_truncation(facts: Dict[str, Any], *, model: str, bus: EventBus, stacklevel: int = 3) -> None:
    """Warn and publish ``PROMPT_TRUNCATED`` for a cut found by :func:`check_truncation`."""
    if facts["reason"] == "window_full":
        what = (
            f"the prompt and answer filled the whole {facts['num_ctx']}-token context window "
            f"({facts['prompt_eval_count']} prompt + {facts['eval_count'] or 0} answer tokens)"
        )
    else:
        what = (
            f"the prompt is at least {facts['estimated_min_prompt_tokens']} tokens, more than the "
            f"{facts['num_ctx']}-token context window"
        )
    message = (
        f"ollama: {what}, so Ollama cut the conversation for model {model!r} and the model did not see all of it. "
        f"Raise num_ctx (the num_ctx= option, or num_ctx in [engine.ollama]) or shorten the conversation."
    )
    warnings.warn(message, PromptTruncatedWarning, stacklevel=stacklevel)
    bus.publish(EventType.PROMPT_TRUNCATED, engine="ollama", model=model, **facts)
