"""The typed events an agent run yields from :meth:`~jarvis_core.agents.BaseAgent.astream`.

They are made for a streaming consumer (``jarvis ask`` printing as it goes, ``jarvis serve`` writing SSE):
text and reasoning arrive as deltas; the tool calls of a turn are announced *before* they run
(:class:`ToolCallsRequested`) and each result as soon as the run has it (:class:`ToolCallFinished`);
every model call ends with :class:`TurnFinished`; the run ends with exactly one :class:`RunFinished`
(or the stream raises). Every event carries the ``run_id``.
"""

from __future__ import annotations

from typing import Optional, Sequence, Tuple, Union

import attrs

from jarvis_core.types import AgentResult, ToolCall, ToolResult, Usage

__all__ = [
    "AgentEvent",
    "Notice",
    "ReasoningDelta",
    "RunFinished",
    "RunStarted",
    "TextDelta",
    "ToolCallFinished",
    "ToolCallsRequested",
    "TurnFinished",
]


@attrs.frozen
class RunStarted:
    """The run began: its id, the agent and the model."""

    run_id: str
    agent_id: str
    model: str


@attrs.frozen
class TextDelta:
    """Answer text produced by the model in ``turn`` (a piece; concatenate them)."""

    run_id: str
    turn: int
    text: str


@attrs.frozen
class ReasoningDelta:
    """Reasoning ("thinking") text produced by the model in ``turn``."""

    run_id: str
    turn: int
    text: str


def _calls(value: Sequence[ToolCall]) -> Tuple[ToolCall, ...]:
    return tuple(value)


@attrs.frozen
class ToolCallsRequested:
    """The model asked for these calls in ``turn``; they have not run yet."""

    run_id: str
    turn: int
    calls: Tuple[ToolCall, ...] = attrs.field(converter=_calls)


@attrs.frozen
class ToolCallFinished:
    """One call of ``turn`` finished (also when it failed, was denied or timed out: ``result.ok``)."""

    run_id: str
    turn: int
    result: ToolResult


@attrs.frozen
class TurnFinished:
    """One model call ended: its usage and normalized finish reason."""

    run_id: str
    turn: int
    usage: Usage
    finish_reason: str


@attrs.frozen
class Notice:
    """Something the user should know that is not model output: ``kind`` is e.g. ``mode``, ``loop_guard``,
    ``continuation``, ``max_turns``, ``parse_retry``; ``message`` says it in words."""

    run_id: str
    kind: str
    message: str
    turn: Optional[int] = None


@attrs.frozen
class RunFinished:
    """The run ended; ``result.stop_reason`` says why. Always the last event of a stream that did not raise."""

    run_id: str
    result: AgentResult


#: Any event :meth:`~jarvis_core.agents.BaseAgent.astream` yields.
AgentEvent = Union[
    RunStarted, TextDelta, ReasoningDelta, ToolCallsRequested, ToolCallFinished, TurnFinished, Notice, RunFinished
]
