"""``native_react`` (alias ``react``): the ReAct text protocol, and the text-protocol turn the orchestrator's
``text`` mode shares.

Every request carries ``stop`` sequences (the protocol's ``Observation:``), so a model that obeys them
cannot invent a result; one that ignores them is handled by the parser (an action beats everything written
after it). Reasoning is stripped before parsing. A reply with neither an action nor a final answer gets
one corrective message; if the next reply has neither either, it is taken as the answer and a notice says
so. Observations go back as a user message ``Observation: …`` (failures read ``error: …``).
"""

from __future__ import annotations

from typing import Any, AsyncIterator, List, Sequence

from jarvis_agents.agents.modes import engine_accepts
from jarvis_agents.agents.text_protocol import REACT, Protocol, parse_reply, render_tools
from jarvis_agents.agents.tool_loop import LoopAgent
from jarvis_core.agents import FINAL_ANSWER_PROMPT, AgentEvent, AgentRun, Decision, Notice, TextDelta
from jarvis_core.errors import ConfigError
from jarvis_core.types import Message, Role, ToolResult

__all__ = ["ReActAgent", "observe_text", "protocol_prompt", "require_stop", "text_turn"]


def protocol_prompt(protocol: Protocol, tools_text: str) -> str:
    """The instructions added to the system message of every text-protocol request."""
    p = protocol
    return (
        f"You can use these tools:\n{tools_text}\n\n"
        f"To use a tool, reply in exactly this format and then stop:\n"
        f"{p.thought}: what you need to do next\n{p.action}: the tool name\n"
        f"{p.action_input}: the arguments as a JSON object\n\n"
        f"You will get the result as \"{p.observation}: ...\". Never write the {p.observation} yourself.\n"
        f"When you know the answer, reply:\n{p.thought}: why you know it\n{p.final}: the answer"
    )


def corrective_message(protocol: Protocol) -> str:
    """The one message sent after a reply with neither an action nor a final answer."""
    return (f"Your reply had neither an \"{protocol.action}:\" line nor a \"{protocol.final}:\" line. "
            f"Reply again: either call a tool ({protocol.action}: and {protocol.action_input}:) "
            f"or give the answer ({protocol.final}:).")


def require_stop(engine: Any, what: str) -> None:
    """Text protocols always send ``stop``: an engine that does not take it cannot run them."""
    if not engine_accepts(engine, "stop"):
        raise ConfigError(f"{what} needs an engine that accepts the 'stop' option; "
                          f"the {getattr(engine, 'engine_id', '?')} engine does not")


def _with_instructions(messages: Sequence[Message], instructions: str) -> List[Message]:
    out = list(messages)
    if out and out[0].role is Role.SYSTEM:
        out[0] = Message.system(f"{out[0].content or ''}\n\n{instructions}".strip())
    else:
        out.insert(0, Message.system(instructions))
    return out


async def text_turn(agent: Any, run: AgentRun, protocol: Protocol) -> AsyncIterator[AgentEvent]:
    """One turn of a text protocol; sets ``run.decision``."""
    specs = list(agent.tool_specs())
    instructions = protocol_prompt(protocol, render_tools(specs))
    corrected = False
    while True:
        messages = _with_instructions(run.messages, instructions)
        async for event in agent.call_model(run, messages=messages, record=False, stop=protocol.stop):
            if not isinstance(event, TextDelta):  # protocol text, not the answer
                yield event
        completion = run.completion
        assert completion is not None
        parsed = parse_reply(completion.content or "", protocol, specs)
        run.messages.append(Message.assistant(parsed.kept))
        if parsed.call is not None:
            run.decision = Decision("", (parsed.call,))
            return
        if parsed.final is not None:
            answer = parsed.final
        elif not corrected:
            corrected = True
            run.messages.append(Message.user(corrective_message(protocol)))
            yield Notice(run.run_id, "protocol", "the reply had neither an action nor an answer; asked once more",
                         run.turns)
            continue
        else:
            answer = parsed.kept.strip()
            run.state["protocol_violation"] = True
            yield Notice(run.run_id, "protocol", "the model did not follow the protocol after one correction; "
                         "its reply is taken as the answer", run.turns)
        if answer:
            yield TextDelta(run.run_id, run.turns, answer)
        run.decision = Decision(answer)
        return


def observe_text(run: AgentRun, results: Sequence[ToolResult], protocol: Protocol) -> None:
    """The results as one user message of observations, in call order."""
    text = "\n".join(f"{protocol.observation}: {r.content}" for r in results)
    run.messages.append(Message.user(text))


class ReActAgent(LoopAgent):
    """Thought / Action / Action Input / Final Answer, with ``stop`` always sent."""

    agent_id = "native_react"

    def __init__(self, engine: Any, **kwargs: Any) -> None:
        super().__init__(engine, **kwargs)
        require_stop(engine, "the native_react agent")

    async def decide(self, run: AgentRun) -> AsyncIterator[AgentEvent]:
        async for event in text_turn(self, run, REACT):
            yield event

    def observe(self, run: AgentRun, results: Sequence[ToolResult]) -> None:
        observe_text(run, results, REACT)

    async def final_answer(self, run: AgentRun) -> AsyncIterator[AgentEvent]:
        run.messages.append(Message.user(FINAL_ANSWER_PROMPT))
        async for event in self.call_model(run, stop=REACT.stop):  # stop on every request, this one too
            yield event
