"""Asking through a prompt provider without an agent (what ``Jarvis.ask(prompt_provider=…)`` does).

The tools are not run: the reply's tool calls are the answer. Two provider flags still take extra model
calls, because the caller has to answer them:

- ``lazy_tool_loading``: while the model's calls are all ``get_tools``, the session answers them and the
  model is asked again (at most :data:`MAX_TOOL_FETCHES` times), so the calls that come back are real ones.
  A reply that calls real tools beside ``get_tools`` is the answer (its ``get_tools`` calls are dropped).
- ``force_tool_calls``: a first reply without a tool call is asked again once with the corrective turn
  :data:`~jarvis_core.prompts.session.TOOL_CALL_REQUIRED`; whatever the second reply is, it is the answer.
"""

from __future__ import annotations

from typing import Any, List, Optional, Tuple

import attrs

from jarvis_core.agents.run import add_usage
from jarvis_core.prompts.session import PromptReply, PromptSession
from jarvis_core.types import Message, Usage

__all__ = ["MAX_TOOL_FETCHES", "DirectAnswer", "ask_direct"]

#: How many rounds of ``get_tools`` calls are answered before the model is taken to be stuck.
MAX_TOOL_FETCHES = 2


@attrs.frozen
class DirectAnswer:
    """The reply as the provider read it, the usage of every model call, how many calls were made, the
    tools the model fetched with ``get_tools`` and whether the forced-tool-call retry was used."""

    read: PromptReply
    usage: Usage
    model_calls: int
    tools_loaded: Tuple[str, ...] = ()
    retried_for_tool_call: bool = False


def ask_direct(session: PromptSession, engine: Any, prompt: Any, **generate: Any) -> DirectAnswer:
    """Ask ``engine`` once (or a few times, see the module doc) with the session's messages and request
    shape; ``generate`` are keyword arguments for ``engine.generate`` (model, temperature, max_tokens, …)."""
    messages: List[Message] = session.messages(prompt)
    usage = Usage()
    loaded: List[str] = []
    calls_made = fetches = 0
    retried = False
    while True:
        completion = engine.generate(messages, **generate, **session.request_options(engine, loaded=loaded))
        calls_made += 1
        usage = add_usage(usage, completion.usage)
        read = session.read(completion)
        calls = read.completion.tool_calls
        fetch = [c for c in calls if session.is_get_tools(c)]
        if fetch and len(fetch) == len(calls) and fetches < MAX_TOOL_FETCHES:
            fetches += 1
            messages.append(Message.assistant(read.reply.message or None, calls))
            for call in fetch:
                result, names = session.answer_get_tools(call)
                loaded.extend(n for n in names if n not in loaded)
                messages.append(result.to_message())
            continue
        if fetch:
            stuck = len(fetch) == len(calls)
            read = _without_get_tools(session, read, "the model kept asking for tool definitions without calling "
                                                    "a tool" if stuck else None)
        elif not retried and fetches == 0 and session.needs_tool_call(calls):
            retried = True
            messages.extend([Message.assistant(read.reply.message or ""), session.tool_call_required()])
            continue
        return DirectAnswer(read, usage, calls_made, tuple(loaded), retried)


def _without_get_tools(session: PromptSession, read: PromptReply, error: Optional[str]) -> PromptReply:
    """``read`` with its ``get_tools`` calls removed (and ``error`` set when given)."""
    calls = tuple(c for c in read.completion.tool_calls if not session.is_get_tools(c))
    kept = {c.name for c in calls}
    reply = attrs.evolve(read.reply, tool_calls=[c for c in read.reply.tool_calls if c.name in kept],
                         error=error or read.reply.error)
    completion = attrs.evolve(read.completion, tool_calls=calls, finish_reason="tool_calls" if calls else "stop")
    return attrs.evolve(read, reply=reply, completion=completion)
