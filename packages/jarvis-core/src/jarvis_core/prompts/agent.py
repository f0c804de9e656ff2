"""A tool-using agent whose prompts and reply parsing come from a prompt provider.

:class:`PromptDrivenAgent` is :class:`~jarvis_core.agents.ToolUsingAgent` with three steps taken over by a
:class:`~jarvis_core.prompts.PromptSession`: the first request's messages (the provider's system prompt,
the suffix on user turns), each turn's request shape (``response_format`` in text mode, ``build_tools`` in
native mode) and the reading of each reply into tool calls. The tool loop itself (execution, approval, loop
guard, turn limit) is the agent contract's.

In text mode the assistant turn kept in the transcript is the parsed one (message plus structured tool
calls), so the tool results that follow answer real call ids and the chat template renders the calls in the
model's own format.

Other agents opt in the same way: set ``accepts_prompt_session = True`` and take a ``prompt_session``
keyword; ``Jarvis.ask(agent=…, prompt_provider=…)`` then hands them the session.
"""

from __future__ import annotations

from typing import Any, AsyncIterator, ClassVar, List, Optional

import attrs

from jarvis_core.agents.events import AgentEvent
from jarvis_core.agents.run import AgentRun
from jarvis_core.agents.tool_agent import FINAL_ANSWER_PROMPT, Decision, ToolUsingAgent
from jarvis_core.prompts.session import PromptSession
from jarvis_core.types import AgentContext, Message, Role

__all__ = ["PromptDrivenAgent"]


class PromptDrivenAgent(ToolUsingAgent):
    """A :class:`ToolUsingAgent` driven by ``prompt_session``. The session's tools are the agent's tools
    unless the session was given tools of its own (e.g. schemas carrying Jarvis extras)."""

    agent_id = "prompt_driven"
    accepts_prompt_session: ClassVar[bool] = True

    def __init__(self, engine: Any, *, prompt_session: PromptSession, **kwargs: Any) -> None:
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
        run.state["decision"] = Decision(run.completion.content or "", run.completion.tool_calls)

    async def final_answer(self, run: AgentRun) -> AsyncIterator[AgentEvent]:
        run.messages.append(self.prompt_session.messages([Message.user(FINAL_ANSWER_PROMPT)])[-1])
        async for event in self._provider_call(run, with_tools=False):
            yield event

    async def _provider_call(self, run: AgentRun, *, with_tools: bool) -> AsyncIterator[AgentEvent]:
        """One model call shaped by the session; ``run.completion`` becomes the reply as the provider read it."""
        options = self.prompt_session.request_options(self.engine)
        tools = options.pop("tools", None) if with_tools else None
        options.pop("tools", None)
        async for event in self.call_model(run, tools=tools, continue_on_length=True, **options):
            yield event
        assert run.completion is not None
        read = self.prompt_session.read(run.completion)
        run.completion = read.completion
        if not self.prompt_session.native and run.messages and run.messages[-1].role is Role.ASSISTANT:
            run.messages[-1] = Message.assistant(read.reply.message or None, read.completion.tool_calls)
