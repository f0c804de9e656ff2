"""The worker's tools are jarvis tools: the core's contract (:class:`~jarvis_core.tools.Tool`) and executor.

A worker takes any tools honouring the contract: registered ones built with
:func:`jarvis_core.tools.create_tool`, :class:`~jarvis_core.tools.BaseTool` subclasses, or plain functions
wrapped by :func:`jarvis_core.tools.function_tool`. Every call runs through one
:class:`~jarvis_core.tools.ToolExecutor` (argument validation against the schema, approval for tools whose
policy says ``confirm``, isolation and timeout, the output cap, ``TOOL_CALL_START``/``TOOL_CALL_END`` events
on the worker's bus with the request id as ``run_id``). The worker adds what is its own: the tool-turn budget, the calls-per-turn cap, the
control tools (:mod:`.signals`, which never reach the executor), and :class:`~.config.ToolLimits` as caps
on every tool's policy: a tool may be stricter than ``per_tool_timeout`` and ``output_cap``, never looser.
"""

from __future__ import annotations

import asyncio
from typing import Any, Dict, Iterable, List, Mapping, Sequence, Tuple

import attrs

from jarvis_core.events import EventBus, EventType
from jarvis_core.tools import ToolExecutor, ToolPolicy, policy_of
from jarvis_core.tools.base import has_async_run, has_sync_run
from jarvis_core.types import ToolCall, ToolResult, ToolSpec

from .config import ToolLimits
from .record import RequestRecord
from .signals import DECISION_REQUEST, acknowledgement, is_control_tool, signal_from_call
from .state import RequestState, ToolTraceEntry

__all__ = ["TraceBus", "capped", "run_calls"]

#: The executor's outcome labels as the trace names them (anything else is an ``error``).
_OUTCOMES = {"ok": "ok", "timeout": "timeout", "cancelled": "canceled", "denied": "denied", "skipped": "skipped"}


class _Capped:
    """A tool under a stricter policy than its own; everything else is the tool's."""

    def __init__(self, tool: Any, policy: ToolPolicy) -> None:
        self.spec = tool.spec
        self.policy = policy
        self.tool = tool
        if has_sync_run(tool):
            self.run = tool.run
        if has_async_run(tool):
            self.arun = tool.arun

    def __repr__(self) -> str:
        return f"<{self.tool!r} capped: {self.policy}>"


def capped(tools: Iterable[Any], limits: ToolLimits) -> List[Any]:
    """``tools`` with every policy held to ``limits``: a timeout of at most ``per_tool_timeout`` seconds, an
    output of at most ``output_cap`` characters. Tools already within them are returned as they are."""
    out = []
    for tool in tools:
        policy = policy_of(tool)
        timeout = limits.per_tool_timeout if policy.timeout is None else min(policy.timeout, limits.per_tool_timeout)
        cap = min(policy.max_output_chars, limits.output_cap)
        if (timeout, cap) == (policy.timeout, policy.max_output_chars):
            out.append(tool)
        else:
            out.append(_Capped(tool, attrs.evolve(policy, timeout=timeout, max_output_chars=cap)))
    return out


class TraceBus(EventBus):
    """The bus a request's executor publishes to: every event goes on to the worker's bus, and what
    ``TOOL_CALL_END`` says about each call (outcome, output size before the cap) is kept for the trace."""

    def __init__(self, bus: EventBus) -> None:
        super().__init__()
        self._bus = bus
        self.ends: Dict[str, Mapping[str, Any]] = {}

    def publish(self, event_type: EventType, **data: Any) -> Any:
        if event_type is EventType.TOOL_CALL_END:
            self.ends[str(data.get("tool_call_id"))] = data
        return self._bus.publish(event_type, **data)


async def run_calls(executor: ToolExecutor, rec: RequestRecord, calls: Sequence[ToolCall],
                    offered: Mapping[str, ToolSpec], limits: ToolLimits, *,
                    stop_on_decision: bool) -> Tuple[List[ToolResult], bool]:
    """Run one turn's calls in order; returns ``(results, stop)``, ``stop`` meaning a decision request
    ends the run. ``executor`` publishes to a :class:`TraceBus`; the request is ``TOOL_RUNNING`` meanwhile."""
    results: List[ToolResult] = []
    rec.set_state(RequestState.TOOL_RUNNING)
    try:
        for index, call in enumerate(calls):
            if rec.final:
                break
            entry, result = await _run_one(executor, rec, call, index, offered, limits)
            with rec.lock:
                rec.tool_trace.append(entry)
            if entry.outcome == "signal" and call.name == DECISION_REQUEST and stop_on_decision:
                with rec.lock:
                    for later in calls[index + 1:]:
                        rec.tool_trace.append(ToolTraceEntry(rec.iteration, later.id, later.name, later.arguments,
                                                             "skipped", detail="after a decision request"))
                return results, True
            results.append(result)
    finally:
        rec.set_state(RequestState.RUNNING)
    return results, False


async def _run_one(executor: ToolExecutor, rec: RequestRecord, call: ToolCall, index: int,
                   offered: Mapping[str, ToolSpec], limits: ToolLimits) -> Tuple[ToolTraceEntry, ToolResult]:
    if is_control_tool(call.name) and call.name in offered:
        signal = signal_from_call(call, rec.iteration)
        with rec.lock:
            rec.signals.append(signal)
        return ToolTraceEntry(rec.iteration, call.id, call.name, call.arguments, "signal"), \
            ToolResult(call.id, call.name, acknowledgement(call))
    if index >= limits.max_calls_per_turn:
        result = executor.reject(call, f"error: not run; at most {limits.max_calls_per_turn} tool calls run per turn",
                                 outcome="skipped")
    elif call.name not in offered:  # the executor may hold more tools than this request offered
        names = ", ".join(n for n in offered if not is_control_tool(n)) or "none"
        result = executor.reject(call, f"error: unknown tool {call.name!r}; available: {names}",
                                 outcome="unknown_tool")
    else:
        result = await _execute(executor, call, rec)
    end = executor.bus.ends.get(call.id, {}) if isinstance(executor.bus, TraceBus) else {}
    outcome = _OUTCOMES.get(str(end.get("outcome")), "error")
    entry = ToolTraceEntry(rec.iteration, call.id, call.name, call.arguments, outcome, duration_s=result.duration_s,
                           output_chars=int(end.get("output_chars") or 0), truncated=result.truncated,
                           detail="" if result.ok else result.content[:300])
    return entry, result


async def _execute(executor: ToolExecutor, call: ToolCall, rec: RequestRecord) -> ToolResult:
    """``executor.aexecute(call)``, abandoned at once when the request ends meanwhile (a cancel)."""
    task = asyncio.ensure_future(executor.aexecute(call))
    while not task.done():
        await asyncio.wait({task}, timeout=0.1)
        if rec.done.is_set() and not task.done():
            task.cancel()
            try:
                await task
            except asyncio.CancelledError:
                pass
            return ToolResult(call.id, call.name, "error: the request was canceled", ok=False)
    return task.result()
