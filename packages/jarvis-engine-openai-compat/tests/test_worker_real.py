"""The managed worker against the REAL llama.cpp server (xllamacpp + SmolLM2-135M).

Each test starts its own worker (the server starts in about a second) with a small context and few
tokens. Nothing here asserts a duration: waits poll with generous deadlines that only guard against hangs.
"""

from __future__ import annotations

import datetime as dt
import os
import signal
import time
from typing import Any, Callable, List

import pytest

from jarvis_core.errors import ConfigError, EngineConnectionError
from jarvis_core.events import EventBus, EventType
from jarvis_engine_openai_compat.worker import (
    NO_SLOT_AVAILABLE,
    NOT_READY,
    LlamaCppWorker,
    LoopDetectorConfig,
    RequestState,
    RestartPolicy,
    TimeoutProfile,
    WorkerConfig,
    WorkerState,
)

SYSTEM = "You are a helpful assistant."
QUESTION = "What is the capital of France?"
# Loops at temperature 0 with SmolLM2-135M (found by trying long-list and long-essay prompts; see the test).
LOOPING_PROMPT = "List 100 facts about cats."
# Generates until max_tokens when loop detection is off (it repeats a line for ever).
ENDLESS_PROMPT = "Write a poem that never ends."
FIXED_NOW = dt.datetime(2025, 1, 7, 14, 5, tzinfo=dt.timezone.utc)
HANG_GUARD = 120.0  # seconds; only there so that a bug fails the test instead of hanging the suite


class Events(EventBus):
    def __init__(self) -> None:
        super().__init__()
        self.seen: List[Any] = []
        self.subscribe(self.seen.append)

    def types(self) -> List[EventType]:
        return [e.type for e in self.seen]


@pytest.fixture
def make_worker(smollm2):
    """Build and start a worker; stops it (and resumes any server a test SIGSTOPped) at teardown."""
    made: List[LlamaCppWorker] = []

    def factory(*, start: bool = True, bus: Any = None, **overrides: Any) -> LlamaCppWorker:
        settings = dict(model_path=smollm2, slots=1, ctx_per_slot=1024, threads=2, max_tokens=48, temperature=0.0,
                        startup_timeout=180.0)
        settings.update(overrides)
        worker = LlamaCppWorker(WorkerConfig(**settings), bus=bus, clock=lambda: FIXED_NOW)
        made.append(worker)
        return worker.start(timeout=180) if start else worker

    yield factory
    for worker in made:
        pid = worker.status().pid
        if pid:
            try:
                os.kill(pid, signal.SIGCONT)
            except OSError:
                pass
        worker.stop()


def poll(fn: Callable[[], Any], what: str, timeout: float = HANG_GUARD, interval: float = 0.05) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = fn()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"{what}: did not happen within {timeout:g}s")


def submit_when_free(worker: LlamaCppWorker, *args: Any, **kw: Any):
    return poll(lambda: worker.submit(*args, **kw), "a free slot")


def wait_result(worker: LlamaCppWorker, request_id: str):
    result = worker.wait(request_id, HANG_GUARD)
    assert result is not NOT_READY, f"request {request_id} never finished"
    return result


def endless(**overrides: Any) -> dict:
    """Config for a generation that runs long: loop detection off, many tokens."""
    return dict(max_tokens=900, loop=LoopDetectorConfig(enabled=False), **overrides)


# -- basics ---------------------------------------------------------------------------------------
def test_answers_and_reports_status_and_events(make_worker):
    bus = Events()
    worker = make_worker(bus=bus)
    status = worker.status()
    assert status.state is WorkerState.HEALTHY and status.active and status.healthy and not status.restarting
    assert status.slots_total == 1 and status.slots_used == 0 and status.restart_count == 0
    assert worker.tool_mode == "json_schema"  # auto: SmolLM2's chat template renders no tools
    handle = worker.submit(SYSTEM, QUESTION, control_tools=False)
    assert handle.slot == 0
    result = wait_result(worker, handle.id)
    assert result.state is RequestState.COMPLETED
    assert result.content == "The capital of France is Paris."
    assert result.stop_reason == "stop"
    assert result.usage.completion_tokens > 0
    assert "predicted_n" in result.timings
    st = worker.get_status(handle.id)
    assert st.partial_length == len(result.content) and st.partial_tail == result.content
    assert st.headers_at is not None and st.first_token_at is not None and st.last_progress_at is not None
    assert st.created_at <= st.headers_at <= st.first_token_at <= st.finished_at
    worker.stop()
    assert worker.status().state is WorkerState.STOPPED
    assert bus.types()[:2] == [EventType.WORKER_STARTING, EventType.WORKER_READY]
    end = [e for e in bus.seen if e.type is EventType.WORKER_REQUEST_END]
    assert end and end[0].data["request_id"] == handle.id and end[0].data["state"] == "completed"


def test_max_tokens_has_a_worker_default_and_a_per_request_override(make_worker):
    worker = make_worker(max_tokens=5)
    short = wait_result(worker, submit_when_free(worker, SYSTEM, "Tell me a long story about a dragon.",
                                                 control_tools=False).id)
    assert short.stop_reason == "length" and short.usage.completion_tokens == 5
    longer = wait_result(worker, submit_when_free(worker, SYSTEM, "Tell me a long story about a dragon.",
                                                  control_tools=False, max_tokens=12).id)
    assert longer.stop_reason == "length" and longer.usage.completion_tokens == 12


# -- failures: nuke and repave -------------------------------------------------------------------
def test_kill9_mid_generation_fails_the_request_then_the_worker_restarts(make_worker):
    bus = Events()
    worker = make_worker(bus=bus, restart=RestartPolicy(backoff_base=0.1), **endless())
    old_pid = worker.status().pid
    handle = worker.submit(SYSTEM, ENDLESS_PROMPT, control_tools=False)
    poll(lambda: worker.get_status(handle.id).partial_length > 20, "tokens streaming")
    os.kill(old_pid, signal.SIGKILL)

    result = wait_result(worker, handle.id)
    assert result.state is RequestState.FAILED
    assert result.reason == "server_crashed"
    assert "exit" in result.detail  # e.g. "the server exited with code -9 ..."
    assert result.content  # what had been generated is kept

    status = poll(lambda: (s := worker.status()).healthy and s.pid != old_pid and s, "restart")
    assert status.restart_count == 1
    assert "server_crashed" in status.last_error
    assert EventType.WORKER_RESTART in bus.types()
    again = wait_result(worker, submit_when_free(worker, SYSTEM, QUESTION, control_tools=False).id)
    assert again.state is RequestState.COMPLETED and again.content == "The capital of France is Paris."


def test_sigstop_is_caught_as_a_stall_and_the_server_restarted(make_worker):
    worker = make_worker(timeouts=TimeoutProfile(stall_window=2.0), restart=RestartPolicy(backoff_base=0.1),
                         **endless())
    old_pid = worker.status().pid
    handle = worker.submit(SYSTEM, ENDLESS_PROMPT, control_tools=False)
    poll(lambda: worker.get_status(handle.id).partial_length > 20, "tokens streaming")
    os.kill(old_pid, signal.SIGSTOP)

    result = wait_result(worker, handle.id)
    assert result.state is RequestState.FAILED
    assert result.reason == "server_stalled"
    assert "no stream bytes" in result.detail and "CPU" in result.detail
    status = poll(lambda: (s := worker.status()).healthy and s.pid != old_pid and s, "restart")
    assert status.restart_count == 1
    with pytest.raises(ProcessLookupError):  # the stopped server was killed, not left behind
        poll(lambda: os.kill(old_pid, 0) or None, "old server gone", timeout=15)
    again = wait_result(worker, submit_when_free(worker, SYSTEM, QUESTION, control_tools=False).id)
    assert again.state is RequestState.COMPLETED


def test_a_wedged_server_that_sends_no_headers_is_restarted(make_worker):
    """SIGSTOPped while idle: the kernel still accepts the connection, but no headers ever come."""
    worker = make_worker(timeouts=TimeoutProfile(headers=1.0), restart=RestartPolicy(backoff_base=0.1))
    old_pid = worker.status().pid
    os.kill(old_pid, signal.SIGSTOP)
    handle = worker.submit(SYSTEM, QUESTION, control_tools=False)
    result = wait_result(worker, handle.id)
    assert result.state is RequestState.FAILED and result.reason == "headers_timeout"
    status = poll(lambda: (s := worker.status()).healthy and s.pid != old_pid and s, "restart")
    assert status.restart_count == 1 and "headers_timeout" in status.last_error
    again = wait_result(worker, submit_when_free(worker, SYSTEM, QUESTION, control_tools=False).id)
    assert again.state is RequestState.COMPLETED


def test_a_long_prefill_that_burns_cpu_is_not_a_stall(make_worker):
    """The stall window (0.3 s) is far shorter than the prefill of these prompts, during which the server
    sends no bytes: the request must still complete, because the server's CPU time keeps moving. The
    prompt grows until its prefill is long enough to exercise the check on this machine."""
    window = 0.3
    worker = make_worker(threads=1, ctx_per_slot=3072, max_tokens=4, timeouts=TimeoutProfile(stall_window=window))
    silences = []
    for items in (40, 90, 180):
        prompt = " ".join(f"Item {i}: the quick brown fox jumps over the lazy dog." for i in range(items))
        handle = submit_when_free(worker, SYSTEM, prompt + "\nHow many items are there?", control_tools=False)
        result = wait_result(worker, handle.id)
        assert result.state is RequestState.COMPLETED, (result.reason, result.detail)
        st = worker.get_status(handle.id)
        silences.append(st.first_token_at - st.headers_at)
        if silences[-1] > 5 * window:
            break
    assert silences[-1] > 5 * window, f"no prefill was long enough to exercise the stall check: {silences}"
    assert worker.status().restart_count == 0


def test_a_model_file_llama_cpp_cannot_load_gives_up_at_once(make_worker, tmp_path):
    """Bad magic stays bad magic: retrying would only spend the crash-loop budget."""
    bad = tmp_path / "broken.gguf"
    bad.write_bytes(b"this is not a GGUF file\n" * 100)
    bus = Events()
    worker = make_worker(start=False, bus=bus, model_path=str(bad),
                         restart=RestartPolicy(backoff_base=0.05, crash_loop_max=3, crash_loop_window=600))
    with pytest.raises(EngineConnectionError, match=f"cannot load the model file {bad}") as info:
        worker.start(timeout=HANG_GUARD)
    assert "invalid magic" in str(info.value)
    status = worker.status()
    assert status.state is WorkerState.GAVE_UP and status.restart_count == 0
    assert bus.types().count(EventType.WORKER_STARTING) == 1
    with pytest.raises(EngineConnectionError, match="gave_up"):
        worker.submit(SYSTEM, QUESTION)


def test_a_server_that_keeps_dying_trips_crash_loop_protection(make_worker, tmp_path):
    """A real server binary that exits 1 at every start: a failure a restart might fix, three times over."""
    binary = tmp_path / "llama-server"
    binary.write_text("#!/bin/sh\necho 'out of file descriptors' >&2\nexit 1\n", encoding="utf-8")
    binary.chmod(0o755)
    bus = Events()
    worker = make_worker(start=False, bus=bus, binary_path=str(binary),
                         restart=RestartPolicy(backoff_base=0.05, crash_loop_max=3, crash_loop_window=600))
    with pytest.raises(EngineConnectionError) as info:
        worker.start(timeout=HANG_GUARD)
    assert "crash-loop protection" in str(info.value)
    status = worker.status()
    assert status.state is WorkerState.GAVE_UP
    assert not status.active and not status.healthy and not status.restarting
    assert status.restart_count == 2  # three failed starts: the first, then two restarts
    assert "gave up after 3 failures" in status.last_error
    assert "start_failed" in status.last_error and "exited with code 1" in status.last_error
    assert bus.types().count(EventType.WORKER_STARTING) == 3
    assert EventType.WORKER_GAVE_UP in bus.types()
    with pytest.raises(EngineConnectionError, match="gave_up"):
        worker.submit(SYSTEM, QUESTION)


def test_a_launch_error_no_retry_can_fix_gives_up_at_once(make_worker, tmp_path):
    """The xllamacpp host exits 2 on bad arguments (3 without xllamacpp): retrying cannot help."""
    bus = Events()
    worker = make_worker(start=False, bus=bus, extra_args=("--no-such-flag",))
    with pytest.raises(EngineConnectionError, match="could not start"):
        worker.start(timeout=HANG_GUARD)
    status = worker.status()
    assert status.state is WorkerState.GAVE_UP and status.restart_count == 0
    assert "exited with code 2" in status.last_error and "--no-such-flag" in status.last_error
    assert bus.types().count(EventType.WORKER_STARTING) == 1


def test_missing_model_file_is_a_config_error_at_once(make_worker, tmp_path):
    worker = make_worker(start=False, model_path=str(tmp_path / "nope.gguf"))
    with pytest.raises(ConfigError, match="model file not found"):
        worker.start()
    assert worker.status().state is WorkerState.STOPPED


# -- slots and cancel ----------------------------------------------------------------------------
def test_all_slots_busy_gives_no_slot_and_cancel_frees_one(make_worker):
    worker = make_worker(slots=2, **endless())
    first = worker.submit(SYSTEM, ENDLESS_PROMPT, control_tools=False)
    second = worker.submit(SYSTEM, "Write a story that never ends.", control_tools=False)
    assert {first.slot, second.slot} == {0, 1}
    assert worker.submit(SYSTEM, QUESTION) is NO_SLOT_AVAILABLE
    assert worker.status().slots_used == 2
    poll(lambda: worker.get_status(first.id).partial_length > 0, "first request streaming")

    assert worker.cancel(first.id) is True
    assert worker.get_status(first.id).state is RequestState.CANCELED
    assert worker.get_result(first.id).reason == "canceled"
    assert worker.cancel(first.id) is False  # already ended

    third = submit_when_free(worker, SYSTEM, QUESTION, control_tools=False)
    assert third.slot == first.slot
    assert wait_result(worker, third.id).content == "The capital of France is Paris."
    assert worker.get_status(second.id).state is RequestState.RUNNING  # the other slot was never touched
    worker.cancel(second.id)
    assert worker.status().restart_count == 0


def test_absolute_timeout_fails_that_request_without_a_restart(make_worker):
    worker = make_worker(timeouts=TimeoutProfile(absolute=2.0), **endless())
    pid = worker.status().pid
    handle = worker.submit(SYSTEM, ENDLESS_PROMPT, control_tools=False)
    result = wait_result(worker, handle.id)
    assert result.state is RequestState.FAILED and result.reason == "absolute_timeout"
    assert "longer than 2s" in result.detail
    poll(lambda: worker.status().slots_used == 0, "slot freed")
    status = worker.status()
    assert status.healthy and status.pid == pid and status.restart_count == 0


# -- loops ---------------------------------------------------------------------------------------
def test_a_real_smollm2_repetition_loop_is_caught_and_cancelled(make_worker):
    """At temperature 0 SmolLM2 answers this prompt with one fact repeated under growing numbers."""
    worker = make_worker(max_tokens=600)
    handle = worker.submit(SYSTEM, LOOPING_PROMPT, control_tools=False)
    result = wait_result(worker, handle.id)
    assert result.state is RequestState.CANCELED
    assert result.reason == "repeated_line_loop"
    assert "cats are" in result.detail.lower()  # the repeated line itself
    assert result.content.lower().count(result.detail.split(". ", 1)[-1].lower()) >= 6
    assert worker.status().restart_count == 0  # a loop cancels the request, it does not restart the worker
    again = wait_result(worker, submit_when_free(worker, SYSTEM, QUESTION, control_tools=False).id)
    assert again.state is RequestState.COMPLETED
