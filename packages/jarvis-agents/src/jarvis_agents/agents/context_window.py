"""How much text fits: the model's context window, from the engine, and observations cut to fit it.

The window is, first found: the agent's ``context_window`` setting; the engine's own answer
(``engine.context_window(model)``, for an engine that has one); the window the Ollama engine asks for on
every request (``num_ctx``); llama.cpp's ``/props`` (``n_ctx``) for the ``llamacpp`` engine; else
:data:`DEFAULT_CONTEXT_WINDOW`, and the agent says so in a notice. There is no fixed prompt budget.

An observation (a tool result, a cell's output) is cut, with a visible marker, to the room the transcript
leaves in that window after the reply's own ``max_tokens``. Token counts are estimated from characters
(:data:`CHARS_PER_TOKEN`, on the safe side for English text and code); the room never drops below
:data:`MIN_OBSERVATION_CHARS`, so the model always sees the start of a result.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any, AsyncIterator, Optional, Sequence, Tuple

from jarvis_agents.run_keys import RunKey
from jarvis_core.agents import AgentRun, Notice
from jarvis_core.errors import ConfigError, EngineError
from jarvis_core.tools.output import cap_output
from jarvis_core.types import Message

__all__ = ["CHARS_PER_TOKEN", "DEFAULT_CONTEXT_WINDOW", "MIN_OBSERVATION_CHARS", "WINDOW", "ContextWindow",
           "check_window", "context_window", "engine_context_window", "fit_observation"]

DEFAULT_CONTEXT_WINDOW = 8192
CHARS_PER_TOKEN = 3
MIN_OBSERVATION_CHARS = 1000
_DEFAULT_REPLY_TOKENS = 1024
#: The run's context window in tokens, set by :meth:`ContextWindow.for_run`.
WINDOW: RunKey[int] = RunKey("window")


def _positive(value: Any) -> Optional[int]:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def check_window(value: Any, key: str) -> Optional[int]:
    """A configured ``context_window``: ``None`` or a positive whole number, else :class:`ConfigError`."""
    if value is None:
        return None
    window = _positive(value)
    if window:
        return window
    raise ConfigError(f"context_window must be a whole number of tokens above 0, got {value!r}", key=key)


def engine_context_window(engine: Any, model: str) -> Tuple[Optional[int], str]:
    """``(tokens, how we know)`` from the engine, or ``(None, why not)``. May ask the server (not on a loop)."""
    ask = getattr(engine, "context_window", None)
    if callable(ask):
        try:
            answer = _positive(ask(model))
        except EngineError as exc:
            answer = None
            how = f"the engine could not say ({type(exc).__name__})"
        else:
            how = "the engine reports it"
        if answer:
            return answer, how
    num_ctx = _positive(getattr(engine, "num_ctx", None))
    if num_ctx:
        return num_ctx, "the window the engine asks for on every request (num_ctx)"
    request_json = getattr(engine, "request_json", None)
    if getattr(engine, "engine_id", "") == "llamacpp" and callable(request_json):
        try:
            props = request_json("GET", "/props", timeout=5.0)
        except EngineError as exc:
            return None, f"llama.cpp /props did not answer ({type(exc).__name__})"
        settings = props.get("default_generation_settings") if isinstance(props, dict) else None
        n_ctx = _positive((settings or {}).get("n_ctx")) if isinstance(settings, dict) else None
        n_ctx = n_ctx or (_positive(props.get("n_ctx")) if isinstance(props, dict) else None)
        if n_ctx:
            return n_ctx, "llama.cpp /props (n_ctx)"
        return None, "llama.cpp /props has no n_ctx"
    return None, f"the {getattr(engine, 'engine_id', '') or type(engine).__name__} engine does not report it"


def context_window(engine: Any, model: str, configured: Optional[int]) -> Tuple[int, str]:
    """``(tokens, source)``: the configured window, else the engine's, else :data:`DEFAULT_CONTEXT_WINDOW`."""
    if configured:
        return configured, "configured (context_window)"
    tokens, how = engine_context_window(engine, model)
    if tokens:
        return tokens, how
    return DEFAULT_CONTEXT_WINDOW, f"default ({how}; set context_window to change it)"


def _chars(messages: Sequence[Message]) -> int:
    total = 0
    for m in messages:
        total += len(m.content or "") + len(m.reasoning or "")
        total += sum(len(c.name) + len(c.arguments) for c in m.tool_calls)
    return total


def fit_observation(text: str, messages: Sequence[Message], window: int, reply_tokens: Optional[int]) -> str:
    """``text`` cut (with the marker of :func:`~jarvis_core.tools.output.cap_output`) to the room that
    ``messages`` leave in ``window`` tokens after ``reply_tokens`` for the next reply."""
    used = _chars(messages) // CHARS_PER_TOKEN + (reply_tokens or _DEFAULT_REPLY_TOKENS)
    room = max(MIN_OBSERVATION_CHARS, (window - used) * CHARS_PER_TOKEN)
    return cap_output(text, room)[0]


class ContextWindow:
    """One agent's context window: the configured one, else asked of the engine once (thread-safe).

    :meth:`for_run` gives it to the run (:data:`WINDOW`) and yields a notice when it is only the default.
    """

    def __init__(self, engine: Any, model: str, configured: Optional[int]) -> None:
        self.engine = engine
        self.model = model
        self.configured = configured
        self._found: Optional[Tuple[int, str]] = None
        self._lock = threading.Lock()

    def resolve(self) -> Tuple[int, str]:
        """``(tokens, source)``; the first call may ask the server (not on an event loop)."""
        with self._lock:
            if self._found is None:
                self._found = context_window(self.engine, self.model, self.configured)
            return self._found

    async def for_run(self, run: AgentRun) -> AsyncIterator[Notice]:
        """Set the run's :data:`WINDOW`; yields a :class:`Notice` when the window is the default, not a known one."""
        tokens, source = await asyncio.to_thread(self.resolve)
        WINDOW.set(run, tokens)
        if source.startswith("default"):
            yield Notice(run.run_id, "context_window", f"context window {tokens} tokens: {source}")
