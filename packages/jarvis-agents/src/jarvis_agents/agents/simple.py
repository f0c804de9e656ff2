"""``simple``: one model call, no tools. The answer is the model's reply (continued once or twice when it was
cut off by ``max_tokens``); its usage is the run's usage."""

from __future__ import annotations

from typing import AsyncIterator

from jarvis_core.agents import AgentEvent, AgentRun, BaseAgent
from jarvis_core.types import Completion

__all__ = ["SimpleAgent"]


class SimpleAgent(BaseAgent):
    """One call: ``SimpleAgent(engine, model=...).run("question")``."""

    agent_id = "simple"

    async def loop(self, run: AgentRun) -> AsyncIterator[AgentEvent]:
        run.turns = 1
        async for event in self.call_model(run, continue_on_length=True):
            yield event
        completion = run.completion or Completion()
        run.finish(completion.content or "", "final")
