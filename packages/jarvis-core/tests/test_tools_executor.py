"""The ToolExecutor's guarantees: validation, approval, isolation and timeouts, output cap, events."""

from __future__ import annotations

import asyncio
import json
import os
import pathlib
import threading
import time

import psutil
import pytest

from jarvis_core.events import EventType
from jarvis_core.testing.recording_bus import RecordingBus
from jarvis_core.tools import BaseTool, InvalidToolError, ToolExecutor, ToolPolicy, check_tool
from jarvis_core.types import ToolCall, ToolSpec

DATA = pathlib.Path(__file__).parent / "data"
EMPTY = {"type": "object", "properties": {}}


class Echo(BaseTool):
    spec = ToolSpec("echo", "Repeat text.", {
        "type": "object", "properties": {"text": {"type": "string", "maxLength": 20}, "times": {"type": "integer"}},
        "required": ["text"], "additionalProperties": False})

    def __init__(self) -> None:
        self.calls: list = []

    def run(self, text: str, times: int = 1) -> str:
        self.calls.append((text, times))
        return text * times


class Boom(BaseTool):
    spec = ToolSpec("boom", "Fails.", EMPTY)

    def run(self) -> str:
        raise ValueError("boom")


class Big(BaseTool):
    spec = ToolSpec("big", "Much output.", EMPTY)
    policy = ToolPolicy(max_output_chars=1000)

    def run(self) -> str:
        return "x" * 1_000_000


class Hang(BaseTool):
    """A thread tool that blocks until released (or 30 s)."""

    spec = ToolSpec("hang", "Hangs.", EMPTY)
    policy = ToolPolicy(timeout=0.2)

    def __init__(self) -> None:
        self.release = threading.Event()

    def run(self) -> str:
        self.release.wait(30)
        return "late"


class Guarded(BaseTool):
    spec = ToolSpec("rm", "Deletes.", {"type": "object", "properties": {"path": {"type": "string"}}})
    policy = ToolPolicy(confirm=True, side_effects="write")

    def __init__(self) -> None:
        self.ran = 0

    def run(self, path: str = "") -> str:
        self.ran += 1
        return f"deleted {path}"


class AsyncSlow(BaseTool):
    spec = ToolSpec("aslow", "Async and slow.", EMPTY)
    policy = ToolPolicy(timeout=0.2)

    def __init__(self) -> None:
        self.cancelled = False

    async def arun(self) -> str:
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            self.cancelled = True
            raise
        return "never"


def call(name: str, args: object = None, cid: str = "c1") -> ToolCall:
    return ToolCall(cid, name, args if isinstance(args, str) else json.dumps(args or {}))


def ends(bus: RecordingBus) -> list:
    return [dict(e.data) for e in bus.of_type(EventType.TOOL_CALL_END)]


# -- contract checks ------------------------------------------------------------------------------
def test_objects_that_break_the_contract_are_refused_by_name():
    class NoSpec:
        def run(self) -> str:
            return ""

    class NoRun(BaseTool):
        spec = ToolSpec("norun")

    with pytest.raises(InvalidToolError, match=r"has no .spec."):
        check_tool(NoSpec(), key="nospec", distribution="acme-tools")
    with pytest.raises(InvalidToolError, match=r"tool 'norun' \(from distribution 'acme-tools'\) has neither run"):
        check_tool(NoRun(), key="norun", distribution="acme-tools")
    with pytest.raises(InvalidToolError, match="two tools are named 'echo'"):
        ToolExecutor([Echo(), Echo()])


def test_policy_rejects_bad_values():
    with pytest.raises(ValueError, match="isolation must be one of inline, thread, process"):
        ToolPolicy(isolation="docker")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="timeout"):
        ToolPolicy(timeout=0)


# -- the pipeline ---------------------------------------------------------------------------------
def test_a_good_call_runs_with_events_carrying_the_run_id():
    bus, tool = RecordingBus(), Echo()
    result = ToolExecutor([tool], bus=bus, run_id="run_1").execute(call("echo", {"text": "ab", "times": 2}))
    assert (result.ok, result.content, result.tool_call_id, result.truncated) == (True, "abab", "c1", False)
    assert tool.calls == [("ab", 2)]
    assert bus.types() == [EventType.TOOL_CALL_START, EventType.TOOL_CALL_END]
    end = ends(bus)[0]
    assert end["run_id"] == "run_1" and end["ok"] is True and end["outcome"] == "ok" and end["tool_call_id"] == "c1"


def test_unknown_tool_lists_the_valid_names_and_is_published():
    bus = RecordingBus()
    result = ToolExecutor([Echo(), Boom()], bus=bus).execute(call("nosuch"))
    assert not result.ok
    assert "unknown tool 'nosuch'; available: echo, boom" in result.content
    assert [e["outcome"] for e in ends(bus)] == ["unknown_tool"]
    assert len(bus.of_type(EventType.TOOL_CALL_START)) == 1


@pytest.mark.parametrize("args, message", [
    ({"text": 5}, "argument 'text' must be of type string, got integer"),
    ({}, "missing required argument(s): 'text'"),
    ({"text": "a", "loud": True}, "unknown argument 'loud'; allowed: text, times"),
    ({"text": "a" * 21}, "argument 'text' must have at most 20 character(s), got 21"),
    ('{"text": ', "not valid JSON"),
    ("[1]", "must be a JSON object, got array"),
])
def test_schema_violations_never_reach_the_tool(args, message):
    tool, bus = Echo(), RecordingBus()
    result = ToolExecutor([tool], bus=bus).execute(call("echo", args))
    assert not result.ok and message in result.content
    assert result.content.startswith("error: invalid arguments for 'echo': ")
    assert tool.calls == []
    assert [e["outcome"] for e in ends(bus)] == ["invalid_arguments"]


def test_a_tool_exception_is_a_result_naming_its_type():
    bus = RecordingBus()
    result = ToolExecutor([Boom()], bus=bus).execute(call("boom"))
    assert not result.ok
    assert "ValueError" in result.content and "boom" in result.content
    assert [e["ok"] for e in ends(bus)] == [False]


def test_output_is_capped_with_a_visible_marker():
    result = ToolExecutor([Big()]).execute(call("big"))
    assert result.ok and result.truncated
    assert len(result.content) <= 1000
    assert "[output truncated: 1000000 characters, showing the first" in result.content
    assert result.content.endswith("]") and result.content.startswith("xxx")


# -- approval -------------------------------------------------------------------------------------
def test_confirmation_without_an_approver_is_denied():
    tool, bus = Guarded(), RecordingBus()
    result = ToolExecutor([tool], bus=bus).execute(call("rm", {"path": "/tmp/x"}))
    assert not result.ok and "needs confirmation and no approver is configured" in result.content
    assert tool.ran == 0
    assert [e["outcome"] for e in ends(bus)] == ["denied"]


def test_an_approver_saying_no_or_failing_denies_and_yes_runs():
    tool = Guarded()
    seen = []

    def approver(c: ToolCall, t: object) -> bool:
        seen.append((c.parsed_arguments(), t))
        return c.parsed_arguments()["path"] == "/tmp/ok"

    ex = ToolExecutor([tool], approver=approver)
    denied = ex.execute(call("rm", {"path": "/etc"}))
    assert not denied.ok and "was not approved" in denied.content and tool.ran == 0
    approved = ex.execute(call("rm", {"path": "/tmp/ok"}))
    assert approved.ok and approved.content == "deleted /tmp/ok" and tool.ran == 1
    assert seen[0] == ({"path": "/etc"}, tool)

    def broken(c: ToolCall, t: object) -> bool:
        raise RuntimeError("approver down")

    failed = ToolExecutor([tool], approver=broken).execute(call("rm", {"path": "/tmp/ok"}))
    assert not failed.ok and "approval of 'rm' failed (RuntimeError)" in failed.content and tool.ran == 1


async def test_an_async_approver_is_awaited():
    tool = Guarded()

    async def approver(c: ToolCall, t: object) -> bool:
        await asyncio.sleep(0)
        return True

    result = await ToolExecutor([tool], approver=approver).aexecute(call("rm", {"path": "p"}))
    assert result.ok and tool.ran == 1
    # A truthy non-bool answer is not a yes: approval must be explicit.
    assert not ToolExecutor([tool], approver=lambda c, t: "yes").execute(call("rm")).ok  # type: ignore[arg-type,return-value]


# -- timeouts -------------------------------------------------------------------------------------
def test_a_thread_timeout_is_reported_and_twenty_of_them_do_not_block_a_healthy_call():
    hang, echo, bus = Hang(), Echo(), RecordingBus()
    ex = ToolExecutor([hang, echo], bus=bus)
    try:
        started = time.monotonic()
        first = ex.execute(call("hang"))
        assert not first.ok and "'hang' timed out after 0.2s" in first.content
        assert time.monotonic() - started < 1.5
        for i in range(19):
            assert not ex.execute(call("hang", cid=f"h{i}")).ok
        assert ex.abandoned_threads == 20
        healthy = ex.execute(call("echo", {"text": "still fine"}, cid="ok"))
        assert healthy.ok and healthy.content == "still fine"
        assert [e["outcome"] for e in ends(bus)].count("timeout") == 20
    finally:
        hang.release.set()
    deadline = time.monotonic() + 5
    while ex.abandoned_threads and time.monotonic() < deadline:
        time.sleep(0.02)
    assert ex.abandoned_threads == 0  # finished threads are no longer counted


def test_past_the_abandoned_thread_limit_calls_are_refused_not_piled_up():
    hang = Hang()
    ex = ToolExecutor([hang, Echo()], max_abandoned_threads=2)
    try:
        ex.execute(call("hang"))
        ex.execute(call("hang"))
        refused = ex.execute(call("echo", {"text": "x"}))
        assert not refused.ok and "2 earlier timed-out calls are still running (limit 2)" in refused.content
    finally:
        hang.release.set()


async def test_an_async_tool_is_cancelled_on_timeout():
    tool = AsyncSlow()
    result = await ToolExecutor([tool]).aexecute(call("aslow"))
    assert not result.ok and "timed out after 0.2s" in result.content
    assert tool.cancelled


async def test_async_execution_of_a_sync_tool_times_out_without_blocking_the_loop():
    hang = Hang()
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0.01)

    task = asyncio.create_task(ticker())
    try:
        result = await ToolExecutor([hang]).aexecute(call("hang"))
    finally:
        task.cancel()
        hang.release.set()
    assert not result.ok and "timed out" in result.content
    assert ticks >= 5  # the loop kept running while the tool blocked its own thread


@pytest.fixture
def process_tools(monkeypatch):
    monkeypatch.syspath_prepend(str(DATA))
    import process_tools

    return process_tools


def _gone_within(pid, seconds):
    """Whether ``pid`` is gone (or a zombie) within ``seconds``: a SIGKILLed process on a loaded machine is only
    gone once the scheduler has run it to deliver the signal."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)


def test_a_process_timeout_kills_the_child_and_its_children(process_tools, tmp_path):
    pid_file = tmp_path / "pids"
    bus = RecordingBus()
    started = time.monotonic()
    result = ToolExecutor([process_tools.Spinner()], bus=bus).execute(call("spinner", {"pid_file": str(pid_file)}))
    assert not result.ok and "'spinner' timed out after 10s" in result.content
    assert time.monotonic() - started < 30  # the spinner never returns: only the timeout ends the call
    child, grandchild = map(int, pid_file.read_text().split())
    assert child != os.getpid()
    for pid in (child, grandchild):
        assert _gone_within(pid, 10.0), f"process {pid} survived the timeout"
    assert [e["outcome"] for e in ends(bus)] == ["timeout"]


def test_process_tools_report_results_errors_and_deaths(process_tools):
    ex = ToolExecutor([process_tools.WhoAmI(), process_tools.Raises(), process_tools.Exits()])
    pid = ex.execute(call("whoami"))
    assert pid.ok and pid.content.isdigit() and int(pid.content) != os.getpid()
    raised = ex.execute(call("raises"))
    assert not raised.ok and "ValueError: boom in the child" in raised.content
    died = ex.execute(call("exits"))
    assert not died.ok and "ended without a result (exit status 3" in died.content


def test_a_tool_that_cannot_be_pickled_is_an_error_not_a_crash():
    class Local(BaseTool):
        spec = ToolSpec("local", "", EMPTY)
        policy = ToolPolicy(isolation="process")

        def run(self) -> str:
            return "x"

    result = ToolExecutor([Local()]).execute(call("local"))
    assert not result.ok and "must be picklable" in result.content


# -- several calls --------------------------------------------------------------------------------
class Nap(BaseTool):
    spec = ToolSpec("nap", "Sleeps.", {"type": "object", "properties": {"s": {"type": "number"}}, "required": ["s"]})

    def run(self, s: float) -> str:
        time.sleep(s)
        return f"slept {s}"


def test_execute_many_keeps_order_and_parallel_beats_serial():
    ex = ToolExecutor([Nap()])
    calls = [call("nap", {"s": 0.3}, "a"), call("nap", {"s": 0.0}, "b"), call("nap", {"s": 0.3}, "c")]
    t0 = time.monotonic()
    parallel = ex.execute_many(calls, parallel=True)
    t1 = time.monotonic()
    serial = ex.execute_many(calls, parallel=False)
    t2 = time.monotonic()
    for results in (parallel, serial):
        assert [r.tool_call_id for r in results] == ["a", "b", "c"]
        assert [r.content for r in results] == ["slept 0.3", "slept 0.0", "slept 0.3"]
    assert t2 - t1 >= 0.6  # serial: the sleeps add up
    assert (t1 - t0) < (t2 - t1)  # parallel: they overlap


async def test_aexecute_many_keeps_order():
    ex = ToolExecutor([Nap()])
    results = await ex.aexecute_many([call("nap", {"s": 0.2}, "a"), call("nap", {"s": 0.0}, "b")])
    assert [r.tool_call_id for r in results] == ["a", "b"]


def test_reject_publishes_like_any_call():
    bus = RecordingBus()
    result = ToolExecutor([Echo()], bus=bus, run_id="r").reject(call("echo"), "not run: guard", outcome="loop_guard")
    assert not result.ok and result.content == "error: not run: guard"
    assert bus.types() == [EventType.TOOL_CALL_START, EventType.TOOL_CALL_END]
    assert ends(bus)[0]["outcome"] == "loop_guard"


def test_worker_threads_are_reused_when_idle_and_added_when_busy():
    ex = ToolExecutor([Nap()])
    for i in range(5):
        assert ex.execute(call("nap", {"s": 0}, f"n{i}")).ok
    assert ex._workers.threads == 1  # one idle thread served every sequential call
    ex.execute_many([call("nap", {"s": 0.2}, "a"), call("nap", {"s": 0.2}, "b"), call("nap", {"s": 0.2}, "c")])
    assert ex._workers.threads == 3  # busy threads are never waited for: new ones start


def test_with_run_shares_the_threads_and_the_abandoned_count():
    hang = Hang()
    ex = ToolExecutor([hang])
    try:
        run_a, run_b = ex.with_run("a"), ex.with_run("b")
        run_a.execute(call("hang"))
        assert run_b.abandoned_threads == 1 and ex.abandoned_threads == 1
        assert run_a.run_id == "a" and ex.run_id == ""
    finally:
        hang.release.set()
