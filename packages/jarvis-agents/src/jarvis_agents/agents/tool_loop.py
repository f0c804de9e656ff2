"""The base of this package's tool-using agents: the core's loop, plus two things every one of them needs.

- Tools that call a model (``llm``) add their usage to the run (:mod:`jarvis_agents.usage`).
- A protocol failure the loop cannot recover from (a constrained reply that never parsed) ends the run
  with ``stop_reason="error"`` and the reason in ``metadata["error"]``; the unparsed text is never the
  answer. A ``decide`` step reports it with :func:`fail`.
"""

from __future__ import annotations

from typing import AsyncIterator

from jarvis_agents.run_keys import RunKey
from jarvis_agents.usage import usage_sink
from jarvis_core.agents import AgentEvent, AgentRun, Decision, Notice, ToolUsingAgent

__all__ = ["FAILURE", "LoopAgent", "fail"]

#: Why the run failed, set by :func:`fail`; the run then ends with ``stop_reason="error"``.
FAILURE: RunKey[str] = RunKey("failure")


def fail(run: AgentRun, problem: str) -> Notice:
    """Mark the run as failed (it ends after this turn with ``stop_reason="error"``); returns the notice to yield."""
    FAILURE.set(run, problem)
    run.decision = Decision("")
    return Notice(run.run_id, "error", problem, run.turns)


class LoopAgent(ToolUsingAgent):
    """:class:`~jarvis_core.agents.ToolUsingAgent` with tool usage accounting and protocol failures."""

    async def loop(self, run: AgentRun) -> AsyncIterator[AgentEvent]:
        with usage_sink(run):
            async for event in super().loop(run):
                yield event
        failure = FAILURE.get(run, None)
        if failure:
            run.finish("", "error", error=failure)
