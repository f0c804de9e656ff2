"""Running a managed agent: the agent's own ``astream`` in an asyncio task, persisted at the end, and (for a
streamed message) its events written as SSE.

The run is a task of its own that feeds an :class:`asyncio.Queue`; the HTTP response only reads the queue.
So a client that goes away cancels the task (``finally`` of the response), and the task itself records
what happened: the partial answer and ``cancelled``. Tools never run on the event loop: the agent's
:class:`~jarvis_core.tools.ToolExecutor` runs sync tools in threads (or processes), and the service turns any
tool with ``inline`` isolation into a ``thread`` one (:func:`off_the_loop`).

SSE of a streamed message (``POST /v1/managed-agents/{id}/messages {"stream": true}``):

* ``data:`` ``chat.completion.chunk`` objects: a role chunk first, content (and ``reasoning_content``) deltas,
  then a final chunk with ``finish_reason`` and ``usage``;
* ``event: tool_calls`` ``{"calls": [{"tool_name", "arguments", "id"}]}`` before a turn's tools run;
* ``event: tool_result`` ``{"tool_name", "output", "tool_call_id", "ok", "truncated", "duration_ms"}`` after each
  (``tool_name``/``arguments``/``output`` are the documented managed-agents fields; the rest are ours, beside them);
* ``event: error`` ``{"error": {"message", "type", "code"}}`` when the run fails;
* ``data: [DONE]`` last. Comment lines (``: keep-alive``) may come while a tool runs.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, AsyncIterator, Dict, List, Optional, Sequence

import attrs

from jarvis_core.agents.events import RunFinished, TextDelta, ToolCallFinished, ToolCallsRequested, TurnFinished
from jarvis_core.errors import JarvisError
from jarvis_core.tools.policy import policy_of
from jarvis_core.types import AgentContext
from jarvis_server.chat_wire import DONE, ChunkWriter, sse, usage_object
from jarvis_server.managed.store import Store
from jarvis_server.openai_errors import RequestError, sse_error
from jarvis_server.withheld import agent_failure, log_withheld, withheld_message

__all__ = ["END", "RunTask", "events_as_sse", "off_the_loop", "run_error"]

log = logging.getLogger("jarvis_server")

#: Put on a run's queue after its last event.
END = object()
#: Seconds without an event after which a comment line is sent (keeps proxies open, notices a gone client).
KEEPALIVE = 1.0
#: Events of a streamed run not yet written past which the run waits: a client that stops reading pauses
#: the agent (and its engine read) instead of growing the queue.
QUEUE_EVENTS = 256


class _OffTheLoop:
    """A tool whose ``inline`` isolation is replaced by ``thread``; everything else is the tool's own."""

    def __init__(self, tool: Any) -> None:
        self._tool = tool
        self.policy = attrs.evolve(policy_of(tool), isolation="thread")

    def __getattr__(self, name: str) -> Any:
        return getattr(self._tool, name)


def off_the_loop(tool: Any) -> Any:
    """``tool``, made to run in a worker thread if its policy would run it inline (on the event loop)."""
    return _OffTheLoop(tool) if policy_of(tool).isolation == "inline" else tool


def run_error(exc: BaseException, doing: str, *, logged: bool = False) -> str:
    """The ``error`` stored on a failed run: a jarvis error's own message (engines mask keys in it), or for
    anything else its type only (its text may hold a secret), logged the same way unless ``logged`` says
    it is elsewhere (a stream's error is logged when its SSE event is written)."""
    if isinstance(exc, (JarvisError, RequestError)):
        return f"{type(exc).__name__}: {exc}"
    if not logged:
        log_withheld(exc, doing)
    return withheld_message(exc)


def _finish_reason(stop_reason: str) -> str:
    # "final" is a normal answer; any other stop (max_turns, loop_guard) means the run was cut short.
    return "stop" if stop_reason == "final" else "length"


class RunTask:
    """One run of one agent: drives ``agent.astream`` and records the outcome in the store.

    :param delivered: ids of the user messages this run answers; marked delivered in the same transaction
        that records its success, left pending otherwise.
    :param release: set the agent back to idle at the end (runs started by ``POST /run`` hold the agent).
    """

    def __init__(self, store: Store, agent: Any, *, agent_id: str, run_id: str, input: str,
                 context: AgentContext, delivered: Sequence[str], release: bool, stream: bool,
                 agent_type: str = "", registry: Any = None) -> None:
        #: The agent's registry key and the registry: an unexpected failure of its run names its plugin.
        self.agent_type, self.registry = agent_type, registry
        self.store = store
        self.agent = agent
        self.agent_id = agent_id
        self.run_id = run_id
        self.input = input
        self.context = context
        self.delivered = list(delivered)
        self.release = release
        self.queue: Optional[asyncio.Queue[Any]] = asyncio.Queue() if stream else None
        #: Room on the queue for events; the end of the run (its error, :data:`END`) never waits for room, so a
        #: run whose reader went away still finishes.
        self.room = asyncio.Semaphore(QUEUE_EVENTS)
        self.task: Optional[asyncio.Task[Any]] = None

    def start(self) -> RunTask:
        self.task = asyncio.get_running_loop().create_task(self._drive(), name=f"jarvis-run-{self.run_id}")
        return self

    async def _emit(self, item: Any) -> None:
        if self.queue is not None:
            await self.room.acquire()
            self.queue.put_nowait(item)

    def _end(self, item: Any) -> None:
        if self.queue is not None:
            self.queue.put_nowait(item)

    def taken(self, item: Any) -> None:
        """The reader took ``item`` off the queue: its room is free again."""
        if item is not END and not isinstance(item, BaseException):
            self.room.release()

    async def _drive(self) -> None:
        text: List[str] = []
        calls: Dict[str, Dict[str, Any]] = {}
        status, stop_reason, error, answer, usage = "failed", None, None, None, None
        try:
            async for event in self.agent.astream(self.input, self.context):
                if isinstance(event, TextDelta):
                    text.append(event.text)
                elif isinstance(event, TurnFinished):
                    usage = event.usage if usage is None else attrs.evolve(
                        usage, prompt_tokens=usage.prompt_tokens + event.usage.prompt_tokens,
                        completion_tokens=usage.completion_tokens + event.usage.completion_tokens,
                        total_tokens=usage.total_tokens + event.usage.total_tokens)
                elif isinstance(event, ToolCallsRequested):
                    for c in event.calls:
                        calls[c.id] = {"id": c.id, "name": c.name, "arguments": c.arguments}
                elif isinstance(event, ToolCallFinished):
                    r = event.result
                    calls.setdefault(r.tool_call_id, {"id": r.tool_call_id, "name": r.name}).update(
                        ok=r.ok, content=r.content, truncated=r.truncated, duration_ms=round(r.duration_s * 1000, 1))
                elif isinstance(event, RunFinished):
                    status, stop_reason, answer = "succeeded", event.result.stop_reason, event.result.content
                    usage = event.result.usage
                await self._emit(event)
        except asyncio.CancelledError:
            status, error = "cancelled", "the client went away (or the server stopped) during the run"
        except Exception as exc:
            failure = agent_failure(self.agent_type, exc, self.registry)
            status, error = "failed", run_error(failure, f"run {self.run_id}", logged=self.queue is not None)
            self._end(failure)
        finally:
            if answer is None:
                answer = "".join(text)
            try:
                await self.store.call(
                    self.store.finish_run, self.run_id, self.agent_id, status=status, answer=answer,
                    tool_calls=list(calls.values()) or None, delivered=self.delivered, stop_reason=stop_reason,
                    error=error, usage=usage_object(usage) if usage is not None else None, release=self.release)
            except Exception as exc:
                log_withheld(exc, f"recording the end of run {self.run_id}")
            self._end(END)

    def cancel(self) -> None:
        """Cancel the run (it records itself as ``cancelled``)."""
        if self.task is not None and not self.task.done():
            self.task.cancel()


async def events_as_sse(run: RunTask, model: str) -> AsyncIterator[bytes]:
    """The SSE bytes of a streamed run; cancels the run if the response ends early (client gone)."""
    assert run.queue is not None
    writer = ChunkWriter(model)
    try:
        yield writer.role()
        while True:
            if run.queue.empty():  # wait_for runs the wait as a task of its own: only when there is a wait
                try:
                    item = await asyncio.wait_for(run.queue.get(), KEEPALIVE)
                except asyncio.TimeoutError:
                    yield b": keep-alive\n\n"
                    continue
            else:
                item = run.queue.get_nowait()
            items = [item]
            while not run.queue.empty():  # coalesce what piled up into one write
                items.append(run.queue.get_nowait())
            for taken in items:
                run.taken(taken)
            out = b"".join(_event_bytes(i, writer) for i in items if i is not END)
            if out:
                yield out
            if END in items:
                break
        yield DONE
    finally:
        run.cancel()


def _event_bytes(item: Any, writer: ChunkWriter) -> bytes:
    if isinstance(item, BaseException):
        return sse_error(item)
    if isinstance(item, TextDelta):
        return writer.content(item.text) if item.text else b""
    if isinstance(item, ToolCallsRequested):
        return sse({"calls": [{"tool_name": c.name, "arguments": c.arguments, "id": c.id} for c in item.calls]},
                   "tool_calls")
    if isinstance(item, ToolCallFinished):
        r = item.result
        return sse({"tool_name": r.name, "output": r.content, "tool_call_id": r.tool_call_id, "ok": r.ok,
                    "truncated": r.truncated, "duration_ms": round(r.duration_s * 1000, 1)}, "tool_result")
    if isinstance(item, RunFinished):
        return writer.finish(_finish_reason(item.result.stop_reason), usage=item.result.usage)
    return b""  # RunStarted, TurnFinished, ReasoningDelta, Notice: not part of the wire format
