"""Agents: the contract (:class:`BaseAgent`, :class:`ToolUsingAgent`), the events a run yields, the
settings precedence and :func:`create_agent`. Names load on first use, so importing this package is cheap.

Writing an agent::

    from jarvis_core.agents import BaseAgent

    class Echo(BaseAgent):
        agent_id = "echo"

        async def loop(self, run):
            run.turns = 1
            async for event in self.call_model(run):
                yield event
            run.finish(run.completion.content or "", "final")
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from jarvis_core.lazy import lazy_exports

_LAZY = {
    "BaseAgent": "jarvis_core.agents.base",
    "CONTINUE_PROMPT": "jarvis_core.agents.base",
    "ToolUsingAgent": "jarvis_core.agents.tool_agent",
    "Decision": "jarvis_core.agents.tool_agent",
    "FINAL_ANSWER_PROMPT": "jarvis_core.agents.tool_agent",
    "AgentRun": "jarvis_core.agents.run",
    "AgentSettings": "jarvis_core.agents.settings",
    "CORE_DEFAULTS": "jarvis_core.agents.settings",
    "resolve_settings": "jarvis_core.agents.settings",
    "LoopGuard": "jarvis_core.agents.guard",
    "LoopGuardConfig": "jarvis_core.agents.guard",
    "create_agent": "jarvis_core.agents.factory",
    "AgentEvent": "jarvis_core.agents.events",
    "RunStarted": "jarvis_core.agents.events",
    "TextDelta": "jarvis_core.agents.events",
    "ReasoningDelta": "jarvis_core.agents.events",
    "ToolCallsRequested": "jarvis_core.agents.events",
    "ToolCallFinished": "jarvis_core.agents.events",
    "TurnFinished": "jarvis_core.agents.events",
    "Notice": "jarvis_core.agents.events",
    "RunFinished": "jarvis_core.agents.events",
}

__all__ = [
    "AgentEvent",
    "AgentRun",
    "AgentSettings",
    "BaseAgent",
    "CONTINUE_PROMPT",
    "CORE_DEFAULTS",
    "Decision",
    "FINAL_ANSWER_PROMPT",
    "LoopGuard",
    "LoopGuardConfig",
    "Notice",
    "ReasoningDelta",
    "RunFinished",
    "RunStarted",
    "TextDelta",
    "ToolCallFinished",
    "ToolCallsRequested",
    "ToolUsingAgent",
    "TurnFinished",
    "create_agent",
    "resolve_settings",
]

__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals())

if TYPE_CHECKING:  # pragma: no cover
    from jarvis_core.agents.base import CONTINUE_PROMPT, BaseAgent
    from jarvis_core.agents.events import (
        AgentEvent,
        Notice,
        ReasoningDelta,
        RunFinished,
        RunStarted,
        TextDelta,
        ToolCallFinished,
        ToolCallsRequested,
        TurnFinished,
    )
    from jarvis_core.agents.factory import create_agent
    from jarvis_core.agents.guard import LoopGuard, LoopGuardConfig
    from jarvis_core.agents.run import AgentRun
    from jarvis_core.agents.settings import CORE_DEFAULTS, AgentSettings, resolve_settings
    from jarvis_core.agents.tool_agent import FINAL_ANSWER_PROMPT, Decision, ToolUsingAgent
