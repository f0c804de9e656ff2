"""TaskScheduler with real operative agents on a real SQLite file: interval ticks happen, a failing tick is
recorded and the next one runs, ticks of one operator never overlap, stop() ends run(); schedules: intervals,
cron through croniter, and a cron expression without croniter is an error naming the extra."""

from __future__ import annotations

import asyncio
import itertools
import logging
import sys
import threading
import time

import pytest

from jarvis_agents.agents.operative import OperativeAgent
from jarvis_agents.operators.records import get_record
from jarvis_agents.operators.schedule import Schedule, parse_every
from jarvis_agents.operators.scheduler import TaskScheduler
from jarvis_core.errors import ConfigError, EngineConnectionError
from jarvis_core.stores import SQLiteStore
from jarvis_core.testing import FakeEngine
from jarvis_core.types import Completion, ToolCall, ToolSpec


@pytest.fixture
def store(tmp_path):
    s = SQLiteStore(tmp_path / "operators.db")
    yield s
    s.close()


def operative(engine, store, operator_id="op", **kwargs):
    return OperativeAgent(engine, model="m", operator_id=operator_id, sessions=store.sessions, state=store.state,
                          mode="function_calling", **kwargs)


def run_scheduler(scheduler, timeout=20.0):
    asyncio.run(asyncio.wait_for(scheduler.run(), timeout))


def test_interval_ticks_happen_and_are_recorded(store):
    scheduler = TaskScheduler()
    scheduler.add("op", operative(FakeEngine(default="checked"), store), "check the feed", every=0.05, max_ticks=3)
    run_scheduler(scheduler)
    records = scheduler.records("op")
    assert [(r.tick, r.ok, r.stop_reason, r.content) for r in records] == [(n, True, "final", "checked")
                                                                           for n in (1, 2, 3)]
    assert all(b.started_at - a.started_at >= 0.04 for a, b in itertools.pairwise(records))
    saved = get_record(store.state, "op")
    assert saved["ticks"] == 3 and saved["failures"] == 0 and saved["schedule"] == "every 0.05s"
    assert saved["agent"] == "operative" and saved["instruction"] == "check the feed"
    assert store.sessions.count("operator:op") == 6


def test_a_failing_tick_is_recorded_and_the_next_one_runs(store, caplog):
    engine = FakeEngine(["first", EngineConnectionError("the engine is down", engine_id="fake"), "third"])
    seen = []
    scheduler = TaskScheduler(on_tick=seen.append)
    scheduler.add("op", operative(engine, store), "tick", every=0.02, max_ticks=3)
    with caplog.at_level(logging.WARNING, logger="jarvis_agents.operators"):
        run_scheduler(scheduler)
    assert [(r.ok, r.content, r.error) for r in seen] == [
        (True, "first", None), (False, "", "EngineConnectionError: the engine is down"), (True, "third", None)]
    assert any("tick 2 failed: EngineConnectionError" in r.getMessage() for r in caplog.records)
    saved = get_record(store.state, "op")
    assert saved["ticks"] == 3 and saved["failures"] == 1 and [t["ok"] for t in saved["recent"]] == [True, False, True]
    assert store.state.get("operator:op:state") == "third"


def test_a_tick_ending_in_error_counts_as_failed_and_a_broken_on_tick_is_not_fatal(store, caplog):
    def boom(record):
        raise RuntimeError("the callback broke")

    scheduler = TaskScheduler(on_tick=boom)
    agent = operative(FakeEngine(default="fine"), store)
    scheduler.add("op", agent, "tick", every=0.01, max_ticks=2)
    with caplog.at_level(logging.ERROR, logger="jarvis_agents.operators"):
        run_scheduler(scheduler)
    assert [r.ok for r in scheduler.records("op")] == [True, True]
    assert sum("on_tick failed" in r.getMessage() for r in caplog.records) == 2


class Slow:
    """A tool that takes 0.15 s and records how many of its calls ever ran at once."""

    spec = ToolSpec("slow", "Wait a little.", {"type": "object", "properties": {}})

    def __init__(self):
        self.running = 0
        self.most = 0
        self.lock = threading.Lock()

    def run(self) -> str:
        with self.lock:
            self.running += 1
            self.most = max(self.most, self.running)
        time.sleep(0.15)
        with self.lock:
            self.running -= 1
        return "waited"


def slow_script(n):
    items = []
    for i in range(n):
        items += [Completion(tool_calls=[ToolCall(f"s{i}", "slow")]), f"tick {i} done"]
    return items


def test_one_tick_at_a_time_per_operator(store):
    slow = Slow()
    scheduler = TaskScheduler()
    # The interval is far shorter than a tick, and a manual tick is asked for while one runs.
    scheduler.add("op", operative(FakeEngine(slow_script(4)), store, tools=[slow]), "tick", every=0.01, max_ticks=3)

    async def main():
        running = asyncio.ensure_future(scheduler.run())
        await asyncio.sleep(0.05)
        manual = await scheduler.tick_now("op")
        await asyncio.wait_for(running, 20)
        return manual

    manual = asyncio.run(main())
    records = sorted(scheduler.records("op"), key=lambda r: r.started_at)
    assert len(records) == 3 and manual in records and all(r.ok for r in records)  # max_ticks counts it too
    assert slow.most == 1
    assert all(b.started_at >= a.ended_at for a, b in itertools.pairwise(records))


def test_two_operators_tick_independently(store):
    scheduler = TaskScheduler()
    scheduler.add("a", operative(FakeEngine(default="from a"), store, operator_id="a"), "tick", every=0.02, max_ticks=2)
    scheduler.add("b", operative(FakeEngine(default="from b"), store, operator_id="b"), "tick", every=0.02, max_ticks=3)
    run_scheduler(scheduler)
    assert len(scheduler.records("a")) == 2 and len(scheduler.records("b")) == 3
    assert store.state.get("operator:a:state") == "from a" and store.state.get("operator:b:state") == "from b"


def test_stop_from_another_thread_ends_run(store):
    scheduler = TaskScheduler()
    scheduler.add("op", operative(FakeEngine(default="tick"), store), "tick", every=0.05)
    timer = threading.Timer(0.3, scheduler.stop)
    timer.start()
    started = time.monotonic()
    run_scheduler(scheduler, timeout=10)
    timer.join()
    count = len(scheduler.records("op"))
    assert count >= 1 and time.monotonic() - started < 5
    time.sleep(0.15)
    assert len(scheduler.records("op")) == count  # nothing ticks after run() returned


def test_adding_the_same_operator_twice_or_a_bad_schedule_is_a_config_error(store):
    scheduler = TaskScheduler()
    agent = operative(FakeEngine([]), store)
    scheduler.add("op", agent, "tick", every=60)
    with pytest.raises(ConfigError, match="already scheduled"):
        scheduler.add("op", agent, "tick", every=60)
    with pytest.raises(ConfigError, match="not both"):
        scheduler.add("other", agent, "tick", every=60, cron="* * * * *")
    with pytest.raises(ConfigError, match="longer than zero"):
        scheduler.add("other", agent, "tick", every=0)
    with pytest.raises(ConfigError, match="not scheduled here"):
        asyncio.run(scheduler.tick_now("nobody"))


@pytest.mark.parametrize("text, seconds", [("60s", 60), ("90", 90), ("5m", 300), ("1.5h", 5400), ("2d", 172800),
                                           ("250ms", 0.25), ("10 min", 600)])
def test_parse_every(text, seconds):
    assert parse_every(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "soon", "-5s", "0s", "5 months"])
def test_parse_every_rejects(text):
    with pytest.raises(ConfigError):
        parse_every(text)


def test_cron_without_croniter_is_an_error_naming_the_extra(store, monkeypatch):
    monkeypatch.setitem(sys.modules, "croniter", None)  # what an environment without croniter sees
    with pytest.raises(ConfigError) as info:
        Schedule(cron="*/5 * * * *")
    assert "croniter" in str(info.value) and "pip install 'jarvis-agents[cron]'" in str(info.value)
    scheduler = TaskScheduler()
    with pytest.raises(ConfigError, match=r"jarvis-agents\[cron\]"):
        scheduler.add("op", operative(FakeEngine([]), store), "tick", cron="0 * * * *")
    assert scheduler.records("op") == []


def test_cron_with_croniter():
    pytest.importorskip("croniter", reason="the cron extra (pip install 'jarvis-agents[cron]')")
    moment = time.mktime((2030, 1, 1, 10, 2, 30, 0, 0, -1))  # local 10:02:30
    assert Schedule(cron="*/5 * * * *").next_after(moment) == moment + 150  # 10:05:00
    assert Schedule(cron="0 9 * * *").next_after(moment) == time.mktime((2030, 1, 2, 9, 0, 0, 0, 0, -1))
    with pytest.raises(ConfigError, match="not a cron expression"):
        Schedule(cron="every hour")


def test_a_cron_operator_does_not_tick_at_start(store):
    pytest.importorskip("croniter", reason="the cron extra (pip install 'jarvis-agents[cron]')")
    scheduler = TaskScheduler()
    scheduler.add("op", operative(FakeEngine([]), store), "tick", cron="0 0 1 1 *")  # next new year
    threading.Timer(0.2, scheduler.stop).start()
    run_scheduler(scheduler, timeout=10)
    assert scheduler.records("op") == []
