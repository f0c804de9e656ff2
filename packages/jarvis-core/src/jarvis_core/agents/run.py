"""The state of one agent run (:class:`AgentRun`). Agents keep all per-run state here, never on ``self``,
so one agent object can serve concurrent runs."""

from __future__ import annotations

import time
import uuid
from typing import TYPE_CHECKING, Any, Dict, List, Optional

from jarvis_core.types import AgentContext, AgentResult, Completion, Message, ToolResult, Usage

if TYPE_CHECKING:
    from jarvis_core.agents.guard import LoopGuard
    from jarvis_core.agents.tool_agent import Decision

__all__ = ["AgentRun", "RunState", "add_usage", "new_run_id"]

#: Keys the tool loop used to keep in ``run.state``; they are typed attributes of :class:`AgentRun` now.
_TYPED = ("decision", "guard")


def new_run_id() -> str:
    """A fresh run id (``run_<hex>``)."""
    return f"run_{uuid.uuid4().hex[:16]}"


def add_usage(a: Usage, b: Optional[Usage]) -> Usage:
    """The sum of two usages."""
    if b is None:
        return a
    return Usage(a.prompt_tokens + b.prompt_tokens, a.completion_tokens + b.completion_tokens,
                 a.total_tokens + b.total_tokens)


class AgentRun:
    """One run: its id, input, working transcript, tool results, usage and turn count.

    ``messages`` starts as a private copy of the context's conversation (the caller's context is never
    changed); ``completion`` holds the last model reply (set by
    :meth:`~jarvis_core.agents.BaseAgent.call_model`); ``result`` is set once by :meth:`finish`.
    ``decision`` is this turn's :class:`~jarvis_core.agents.Decision` (set by
    :meth:`~jarvis_core.agents.ToolUsingAgent.decide`), ``guard`` the run's
    :class:`~jarvis_core.agents.LoopGuard`; ``state`` is free for an agent's own per-run values.
    """

    def __init__(self, run_id: str, input: str, context: Optional[AgentContext], executor: Any = None) -> None:
        self.run_id = run_id
        self.input = input
        self.context = context or AgentContext()
        self.messages: List[Message] = []
        self.tool_results: List[ToolResult] = []
        self.usage = Usage()
        self.turns = 0
        self.model_calls = 0
        self.completion: Optional[Completion] = None
        self.executor = executor
        self.result: Optional[AgentResult] = None
        self.decision: Optional[Decision] = None
        self.guard: Optional[LoopGuard] = None
        self.state: Dict[str, Any] = RunState(self)
        self.started = time.monotonic()

    def finish(self, content: str, stop_reason: str, **metadata: Any) -> AgentResult:
        """Record the run's result (``stop_reason`` from :data:`~jarvis_core.types.STOP_REASONS`)."""
        self.result = AgentResult(
            content=content,
            messages=tuple(self.messages),
            tool_results=tuple(self.tool_results),
            turns=self.turns,
            usage=self.usage,
            metadata={"run_id": self.run_id, "model_calls": self.model_calls, **metadata},
            stop_reason=stop_reason,
        )
        return self.result

    def __repr__(self) -> str:
        return f"<AgentRun {self.run_id} turns={self.turns}>"


class RunState(Dict[str, Any]):
    """``run.state``: an agent's own per-run values. ``"decision"`` and ``"guard"``, which the tool loop
    kept here, are the typed ``run.decision`` and ``run.guard`` now; reading or writing them here still
    works, and warns with :class:`~jarvis_core.errors.JarvisDeprecationWarning`."""

    def __init__(self, run: AgentRun) -> None:
        super().__init__()
        self._run = run

    @staticmethod
    def _deprecated(key: str) -> None:
        from jarvis_core.deprecation import deprecated

        deprecated(f'run.state["{key}"]', f"run.{key}")

    def __getitem__(self, key: str) -> Any:
        if key in _TYPED:
            self._deprecated(key)
            return getattr(self._run, key)
        return super().__getitem__(key)

    def __setitem__(self, key: str, value: Any) -> None:
        if key in _TYPED:
            self._deprecated(key)
            setattr(self._run, key, value)
            return
        super().__setitem__(key, value)

    def get(self, key: str, default: Any = None) -> Any:
        if key in _TYPED:
            self._deprecated(key)
            value = getattr(self._run, key)
            return default if value is None else value
        return super().get(key, default)

    def __contains__(self, key: object) -> bool:
        if key in _TYPED:
            return getattr(self._run, str(key)) is not None
        return super().__contains__(key)
