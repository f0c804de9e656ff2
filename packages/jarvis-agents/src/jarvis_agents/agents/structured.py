"""Structured mode: each decision is one JSON-schema-constrained action, and the loop closes what a small
model cannot.

A decision turn sends the core's action schema (:mod:`jarvis_core.tools.json_mode`) in the nested
``response_format`` form (or, for an engine that takes no ``response_format``, the engine's own
``tool_mode="json_schema"``, which builds the same schema with the strings bounded at
``json_mode.DEFAULT_MAX_STRING_LENGTH`` and the answer at what ``max_tokens`` leaves room for), with every free
string bounded (``maxLength``) and the history rewritten for templates without tool support. Then:

- a reply that does not parse, or is cut off by ``max_tokens`` inside the JSON, is retried once with twice
  the budget (the agent's ``max_tokens``, else :data:`DEFAULT_DECISION_TOKENS`; that one retry may use twice
  the user's cap, as the same budget would be cut off the same way); if it fails again the run ends with
  ``stop_reason="error"``. The fragment is never the answer.
- after a successful tool call the next turn is an *answer turn* that cannot call tools again: free text
  with no tools and no schema (``answer="free"``, the default), or a schema that only admits
  ``{"content": ...}`` (``answer="constrained"``; through ``tool_mode`` that is ``tool_choice="none"``). A failed call gets another decision turn instead, so the
  model can correct it.
"""

from __future__ import annotations

import json
from typing import Any, AsyncIterator, Dict, List, Sequence

from jarvis_agents.agents.modes import engine_accepts
from jarvis_agents.agents.tool_loop import fail
from jarvis_agents.run_keys import RunKey
from jarvis_core.agents import AgentEvent, AgentRun, Decision, Notice, TextDelta
from jarvis_core.engine.messages import coerce_messages, messages_to_dicts
from jarvis_core.errors import ConfigError
from jarvis_core.tools.json_mode import parse_action, response_format, rewrite_messages
from jarvis_core.types import Message, Role, ToolResult, ToolSpec

__all__ = ["ANSWERS", "ANSWER_NEXT", "DEFAULT_DECISION_TOKENS", "after_results", "answer_turn", "decision_turn",
           "engine_problem", "plain_history"]

#: Whether the run's next turn is an answer turn (set by :func:`after_results`).
ANSWER_NEXT: RunKey[bool] = RunKey("answer_next")

ANSWERS = ("free", "constrained")
#: The budget of a decision turn when the agent has no ``max_tokens``: room for a whole bounded object.
DEFAULT_DECISION_TOKENS = 256


def constrained_history(messages: Sequence[Message], specs: Sequence[ToolSpec]) -> List[Message]:
    """The transcript for a decision turn: calls as their JSON, results as user messages, the tool note in
    the system message."""
    return coerce_messages(rewrite_messages(messages_to_dicts(messages), specs))


#: Appended to the tool results before an answer turn.
ANSWER_PROMPT = "Answer the question with this result, in plain words."


def plain_history(messages: Sequence[Message]) -> List[Message]:
    """The transcript for an answer turn, for a template without tool support and with nothing that invites
    another call: no tool note, the calls not shown as JSON (a small model copies that shape into its
    answer), each result as a user message ``name(arguments) returned: result``."""
    out: List[Message] = []
    calls = {}
    pending: List[str] = []
    for msg in messages:
        if msg.role is Role.ASSISTANT and msg.tool_calls:
            calls.update({c.id: c for c in msg.tool_calls})
            if msg.text:
                out.append(Message.assistant(msg.text))
            continue
        if msg.role is Role.TOOL:
            call = calls.get(msg.tool_call_id or "")
            args = _argument_text(call.arguments) if call is not None else ""
            pending.append(f"{msg.name or (call.name if call else 'the tool')}({args}) returned: {msg.content or ''}")
            continue
        if pending:
            out.append(Message.user("\n".join(pending)))
            pending = []
        out.append(Message(msg.role, msg.content))
    if pending:
        out.append(Message.user("\n".join([*pending, ANSWER_PROMPT])))
    return out


def _argument_text(arguments: str) -> str:
    try:
        value = json.loads(arguments or "{}")
    except ValueError:
        return arguments
    if isinstance(value, dict) and len(value) == 1:
        return str(next(iter(value.values())))
    return arguments


def engine_problem(engine: Any, answer: str) -> str:
    """Why structured mode (with that ``structured_answer``) cannot work on ``engine``; empty when it can."""
    if engine_accepts(engine, "response_format"):
        return ""
    if not engine_accepts(engine, "tool_mode"):
        return (f"structured mode needs an engine that accepts response_format (or tool_mode); the "
                f"{getattr(engine, 'engine_id', '?')} engine does not")
    if answer == "constrained" and not engine_accepts(engine, "tool_choice"):
        return (f"structured_answer='constrained' through the {getattr(engine, 'engine_id', '?')} engine's "
                "tool_mode needs tool_choice='none', which it does not accept; use structured_answer='free'")
    return ""


def _request(agent: Any, specs: Sequence[ToolSpec], *, answer_only: bool) -> Dict[str, Any]:
    if engine_accepts(agent.engine, "response_format"):
        fmt = response_format([] if answer_only else specs, answer=True, max_string_length=agent.max_string_length)
        return {"response_format": fmt}
    problem = engine_problem(agent.engine, "constrained" if answer_only else "free")
    if problem:
        raise ConfigError(problem, key="agents.orchestrator.structured_answer")
    # The engine builds the schema from the tools (strings bounded, see json_mode.response_format_for_choice);
    # tool_choice="none" makes it admit only {"content": ...}.
    return {"tool_mode": "json_schema", "tool_choice": "none"} if answer_only else {"tool_mode": "json_schema"}


async def decision_turn(agent: Any, run: AgentRun, *, answer_only: bool = False) -> AsyncIterator[AgentEvent]:
    """One constrained action (retried once when it does not parse); sets ``run.decision``."""
    specs = list(agent.tool_specs())
    names = [] if answer_only else [s.name for s in specs]
    budget = agent.max_tokens or DEFAULT_DECISION_TOKENS
    request = _request(agent, specs, answer_only=answer_only)
    native_json = "tool_mode" in request
    for attempt in (1, 2):
        messages = list(run.messages) if native_json else constrained_history(run.messages, [] if answer_only else specs)
        tools = (specs or None) if native_json else None
        async for event in agent.call_model(run, messages=messages, tools=tools, record=False, max_tokens=budget,
                                            **request):
            if not isinstance(event, TextDelta):  # the raw JSON is not the answer
                yield event
        completion = run.completion
        assert completion is not None
        if native_json:
            diagnostics = completion.metadata.get("parser_diagnostics") or ()
            problem = "; ".join(str(d) for d in diagnostics)
            content, calls = completion.content, completion.tool_calls
            if answer_only and calls:
                problem, calls = "the answer turn asked for a tool call", ()
        else:
            parsed = parse_action(completion.content, names)
            problem, content, calls = parsed.problem, parsed.content, parsed.tool_calls
        if completion.finish_reason == "length":
            problem = f"the reply was cut off by max_tokens ({budget}) before the JSON was complete"
        if not problem:
            break
        if attempt == 1:
            budget *= 2
            yield Notice(run.run_id, "parse_retry", f"{problem}; retrying once with max_tokens={budget}", run.turns)
            continue
        yield fail(run, f"the constrained reply could not be used twice: {problem}")
        return
    if calls:
        run.messages.append(Message.assistant(None, tool_calls=calls))
        run.decision = Decision("", calls)
        return
    text = content or ""
    run.messages.append(Message.assistant(text))
    if text:
        yield TextDelta(run.run_id, run.turns, text)
    run.decision = Decision(text)


async def answer_turn(agent: Any, run: AgentRun) -> AsyncIterator[AgentEvent]:
    """The turn after a successful call: the answer, with no way to call a tool again."""
    if agent.structured_answer == "constrained":
        async for event in decision_turn(agent, run, answer_only=True):
            yield event
        return
    async for event in agent.call_model(run, messages=plain_history(run.messages), record=False,
                                        continue_on_length=True):
        yield event
    completion = run.completion
    assert completion is not None
    text = completion.content or ""
    run.messages.append(Message.assistant(text))
    run.decision = Decision(text)


def after_results(run: AgentRun, results: Sequence[ToolResult]) -> None:
    """Decide what the next turn is: an answer turn when every call of this one succeeded."""
    ANSWER_NEXT.set(run, bool(results) and all(r.ok for r in results))
