"""InstrumentedEngine: START/END events on every path, stream_full included, everything else forwarded."""

from __future__ import annotations

import asyncio
from typing import Any, List

import pytest

from jarvis_core.engine.base import InferenceEngine
from jarvis_core.engine.http import HTTPEngine
from jarvis_core.errors import EngineConnectionError, InvalidOptionError, ServerError, StreamError
from jarvis_core.events import EventBus, EventType, default_bus
from jarvis_core.instrumented import InstrumentedEngine
from jarvis_core.testing import Exchange, FakeEngine, RecordingBus, ReplayServer
from jarvis_core.types import Completion, Message, StreamChunk, ToolCall, Usage

MSGS = [Message.system("sys"), Message.user("a private question")]
START, END = EventType.INFERENCE_START, EventType.INFERENCE_END


def wrap(*script: Any, **kw: Any):
    bus = RecordingBus()
    return InstrumentedEngine(FakeEngine(list(script), **kw), bus), bus


def only_pair(bus: RecordingBus):
    assert bus.types() == [START, END]
    start, end = bus.events
    assert start.data["request_id"] == end.data["request_id"]
    return start.data, end.data


def no_text_leaks(bus: RecordingBus) -> None:
    for event in bus.events:
        assert "private question" not in repr(event.data)


# -- generate -----------------------------------------------------------------------------------------
def test_generate_success_publishes_start_and_end():
    completion = Completion(content="hi", usage=Usage(3, 2), finish_reason="stop", model="m")
    engine, bus = wrap(completion)
    assert engine.generate(MSGS, model="m", temperature=0.2, max_tokens=9, tools=[{"name": "t"}]) is completion
    start, end = only_pair(bus)
    assert start == {
        "request_id": start["request_id"], "engine": "fake", "model": "m", "method": "generate", "stream": False,
        "messages": 2, "tools": 1, "max_tokens": 9, "temperature": 0.2,
    }
    assert end["status"] == "ok" and end["ok"] is True
    assert end["usage"] == {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}
    assert end["finish_reason"] == "stop" and end["content_chars"] == 2 and end["tool_calls"] == 0
    assert end["latency_s"] >= 0
    assert "error" not in end and "chunks" not in end
    no_text_leaks(bus)


def test_generate_error_still_publishes_end():
    engine, bus = wrap(ServerError("fake: server error (HTTP 500)", engine_id="fake", status_code=500))
    with pytest.raises(ServerError):
        engine.generate(MSGS, model="m")
    _, end = only_pair(bus)
    assert end["status"] == "error" and end["ok"] is False
    assert end["error_type"] == "ServerError"
    assert "HTTP 500" in end["error"]
    assert end["usage"] is None and end["finish_reason"] is None


def test_invalid_option_is_reported_as_an_error_end():
    engine, bus = wrap("never")
    with pytest.raises(InvalidOptionError):
        engine.generate(MSGS, model="m", bogus=1)
    _, end = only_pair(bus)
    assert end["error_type"] == "InvalidOptionError"


def test_agenerate_publishes_one_pair_with_its_own_method():
    completion = Completion(content="hey", usage=Usage(4, 1), finish_reason="stop", model="m")
    engine, bus = wrap(completion)
    assert asyncio.run(engine.agenerate(MSGS, model="m", max_tokens=9)) is completion
    start, end = only_pair(bus)  # the wrapped engine's default agenerate calls its generate: still one pair
    assert start["method"] == "agenerate" and start["stream"] is False
    assert end["status"] == "ok" and end["content_chars"] == 3 and end["finish_reason"] == "stop"
    assert end["usage"] == {"prompt_tokens": 4, "completion_tokens": 1, "total_tokens": 5}
    assert "chunks" not in end
    no_text_leaks(bus)


def test_agenerate_error_and_cancellation_still_publish_end():
    engine, bus = wrap(ServerError("fake: server error (HTTP 502)", engine_id="fake", status_code=502))
    with pytest.raises(ServerError):
        asyncio.run(engine.agenerate(MSGS, model="m"))
    _, end = only_pair(bus)
    assert end["status"] == "error" and end["error_type"] == "ServerError"

    class Slow(FakeEngine):
        async def agenerate(self, messages, **kwargs):
            await asyncio.sleep(30)
            raise AssertionError("not reached")

    bus = RecordingBus()
    slow = InstrumentedEngine(Slow([]), bus)

    async def cancel_it() -> None:
        task = asyncio.ensure_future(slow.agenerate(MSGS, model="m"))
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(cancel_it())
    _, end = only_pair(bus)
    assert end["status"] == "cancelled" and "error" not in end


def test_request_ids_are_distinct():
    engine, bus = wrap("a", "b")
    engine.generate(MSGS, model="m")
    engine.generate(MSGS, model="m")
    ids = [e.data["request_id"] for e in bus.of_type(START)]
    assert len(set(ids)) == 2


# -- streams ------------------------------------------------------------------------------------------
async def test_stream_counts_chunks_and_time_to_first_chunk():
    engine, bus = wrap(["Hel", "lo", StreamChunk(finish_reason="stop", usage=Usage(1, 2))])
    texts = [t async for t in engine.stream(MSGS, model="m")]
    assert texts == ["Hel", "lo"]
    start, end = only_pair(bus)
    assert start["method"] == "stream" and start["stream"] is True
    assert end["status"] == "ok" and end["chunks"] == 2 and end["content_chars"] == 5
    assert end["ttft_s"] is not None and 0 <= end["ttft_s"] <= end["latency_s"]


async def test_stream_full_is_instrumented():
    call = ToolCall("c1", "get_weather", '{"location": "Paris"}')
    chunks = ["It", StreamChunk(content="!", tool_calls=[call], finish_reason="tool_calls", usage=Usage(4, 6))]
    engine, bus = wrap(chunks)
    got = [c async for c in engine.stream_full(MSGS, model="m", tools=[{"name": "get_weather"}])]
    assert [c.content for c in got] == ["It", "!"]
    start, end = only_pair(bus)
    assert start["method"] == "stream_full" and start["tools"] == 1
    assert end["status"] == "ok" and end["chunks"] == 2 and end["tool_calls"] == 1
    assert end["finish_reason"] == "tool_calls"
    assert end["usage"] == {"prompt_tokens": 4, "completion_tokens": 6, "total_tokens": 10}
    no_text_leaks(bus)


async def test_stream_error_mid_way_publishes_end_with_partial_counts():
    broken = StreamError("fake: the stream broke off", engine_id="fake")
    engine, bus = wrap(["one", "two", broken])
    got: List[str] = []
    with pytest.raises(StreamError):
        async for text in engine.stream(MSGS, model="m"):
            got.append(text)
    assert got == ["one", "two"]
    _, end = only_pair(bus)
    assert end["status"] == "error" and end["error_type"] == "StreamError"
    assert end["chunks"] == 2


async def test_stream_full_error_before_first_chunk():
    engine, bus = wrap(EngineConnectionError("fake: cannot reach http://127.0.0.1:1", engine_id="fake"))
    with pytest.raises(EngineConnectionError):
        async for _ in engine.stream_full(MSGS, model="m"):
            pass
    _, end = only_pair(bus)
    assert end["error_type"] == "EngineConnectionError"
    assert end["chunks"] == 0 and end["ttft_s"] is None


async def test_abandoned_stream_is_reported_cancelled():
    engine, bus = wrap(["a", "b", "c"])
    agen = engine.stream_full(MSGS, model="m")
    async for _ in agen:
        break
    await agen.aclose()
    _, end = only_pair(bus)
    assert end["status"] == "cancelled" and end["ok"] is False and "error_type" not in end
    assert end["chunks"] == 1


async def test_task_cancellation_is_reported_cancelled():
    class Slow(FakeEngine):
        async def stream(self, messages, **kw):
            yield "first"
            await asyncio.sleep(3600)
            yield "never"

    bus = RecordingBus()
    engine = InstrumentedEngine(Slow(), bus)
    got: List[str] = []

    async def consume() -> None:
        async for text in engine.stream(MSGS, model="m"):
            got.append(text)

    task = asyncio.create_task(consume())
    while not got:
        await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    _, end = only_pair(bus)
    assert end["status"] == "cancelled" and end["chunks"] == 1


def test_default_stream_of_wrapped_engine_does_not_double_publish():
    class TextOnly(InferenceEngine):
        engine_id = "text-only"

        def generate(self, messages, **kw):
            return Completion(content="x")

        async def stream(self, messages, **kw):
            yield "x"

        def list_models(self):
            return []

        def health(self):
            return True

    bus = RecordingBus()
    engine = InstrumentedEngine(TextOnly(), bus)

    async def run() -> List[StreamChunk]:
        return [c async for c in engine.stream_full(MSGS, model="m")]

    chunks = asyncio.run(run())
    assert [c.finish_reason for c in chunks] == [None, "stop"]
    _, end = only_pair(bus)
    assert end["finish_reason"] == "stop" and end["engine"] == "text-only"


# -- bus, subscribers, secrets ------------------------------------------------------------------------
def test_failing_subscriber_does_not_break_inference(caplog):
    bus = EventBus()
    seen = []

    def bad(event):
        raise RuntimeError("subscriber bug")

    bus.subscribe(bad)
    bus.subscribe(seen.append)
    engine = InstrumentedEngine(FakeEngine(["ok"]), bus)
    assert engine.generate(MSGS, model="m").content == "ok"
    assert [e.type for e in seen] == [START, END]
    assert "subscriber bug" in caplog.text


def test_default_bus_is_used_without_one():
    seen = []
    unsubscribe = default_bus().subscribe(seen.append, END)
    try:
        InstrumentedEngine(FakeEngine(["ok"])).generate(MSGS, model="m")
    finally:
        unsubscribe()
    assert [e.type for e in seen] == [END]


class LeakyEngine(InferenceEngine):
    """A third-party engine with a bug: its exception text includes its key."""

    engine_id = "leaky"

    def __init__(self, api_key: str) -> None:
        self._api_key = api_key

    def generate(self, messages, **kw):
        raise RuntimeError(f"request failed with headers {{'Authorization': 'Bearer {self._api_key}'}}")

    def list_models(self):
        return []

    def health(self):
        return False


def test_key_is_masked_in_error_events():
    secret = "sk-live-abcdef123456"
    bus = RecordingBus()
    engine = InstrumentedEngine(LeakyEngine(secret), bus)
    with pytest.raises(RuntimeError):
        engine.generate(MSGS, model="m")
    _, end = only_pair(bus)
    assert secret not in repr(end) and "***" in end["error"]
    assert secret not in repr(engine)


class MiniHTTP(HTTPEngine):
    engine_id = "mini"
    health_path = "/health"

    def generate(self, messages, *, model, temperature=None, max_tokens=1024, tools=None, **options):
        self.check_options(options)
        body = self.request_json("POST", "/chat", json_body={"model": model}, model=model)
        return Completion(content=body["text"], model=model)

    def list_models(self):
        return [m["id"] for m in self.request_json("GET", "/models")["data"]]


def test_over_real_http_with_replayed_errors():
    exchanges = [
        Exchange("POST", "/chat", status=500, json={"error": {"message": "boom"}}, times=1),
        Exchange("POST", "/chat", json={"text": "fine"}),
        Exchange("GET", "/models", json={"data": [{"id": "a"}]}),
        Exchange("GET", "/health", json={}),
    ]
    bus = RecordingBus()
    with ReplayServer(exchanges) as server, InstrumentedEngine(MiniHTTP(host=server.url, api_key="sk-x123456"), bus) as eng:
        with pytest.raises(ServerError):
            eng.generate(MSGS, model="m")
        assert eng.generate(MSGS, model="m").content == "fine"
        assert eng.list_models() == ["a"] and eng.health() is True
        assert eng.base_url == server.url  # engine-specific attributes are forwarded
        ends = bus.of_type(END)
        assert [e.data["status"] for e in ends] == ["error", "ok"]
        assert ends[0].data["error_type"] == "ServerError"
        assert all("sk-x123456" not in repr(e.data) for e in bus.events)
    assert server.wait_until(lambda s: s.open_connections == 0)  # leaving the with block closed the pool


# -- forwarding ---------------------------------------------------------------------------------------
def test_everything_else_is_forwarded():
    inner = FakeEngine(models=["x", "y"], healthy=False, engine_id="fk", allowed_options={"seed"})
    engine = InstrumentedEngine(inner, RecordingBus())
    assert isinstance(engine, InferenceEngine)
    assert engine.engine_id == "fk" and engine.allowed_options == frozenset({"seed"})
    assert engine.list_models() == ["x", "y"] and engine.health() is False
    engine.prepare("x")
    assert inner.prepared == ["x"]
    engine.check_options({"seed": 1})
    with pytest.raises(InvalidOptionError):
        engine.check_options({"nope": 1})
    assert engine.calls is inner.calls  # engine-specific attribute
    with pytest.raises(AttributeError):
        engine.no_such_attribute  # noqa: B018
    with engine as same:
        assert same is engine
    assert inner.close_count == 1
    engine.close()
    asyncio.run(engine.aclose())
    assert inner.close_count == 3
    assert "FakeEngine" in repr(engine)


async def test_async_context_manager_forwards():
    inner = FakeEngine()
    async with InstrumentedEngine(inner, RecordingBus()) as engine:
        assert isinstance(engine, InstrumentedEngine)
    assert inner.closed
