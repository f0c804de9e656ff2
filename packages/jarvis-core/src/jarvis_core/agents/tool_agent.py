"""The tool loop: :class:`ToolUsingAgent`.

Each turn: ask the model (:meth:`ToolUsingAgent.decide`); no tool calls means the reply is the answer
(``stop_reason="final"``); otherwise the calls are announced (``ToolCallsRequested``), checked by the
loop guard, run through the :class:`~jarvis_core.tools.ToolExecutor` (in parallel when allowed, results
kept in call order), and their results go back to the model (:meth:`ToolUsingAgent.observe`). After
``max_turns`` turns with tool calls the run ends with ``stop_reason="max_turns"``, after one last call
without tools when ``final_answer_on_max_turns`` is on.

Subclasses change how a turn's action is obtained and how results go back by overriding :meth:`decide`
(e.g. a JSON-schema-constrained action, or a ReAct text protocol) and :meth:`observe`.
"""

from __future__ import annotations

import asyncio
from typing import Any, AsyncIterator, List, Optional, Sequence, Tuple

import attrs

from jarvis_core.agents.base import BaseAgent
from jarvis_core.agents.events import AgentEvent, Notice, ToolCallFinished, ToolCallsRequested
from jarvis_core.agents.guard import LoopGuard, LoopGuardConfig
from jarvis_core.agents.run import AgentRun
from jarvis_core.tools.executor import ToolExecutor
from jarvis_core.types import Message, ToolCall, ToolResult, ToolSpec

__all__ = ["FINAL_ANSWER_PROMPT", "Decision", "ToolUsingAgent"]

#: The user message of the extra call made when the turn limit is reached.
FINAL_ANSWER_PROMPT = ("You have used all your tool turns. Do not call any more tools: give your final answer now, "
                       "based on the results above.")


def _calls(value: Sequence[ToolCall]) -> Tuple[ToolCall, ...]:
    return tuple(value)


@attrs.frozen
class Decision:
    """What the model decided in a turn: tool ``calls`` to run, or (none) the final ``content``."""

    content: str = ""
    calls: Tuple[ToolCall, ...] = attrs.field(default=(), converter=_calls)


class ToolUsingAgent(BaseAgent):
    """An agent that calls tools in a loop. Extra keyword options (besides :class:`BaseAgent`'s):

    :param parallel_tools: run the calls of one turn at the same time (results stay in call order).
    :param max_calls_per_turn: calls beyond this in one turn are not run; the model is told.
    :param loop_guard: the guard's config, ``None`` to switch it off.
    :param final_answer_on_max_turns: at the turn limit, make one last call without tools for an answer.
    """

    accepts_tools = True

    def __init__(
        self,
        engine: Any,
        *,
        model: str,
        tools: Sequence[Any] = (),
        parallel_tools: bool = True,
        max_calls_per_turn: int = 8,
        loop_guard: Optional[LoopGuardConfig] = LoopGuardConfig(),
        final_answer_on_max_turns: bool = True,
        **kwargs: Any,
    ) -> None:
        super().__init__(engine, model=model, tools=tools, **kwargs)
        self.parallel_tools = parallel_tools
        self.max_calls_per_turn = max_calls_per_turn
        self.loop_guard = loop_guard
        self.final_answer_on_max_turns = final_answer_on_max_turns
        self.executor = ToolExecutor(self.tools, approver=self.approver, bus=self.bus)

    def tool_specs(self) -> Tuple[ToolSpec, ...]:
        """The specs offered to the model."""
        return self.executor.specs()

    def new_run(self, input: str, context: Any = None) -> AgentRun:
        run = super().new_run(input, context)
        run.executor = self.executor.with_run(run.run_id)
        run.guard = LoopGuard(self.loop_guard) if self.loop_guard is not None else None
        return run

    # -- overridable steps --------------------------------------------------------------------------
    async def decide(self, run: AgentRun) -> AsyncIterator[AgentEvent]:
        """Ask the model for this turn's action and set ``run.decision`` to a :class:`Decision`.

        Default: native function calling (the tools go to the engine, which returns ``tool_calls``).
        """
        async for event in self.call_model(run, tools=self.tool_specs() or None, continue_on_length=True):
            yield event
        completion = run.completion
        assert completion is not None
        run.decision = Decision(completion.content or "", completion.tool_calls)

    def observe(self, run: AgentRun, results: Sequence[ToolResult]) -> None:
        """Give the results back to the model. Default: one ``tool`` message per result, in call order."""
        run.messages.extend(r.to_message() for r in results)

    async def final_answer(self, run: AgentRun) -> AsyncIterator[AgentEvent]:
        """The extra call at the turn limit: no tools, and a user message asking for the answer."""
        run.messages.append(Message.user(FINAL_ANSWER_PROMPT))
        async for event in self.call_model(run, continue_on_length=True):
            yield event

    # -- the loop -----------------------------------------------------------------------------------
    async def loop(self, run: AgentRun) -> AsyncIterator[AgentEvent]:
        last_content = ""
        for turn in range(1, self.max_turns + 1):
            run.turns = turn
            async for event in self.decide(run):
                yield event
            decision = run.decision
            if decision is None:
                raise TypeError(f"{type(self).__name__}.decide() set no run.decision")
            last_content = decision.content or last_content
            if not decision.calls:
                run.finish(decision.content, "final")
                return
            yield ToolCallsRequested(run.run_id, turn, decision.calls)
            results: List[ToolResult] = []
            async for event in self._run_calls(run, decision.calls, results):
                yield event
            run.tool_results.extend(results)
            self.observe(run, results)
            guard = run.guard
            if guard is not None and guard.should_stop:
                yield Notice(run.run_id, "loop_guard", "the model kept repeating the same tool call; run stopped",
                             turn)
                run.finish(last_content, "loop_guard")
                return
        yield Notice(run.run_id, "max_turns", f"reached the limit of {self.max_turns} tool turn(s)", run.turns)
        if self.final_answer_on_max_turns:
            async for event in self.final_answer(run):
                yield event
            assert run.completion is not None
            last_content = run.completion.content or last_content
        run.finish(last_content, "max_turns")

    async def _run_calls(self, run: AgentRun, calls: Sequence[ToolCall], out: List[ToolResult]
                         ) -> AsyncIterator[AgentEvent]:
        """Run a turn's calls, yielding a :class:`ToolCallFinished` as each one ends (so a stream shows
        results as they come); ``out`` receives the results in call order."""
        executor: ToolExecutor = run.executor
        guard = run.guard
        results: List[Optional[ToolResult]] = [None] * len(calls)
        to_run: List[int] = []
        for i, call in enumerate(calls):
            if i >= self.max_calls_per_turn:
                results[i] = executor.reject(call, f"not run: at most {self.max_calls_per_turn} tool calls per "
                                                   "turn; call it again in the next turn if you still need it",
                                             outcome="too_many_calls")
                continue
            refusal = guard.check(call) if guard is not None else None
            if refusal is not None:
                results[i] = executor.reject(call, refusal, outcome="loop_guard")
            else:
                to_run.append(i)
        for refused in results:
            if refused is not None:
                yield ToolCallFinished(run.run_id, run.turns, refused)
        if self.parallel_tools and len(to_run) > 1:
            async def one(i: int) -> Tuple[int, ToolResult]:
                return i, await executor.aexecute(calls[i])

            tasks = [asyncio.ensure_future(one(i)) for i in to_run]
            try:
                for next_done in asyncio.as_completed(tasks):
                    i, result = await next_done
                    results[i] = result
                    yield ToolCallFinished(run.run_id, run.turns, result)
            finally:
                for task in tasks:
                    task.cancel()
        else:
            for i in to_run:
                results[i] = await executor.aexecute(calls[i])
                yield ToolCallFinished(run.run_id, run.turns, results[i])  # type: ignore[arg-type]
        out.extend(r for r in results if r is not None)
