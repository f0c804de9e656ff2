"""A tool-using agent whose prompts and reply parsing come from a prompt provider.

:class:`PromptDrivenAgent` is :class:`~jarvis_core.agents.ToolUsingAgent` with three steps taken over by a
:class:`~jarvis_core.prompts.PromptSession`: the first request's messages (the provider's system prompt,
the suffix on user turns), each turn's request shape (``response_format`` in text mode, ``build_tools`` in
native mode) and the reading of each reply into tool calls. The tool loop itself (execution, approval, loop
guard, turn limit) is the agent contract's.

In text mode the assistant turn kept in the transcript is the parsed one (message plus structured tool
calls), so the tool results that follow answer real call ids and the chat template renders the calls in the
model's own format.

The provider's two loop flags are honoured here: with ``lazy_tool_loading`` the model's ``get_tools`` calls
are answered by the session (never sent to the executor; in native mode the fetched tools are offered from
then on), and with ``force_tool_calls`` a first reply that calls no tool is asked again once with the
session's corrective turn.

It is registered as the agent ``prompt_driven`` by the core's ``core-prompts`` plugin, so
``jarvis ask --agent prompt_driven --prompt-provider NAME --tools …`` runs the tools a provider's prompt offers.

Other agents opt in the same way: set ``accepts_prompt_session = True`` and take a ``prompt_session``
keyword; ``Jarvis.ask(agent=…, prompt_provider=…)`` then hands them the session.
"""

from __future__ import annotations

from typing import Any, AsyncIterator, ClassVar, Dict, List, Optional, Sequence

import attrs

from jarvis_core.agents.events import AgentEvent, ToolCallFinished
from jarvis_core.agents.run import AgentRun
from jarvis_core.agents.tool_agent import FINAL_ANSWER_PROMPT, Decision, ToolUsingAgent
from jarvis_core.errors import ConfigError
from jarvis_core.prompts.session import PromptSession
from jarvis_core.types import AgentContext, Message, Role, ToolCall, ToolResult

__all__ = ["PromptDrivenAgent"]


class PromptDrivenAgent(ToolUsingAgent):
    """A :class:`ToolUsingAgent` driven by ``prompt_session``. The session's tools are the agent's tools
    unless the session was given tools of its own (e.g. schemas carrying Jarvis extras)."""

    agent_id = "prompt_driven"
    accepts_prompt_session: ClassVar[bool] = True

    def __init__(self, engine: Any, *, prompt_session: Optional[PromptSession] = None, **kwargs: Any) -> None:
        if prompt_session is None:
            raise ConfigError(f"agent {self.agent_id!r} is driven by a prompt provider and got none: add "
                              "--prompt-provider NAME (or prompt_provider=... in Jarvis.ask)")
        super().__init__(engine, **kwargs)
        if not prompt_session.tools and self.tool_specs():
            prompt_session = attrs.evolve(prompt_session, tools=list(self.tool_specs()))
        self.prompt_session = prompt_session

    def build_messages(self, input: str, context: Optional[AgentContext]) -> List[Message]:
        history = [m for m in (context.messages if context else ()) if m.role is not Role.SYSTEM]
        return self.prompt_session.messages([*history, Message.user(input)])

    async def decide(self, run: AgentRun) -> AsyncIterator[AgentEvent]:
        async for event in self._provider_call(run, with_tools=True):
            yield event
        assert run.completion is not None
        session = self.prompt_session
        if (not run.tool_results and not run.state.get("retried_for_tool_call")
                and session.needs_tool_call(run.completion.tool_calls)):
            run.state["retried_for_tool_call"] = True
            run.messages.append(session.tool_call_required())
            async for event in self._provider_call(run, with_tools=True):
                yield event
            assert run.completion is not None
        run.decision = Decision(run.completion.content or "", run.completion.tool_calls)

    async def final_answer(self, run: AgentRun) -> AsyncIterator[AgentEvent]:
        run.messages.append(self.prompt_session.messages([Message.user(FINAL_ANSWER_PROMPT)])[-1])
        async for event in self._provider_call(run, with_tools=False):
            yield event

    async def _run_calls(self, run: AgentRun, calls: Sequence[ToolCall], out: List[ToolResult]
                         ) -> AsyncIterator[AgentEvent]:
        """``get_tools`` calls are answered by the session; the others go through the executor as usual.
        ``out`` gets every result in call order."""
        session = self.prompt_session
        answered: Dict[int, ToolResult] = {}
        loaded: List[str] = run.state.setdefault("tools_loaded", [])
        for i, call in enumerate(calls):
            if session.is_get_tools(call):
                answered[i], names = session.answer_get_tools(call)
                loaded.extend(n for n in names if n not in loaded)
                yield ToolCallFinished(run.run_id, run.turns, answered[i])
        if not answered:
            async for event in super()._run_calls(run, calls, out):
                yield event
            return
        others: List[ToolResult] = []
        async for event in super()._run_calls(run, [c for i, c in enumerate(calls) if i not in answered], others):
            yield event
        rest = iter(others)
        out.extend(answered[i] if i in answered else next(rest) for i in range(len(calls)))

    async def _provider_call(self, run: AgentRun, *, with_tools: bool) -> AsyncIterator[AgentEvent]:
        """One model call shaped by the session; ``run.completion`` becomes the reply as the provider read it."""
        options = self.prompt_session.request_options(self.engine, loaded=run.state.get("tools_loaded", ()))
        tools = options.pop("tools", None) if with_tools else None
        options.pop("tools", None)
        async for event in self.call_model(run, tools=tools, continue_on_length=True, **options):
            yield event
        assert run.completion is not None
        read = self.prompt_session.read(run.completion)
        run.completion = read.completion
        if not self.prompt_session.native and run.messages and run.messages[-1].role is Role.ASSISTANT:
            run.messages[-1] = Message.assistant(read.reply.message or None, read.completion.tool_calls)
