"""Running operators' ticks on their schedules: :class:`TaskScheduler`.

- Each operator has one loop, so its ticks never overlap: a tick that outlasts the interval delays the
  next one (missed ticks are not queued up). :meth:`TaskScheduler.tick_now` waits for a running tick too.
- A tick that raises, or ends with ``stop_reason="error"``, is recorded as failed (a warning is logged) and
  the schedule goes on.
- Each tick is a :class:`~.records.TickRecord`, kept in memory (:meth:`TaskScheduler.records`) and, when the
  agent has a ``state`` store (an operative does), saved in it (:func:`~.records.save_tick`).
- :meth:`TaskScheduler.stop` (from any thread) ends :meth:`TaskScheduler.run` once running ticks end.

::

    scheduler = TaskScheduler()
    scheduler.add("daily", agent, "Check the feed and note anything new.", every=3600)
    asyncio.run(scheduler.run())
"""

from __future__ import annotations

import asyncio
import collections
import inspect
import logging
import threading
import time
from typing import Any, Callable, Deque, Dict, List, Optional

from jarvis_agents.operators.records import TickRecord, save_tick
from jarvis_agents.operators.schedule import Schedule
from jarvis_core.agents import RunFinished
from jarvis_core.errors import ConfigError

__all__ = ["TaskScheduler", "TickRecord"]

log = logging.getLogger("jarvis_agents.operators")


class _Operator:
    def __init__(self, operator_id: str, agent: Any, instruction: str, schedule: Schedule, max_ticks: Optional[int],
                 run_at_start: bool, on_event: Optional[Callable[[Any], Any]], keep: int) -> None:
        self.operator_id = operator_id
        self.agent = agent
        self.instruction = instruction
        self.schedule = schedule
        self.max_ticks = max_ticks
        self.run_at_start = run_at_start
        self.on_event = on_event
        self.ticks = 0
        self.records: Deque[TickRecord] = collections.deque(maxlen=keep)
        self.lock: Optional[asyncio.Lock] = None


class TaskScheduler:
    """Runs operators' ticks.

    :param on_tick: called with each :class:`TickRecord` (sync or async); an exception it raises is logged.
    :param keep: how many records per operator :meth:`records` keeps.
    """

    def __init__(self, *, on_tick: Optional[Callable[[TickRecord], Any]] = None, keep: int = 100) -> None:
        self.on_tick = on_tick
        self.keep = keep
        self._operators: Dict[str, _Operator] = {}
        self._loop: Optional[asyncio.AbstractEventLoop] = None
        self._stop_event: Optional[asyncio.Event] = None
        self._stopping = False
        self._tasks: List[asyncio.Task[None]] = []
        self._guard = threading.Lock()

    def add(self, operator_id: str, agent: Any, instruction: str, *, every: Optional[float] = None,
            cron: Optional[str] = None, max_ticks: Optional[int] = None, run_at_start: Optional[bool] = None,
            on_event: Optional[Callable[[Any], Any]] = None) -> Schedule:
        """Schedule ``agent.astream(instruction)`` for ``operator_id`` every ``every`` seconds or on the cron
        expression ``cron`` (neither: only :meth:`tick_now` runs it).

        :param max_ticks: stop scheduling this operator after that many ticks (:meth:`tick_now` ticks count).
        :param run_at_start: tick as soon as the scheduler runs (default: yes for an interval, no for cron).
        :param on_event: receives every agent event of every tick (e.g. to show tool calls).
        :raises ConfigError: a bad schedule (a cron expression without croniter names the extra to install),
            or an operator id added twice.
        """
        schedule = Schedule(every=every, cron=cron)
        if max_ticks is not None and max_ticks < 1:
            raise ConfigError(f"max_ticks must be at least 1, got {max_ticks!r}", key="max_ticks")
        with self._guard:
            if operator_id in self._operators:
                raise ConfigError(f"operator {operator_id!r} is already scheduled; remove it first")
            op = _Operator(operator_id, agent, instruction, schedule, max_ticks,
                           schedule.every is not None if run_at_start is None else run_at_start, on_event, self.keep)
            self._operators[operator_id] = op
        if self._loop is not None and not schedule.manual:
            self._loop.call_soon_threadsafe(self._start, op)
        return schedule

    def remove(self, operator_id: str) -> None:
        """Stop scheduling ``operator_id`` (a running tick finishes)."""
        with self._guard:
            self._operators.pop(operator_id, None)

    def records(self, operator_id: str) -> List[TickRecord]:
        """The operator's recent ticks, oldest first."""
        op = self._operators.get(operator_id)
        return list(op.records) if op else []

    # -- running ------------------------------------------------------------------------------------
    async def run(self) -> None:
        """Tick every scheduled operator until :meth:`stop` (or until each reached its ``max_ticks``)."""
        self._loop = asyncio.get_running_loop()
        self._stop_event = asyncio.Event()
        if self._stopping:
            self._stop_event.set()
        try:
            for op in list(self._operators.values()):
                if not op.schedule.manual:
                    self._start(op)
            while self._tasks:
                done = self._tasks[0]
                await done
                self._tasks.remove(done)
        finally:
            for task in self._tasks:
                task.cancel()
            self._tasks = []
            self._loop = None

    def stop(self) -> None:
        """No new ticks; :meth:`run` returns when the running ones end. Safe from any thread."""
        self._stopping = True
        loop, event = self._loop, self._stop_event
        if loop is not None and event is not None:
            loop.call_soon_threadsafe(event.set)

    def _start(self, op: _Operator) -> None:
        self._tasks.append(asyncio.ensure_future(self._drive(op)))

    async def _drive(self, op: _Operator) -> None:
        assert self._stop_event is not None
        due = time.time() if op.run_at_start else op.schedule.next_after(time.time())
        while due is not None and not self._stop_event.is_set() and self._operators.get(op.operator_id) is op:
            if op.max_ticks is not None and op.ticks >= op.max_ticks:
                return
            delay = due - time.time()
            if delay > 0:
                try:
                    await asyncio.wait_for(self._stop_event.wait(), delay)
                    return
                except asyncio.TimeoutError:
                    pass
            started = time.time()
            await self._tick(op)
            due = op.schedule.next_after(started if op.schedule.every is not None else time.time())

    async def tick_now(self, operator_id: str) -> TickRecord:
        """Run one tick of ``operator_id`` now (after its running tick, if any) and return its record."""
        op = self._operators.get(operator_id)
        if op is None:
            raise ConfigError(f"operator {operator_id!r} is not scheduled here; add it first")
        return await self._tick(op)

    async def _tick(self, op: _Operator) -> TickRecord:
        if op.lock is None:
            op.lock = asyncio.Lock()
        async with op.lock:
            op.ticks += 1
            started = time.time()
            try:
                result = None
                async for event in op.agent.astream(op.instruction):
                    if op.on_event is not None:
                        op.on_event(event)
                    if isinstance(event, RunFinished):
                        result = event.result
                assert result is not None
                error = result.metadata.get("error") if result.stop_reason == "error" else None
                record = TickRecord(op.operator_id, op.ticks, started, time.time(), result.stop_reason != "error",
                                    result.stop_reason, result.content,
                                    None if result.stop_reason != "error" else f"agent error: {error or 'unknown'}")
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                record = TickRecord(op.operator_id, op.ticks, started, time.time(), False,
                                    error=f"{type(exc).__name__}: {exc}")
            if not record.ok:
                log.warning("operator %s: tick %d failed: %s", op.operator_id, record.tick, record.error)
            op.records.append(record)
            await self._record(op, record)
            return record

    async def _record(self, op: _Operator, record: TickRecord) -> None:
        state = getattr(op.agent, "state", None)
        if state is not None and callable(getattr(state, "put", None)):
            try:
                await asyncio.to_thread(save_tick, state, record, agent=getattr(op.agent, "agent_id", "") or "",
                                        instruction=op.instruction, schedule=op.schedule.describe())
            except Exception as exc:
                log.error("operator %s: the record of tick %d could not be saved: %s: %s", op.operator_id,
                          record.tick, type(exc).__name__, exc)
        if self.on_tick is not None:
            try:
                outcome = self.on_tick(record)
                if inspect.isawaitable(outcome):
                    await outcome
            except Exception as exc:
                log.error("operator %s: on_tick failed for tick %d: %s: %s", op.operator_id, record.tick,
                          type(exc).__name__, exc)

