"""The one :class:`ToolExecutor`: every tool call of every agent goes through it.

Its guarantees, in pipeline order (each failing step ends in a ``ToolResult(ok=False)`` whose text the
model can act on; nothing raises out of :meth:`ToolExecutor.execute` for a tool or model error):

1. ``TOOL_CALL_START`` is published for every call, and ``TOOL_CALL_END`` for every call, failures included.
2. Unknown tool name: the result lists the valid names.
3. The arguments are decoded and validated against the tool's JSON schema before the tool runs.
4. A tool whose policy says ``confirm`` runs only when the approver says yes; no approver means no
   (fails closed), and an approver that raises means no.
5. The tool runs under its policy's isolation and timeout (see :mod:`jarvis_core.tools.isolation`).
6. The output is capped at ``policy.max_output_chars`` with a visible marker (``truncated=True``).
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import logging
import threading
import time
from typing import Any, Awaitable, Callable, Dict, Iterable, List, Optional, Sequence, Tuple, Union

from jarvis_core.events import EventBus, EventType
from jarvis_core.tools.base import InvalidToolError, check_tool
from jarvis_core.tools.isolation import Outcome, Workers, arun_tool, run_tool
from jarvis_core.tools.output import cap_output
from jarvis_core.tools.policy import ToolPolicy, policy_of
from jarvis_core.tools.schema import check_arguments
from jarvis_core.types import ToolCall, ToolResult, ToolSpec

__all__ = ["Approver", "ToolExecutor"]

log = logging.getLogger(__name__)

#: Decides whether a call of a tool that needs confirmation may run: ``(call, tool) -> bool``, sync or async.
Approver = Callable[[ToolCall, Any], Union[bool, Awaitable[bool]]]


#: The policy of a call whose tool is unknown (built once: an attrs init with validators on every call adds up).
_NO_POLICY = ToolPolicy()


class _Prepared:
    __slots__ = ("abandoned", "arguments", "call", "early", "policy", "started", "thread_done", "tool")

    def __init__(self, call: ToolCall, started: float) -> None:
        self.call = call
        self.started = started
        self.tool: Any = None
        self.policy: ToolPolicy = _NO_POLICY
        self.arguments: Dict[str, Any] = {}
        self.early: Optional[Tuple[str, str]] = None  # (outcome, message) when the call must not run
        self.abandoned = False
        self.thread_done = False


class _Shared:
    __slots__ = ("abandoned", "lock", "workers")

    def __init__(self) -> None:
        self.abandoned = 0
        self.lock = threading.Lock()
        self.workers = Workers()


class ToolExecutor:
    """Runs tool calls with validation, approval, isolation, timeouts, an output cap and events.

    :param tools: the tools (objects honouring :class:`~jarvis_core.tools.Tool`); names must be unique.
    :param approver: ``(call, tool) -> bool`` (or an async one) for tools whose policy needs confirmation.
    :param bus: where ``TOOL_CALL_START``/``TOOL_CALL_END`` go (none: no events).
    :param run_id: put into every event, so subscribers can tell runs apart.
    :param max_abandoned_threads: timed-out ``thread`` calls still running before new ``thread`` calls are
        refused (with a message saying so) instead of piling up threads.
    :raises InvalidToolError: a tool breaks the contract, or two tools share a name.
    """

    def __init__(
        self,
        tools: Iterable[Any] = (),
        *,
        approver: Optional[Approver] = None,
        bus: Optional[EventBus] = None,
        run_id: str = "",
        max_abandoned_threads: int = 32,
    ) -> None:
        self._tools: Dict[str, Any] = {}
        for tool in tools:
            check_tool(tool)
            name = tool.spec.name
            if name in self._tools:
                raise InvalidToolError(f"two tools are named {name!r}; tool names must be unique")
            self._tools[name] = tool
        self.approver = approver
        self.bus = bus
        self.run_id = run_id
        self.max_abandoned_threads = max_abandoned_threads
        # Shared with every with_run() copy: one thread set and one count of abandoned calls per executor.
        self._shared = _Shared()
        self._lock = self._shared.lock
        self._workers = self._shared.workers

    # -- introspection ------------------------------------------------------------------------------
    @property
    def names(self) -> Tuple[str, ...]:
        """The tool names, in the order given."""
        return tuple(self._tools)

    def specs(self) -> Tuple[ToolSpec, ...]:
        """The tools' specs (what the model is shown), in the order given."""
        return tuple(t.spec for t in self._tools.values())

    def get(self, name: str) -> Optional[Any]:
        """The tool of that name, or ``None``."""
        return self._tools.get(name)

    @property
    def abandoned_threads(self) -> int:
        """Timed-out ``thread`` calls whose threads are still running."""
        with self._lock:
            return self._shared.abandoned

    def with_run(self, run_id: str, *, bus: Optional[EventBus] = None) -> ToolExecutor:
        """A copy for one run (its own ``run_id``), sharing the tools, the approver and the thread count."""
        other = ToolExecutor.__new__(ToolExecutor)
        other.__dict__.update(self.__dict__)
        other.run_id = run_id
        if bus is not None:
            other.bus = bus
        return other

    # -- execution ----------------------------------------------------------------------------------
    def execute(self, call: ToolCall) -> ToolResult:
        """Run one call and return its result. Never raises for tool or model errors."""
        prep = self._prepare(call)
        answer: Any = True
        if prep.early is None and prep.policy.confirm:
            answer = self._ask_approver(prep)
            if inspect.isawaitable(answer):
                answer = _run_coroutine(answer, prep)
        stopped = self._gate(prep, answer)
        if stopped is not None:
            return stopped
        outcome = run_tool(prep.tool, prep.arguments, isolation=prep.policy.isolation, timeout=prep.policy.timeout,
                           workers=self._workers, on_thread_done=lambda: self._thread_done(prep))
        return self._finish(prep, outcome)

    async def aexecute(self, call: ToolCall) -> ToolResult:
        """Async twin of :meth:`execute`: sync tools run on worker threads, never on the event loop."""
        prep = self._prepare(call)
        answer: Any = True
        if prep.early is None and prep.policy.confirm:
            answer = self._ask_approver(prep)
            if inspect.isawaitable(answer):
                try:
                    answer = await answer
                except Exception as exc:
                    answer = exc
        stopped = self._gate(prep, answer)
        if stopped is not None:
            return stopped
        try:
            outcome = await arun_tool(prep.tool, prep.arguments, isolation=prep.policy.isolation,
                                      timeout=prep.policy.timeout, workers=self._workers,
                                      on_thread_done=lambda: self._thread_done(prep))
        except asyncio.CancelledError:
            self._finish(prep, Outcome("error", "cancelled", "CancelledError"), "cancelled")
            raise
        return self._finish(prep, outcome)

    def execute_many(self, calls: Sequence[ToolCall], *, parallel: bool = True) -> List[ToolResult]:
        """Run several calls; the results are in the order of ``calls``. ``parallel`` runs them at once
        (one thread per call), else one after another."""
        if not parallel or len(calls) < 2:
            return [self.execute(c) for c in calls]
        results: List[Optional[ToolResult]] = [None] * len(calls)

        def one(i: int) -> None:
            results[i] = self.execute(calls[i])

        # Each thread in a copy of the caller's context, as asyncio's tasks are (an OpenTelemetry span current
        # here stays the parent of the calls' spans).
        threads = [threading.Thread(target=contextvars.copy_context().run, args=(one, i), daemon=True)
                   for i in range(len(calls))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return [r for r in results if r is not None]

    async def aexecute_many(self, calls: Sequence[ToolCall], *, parallel: bool = True) -> List[ToolResult]:
        """Async twin of :meth:`execute_many` (``asyncio.gather`` keeps the order)."""
        if not parallel or len(calls) < 2:
            return [await self.aexecute(c) for c in calls]
        return list(await asyncio.gather(*(self.aexecute(c) for c in calls)))

    def reject(self, call: ToolCall, message: str, *, outcome: str = "rejected") -> ToolResult:
        """A failed result for a call the caller decided not to run (loop guard, per-turn limit), with the
        same events as any other call. ``message`` is what the model reads."""
        prep = _Prepared(call, time.monotonic())
        self._publish(EventType.TOOL_CALL_START, tool_call_id=call.id, name=call.name)
        tool = self._tools.get(call.name)
        if tool is not None:
            prep.policy = policy_of(tool)
        return self._finish(prep, Outcome("error", message, ""), outcome)

    # -- steps --------------------------------------------------------------------------------------
    def _publish(self, event_type: EventType, **data: Any) -> None:
        if self.bus is not None:
            self.bus.publish(event_type, run_id=self.run_id, **data)

    def _prepare(self, call: ToolCall) -> _Prepared:
        prep = _Prepared(call, time.monotonic())
        self._publish(EventType.TOOL_CALL_START, tool_call_id=call.id, name=call.name)
        tool = self._tools.get(call.name)
        if tool is None:
            names = ", ".join(self._tools) or "none"
            prep.early = ("unknown_tool", f"unknown tool {call.name!r}; available: {names}")
            return prep
        prep.tool = tool
        prep.policy = policy_of(tool)
        args, problem = check_arguments(tool.spec.parameters, call.arguments)
        if args is None:
            prep.early = ("invalid_arguments", f"invalid arguments for {call.name!r}: {problem}")
            return prep
        prep.arguments = args
        return prep

    def _ask_approver(self, prep: _Prepared) -> Any:
        """The approver's answer (maybe an awaitable), ``None`` when there is no approver, or the exception
        it raised."""
        if self.approver is None:
            return None
        try:
            return self.approver(prep.call, prep.tool)
        except Exception as exc:
            return exc

    def _gate(self, prep: _Prepared, answer: Any) -> Optional[ToolResult]:
        """The final result when the call must not run (an earlier problem, no approval, saturation)."""
        name = prep.call.name
        if prep.early is None and answer is not True:
            if answer is None:
                why = f"denied: {name!r} needs confirmation and no approver is configured"
            elif isinstance(answer, BaseException):
                log.warning("the approver failed on %s (%s); the call is denied", name, type(answer).__name__)
                why = f"denied: the approval of {name!r} failed ({type(answer).__name__})"
            else:
                why = f"denied: {name!r} was not approved"
            prep.early = ("denied", why)
        if prep.early is not None:
            return self._finish(prep, Outcome("error", prep.early[1], ""), prep.early[0])
        return self._refuse_if_saturated(prep)

    def _refuse_if_saturated(self, prep: _Prepared) -> Optional[ToolResult]:
        if prep.policy.isolation != "thread":
            return None
        with self._lock:
            stuck = self._shared.abandoned
        if stuck < self.max_abandoned_threads:
            return None
        text = (f"{prep.call.name!r} was not run: {stuck} earlier timed-out calls are still running "
                f"(limit {self.max_abandoned_threads})")
        return self._finish(prep, Outcome("error", text, ""), "saturated")

    def _thread_done(self, prep: _Prepared) -> None:
        with self._lock:
            prep.thread_done = True
            if prep.abandoned:
                self._shared.abandoned -= 1

    def _finish(self, prep: _Prepared, outcome: Outcome, kind: Optional[str] = None) -> ToolResult:
        call = prep.call
        if outcome.abandoned:
            self._count_abandoned(prep)
        if outcome.status == "ok":
            content, truncated = cap_output(outcome.text, prep.policy.max_output_chars)
            label = kind or "ok"
        else:
            label = kind or outcome.status
            prefix = f"{outcome.error_type}: " if outcome.error_type else ""
            if outcome.status == "timeout":
                text = f"error: {call.name!r} {outcome.text}"
            else:
                text = f"error: {prefix}{outcome.text}"
            content, truncated = cap_output(text, prep.policy.max_output_chars)
        duration = time.monotonic() - prep.started
        result = ToolResult(call.id, call.name, content, ok=outcome.status == "ok", truncated=truncated,
                            duration_s=duration)
        self._publish(EventType.TOOL_CALL_END, tool_call_id=call.id, name=call.name, ok=result.ok, outcome=label,
                      duration_s=duration, truncated=truncated, output_chars=len(outcome.text))
        return result

    def _count_abandoned(self, prep: _Prepared) -> None:
        with self._lock:
            if prep.thread_done:
                return
            prep.abandoned = True
            self._shared.abandoned += 1
            count = self._shared.abandoned
        log.warning("tool %r timed out; its thread keeps running (%d abandoned)", prep.call.name, count)

    def __repr__(self) -> str:
        return f"<ToolExecutor tools={list(self._tools)} run_id={self.run_id!r}>"


def _run_coroutine(awaitable: Awaitable[Any], prep: _Prepared) -> Any:
    """Await an async approver's answer from sync code, even when this thread already runs a loop; an
    exception it raises is returned (and means no)."""
    async def wrap() -> Any:
        try:
            return await awaitable
        except Exception as exc:
            return exc

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(wrap())
    box: list[Any] = []
    thread = threading.Thread(target=lambda: box.append(asyncio.run(wrap())), name=f"approve-{prep.call.name}",
                              daemon=True)
    thread.start()
    thread.join()
    return box[0] if box else RuntimeError("the approver gave no answer")
