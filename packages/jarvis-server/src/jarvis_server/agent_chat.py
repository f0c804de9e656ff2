"""Chat completions answered by a registered agent (``"agent": "<key>"`` in the request, or ``jarvis serve
--agent KEY``), streamed or not.

A request that names no model runs the agent's configured one (``[agents.<key>] model``; an alias brings its
options, under the request's own), else the server's. The last message must be the user's: it is the agent's
input; the messages before it are its context. The
request's sampling fields reach the agent (``temperature``, ``max_tokens``, engine options such as ``stop``,
checked against the engine's allow-list by the agent). ``tools`` cannot be combined with an agent (the agent
has its own). A stream carries the agent's text as it is generated; its first event is awaited before the
response starts, so a failure there is an ordinary HTTP error.

The stream is not filtered down to the final answer: a turn is known to end in tool calls only at its end
(``TurnFinished`` then ``ToolCallsRequested``), so dropping tool turns' text would mean buffering every
turn, the answer included, until it ends. Text-protocol agents already emit only their answer's text.
"""

from __future__ import annotations

import asyncio
from typing import Any, AsyncIterator, Dict, List

import anyio.to_thread
import attrs
from starlette.responses import Response

from jarvis_core.aliases import apply_alias_options
from jarvis_core.errors import UnknownNameError
from jarvis_core.events import default_bus
from jarvis_core.types import AgentContext, Completion, Role
from jarvis_server.agent_model import agent_model
from jarvis_server.chat_request import ChatRequest
from jarvis_server.chat_wire import ChunkWriter, completion_object
from jarvis_server.event_stream import EventStreamResponse
from jarvis_server.openai_errors import RequestError, sse_error
from jarvis_server.responses import SSE_HEADERS, error_response, json_response
from jarvis_server.state import ServerState
from jarvis_server.withheld import agent_failure

__all__ = ["agent_completion"]


def _build(state: ServerState, req: ChatRequest, key: str) -> Any:
    from jarvis_core.agents.factory import create_agent

    settings: Dict[str, Any] = {k: v for k, v in (("temperature", req.temperature), ("max_tokens", req.max_tokens))
                                if v is not None}
    try:
        # On the default bus, which /metrics and the OpenTelemetry spans follow: runs and tool calls are counted.
        return create_agent(key, state.engine, model=req.model, config=state.config, bus=default_bus(), **settings,
                            **req.options)
    except UnknownNameError as exc:
        raise RequestError(str(exc), param="agent", code="unknown_agent") from None


def _configured(state: ServerState, req: ChatRequest, key: str) -> ChatRequest:
    """``req`` with the agent's configured model when the request named none."""
    if not req.default_model:
        return req
    model, alias = agent_model(state.config, state.engine_key, key)
    if model is None:
        return req
    temperature, max_tokens, options = apply_alias_options(alias, req.temperature, req.max_tokens, req.options)
    return attrs.evolve(req, model=model, temperature=temperature, max_tokens=max_tokens, options=options)


def _finish(stop_reason: str) -> str:
    return "stop" if stop_reason == "final" else "length"


async def agent_completion(state: ServerState, req: ChatRequest, key: str) -> Response:
    """Answer ``req`` through the agent ``key``."""
    from jarvis_core.agents.events import RunFinished, TextDelta

    try:
        if req.tools:
            raise RequestError("tools cannot be sent with an agent: the agent uses its own", param="tools")
        if key != state.agent and not state.settings.allows("agent_types", key):
            raise RequestError(f"agent {key!r} is not enabled on this server (its [server] agent_types lists the "
                               "agents API clients may name)", status=403, param="agent", code="agent_not_allowed")
        req = _configured(state, req, key)
        last = req.messages[-1]
        if last.role is not Role.USER or not last.content:
            raise RequestError("with an agent, the last message must be the user's question",
                               param=f"messages[{len(req.messages) - 1}]")
        agent = await anyio.to_thread.run_sync(_build, state, req, key)
        context = AgentContext(messages=req.messages[:-1])
        if not req.stream:
            try:
                result = await agent.arun(last.content, context)
            except Exception as exc:
                raise agent_failure(key, exc) from exc
            completion = Completion(content=result.content, usage=result.usage, model=req.model,
                                    finish_reason=_finish(result.stop_reason))
            return json_response(completion_object(completion, model=req.model))
        events = agent.astream(last.content, context).__aiter__()
        head: List[Any] = []
        while True:  # until the first text (or the end): errors before it are HTTP errors
            try:
                event = await events.__anext__()
            except StopAsyncIteration:
                break
            except Exception as exc:
                raise agent_failure(key, exc) from exc
            head.append(event)
            if isinstance(event, (TextDelta, RunFinished)):
                break
    except Exception as exc:
        return error_response(exc)
    writer = ChunkWriter(req.model, include_usage=req.include_usage)
    return EventStreamResponse(_sse(head, events, writer, key), headers=SSE_HEADERS)


async def _sse(head: List[Any], events: AsyncIterator[Any], writer: ChunkWriter, key: str) -> AsyncIterator[bytes]:
    from jarvis_core.agents.events import RunFinished, TextDelta

    async def all_events() -> AsyncIterator[Any]:
        for event in head:
            yield event
        async for event in events:
            yield event

    yield writer.role()
    try:
        async for event in all_events():
            if isinstance(event, TextDelta) and event.text:
                yield writer.content(event.text)
            elif isinstance(event, RunFinished):
                yield writer.final(_finish(event.result.stop_reason), event.result.usage)
    except asyncio.CancelledError:
        raise
    except Exception as exc:
        yield sse_error(agent_failure(key, exc))
    finally:
        await events.aclose()  # type: ignore[attr-defined]
