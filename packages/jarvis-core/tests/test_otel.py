"""jarvis_core.otel: the event bus as OpenTelemetry spans with the GenAI semantic-convention attribute names,
read back from the SDK's InMemorySpanExporter after real calls: a request, a stream, a failed request, and an
agent run with a tool call (agent, tool and model-call spans)."""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("opentelemetry.sdk", reason="jarvis-core[otel] is not installed")

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from jarvis_core.agents.tool_agent import ToolUsingAgent
from jarvis_core.errors import ServerError
from jarvis_core.events import EventBus
from jarvis_core.instrumented import InstrumentedEngine
from jarvis_core.otel import trace_bus
from jarvis_core.testing import FakeEngine
from jarvis_core.tools import BaseTool
from jarvis_core.types import Completion, StreamChunk, ToolCall, ToolSpec, Usage


class Clock(BaseTool):
    spec = ToolSpec("clock", "the time", {"type": "object", "properties": {}})

    def run(self, **arguments):
        return "noon"


class Loop(ToolUsingAgent):
    agent_id = "loop"


@pytest.fixture
def traced():
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    bus = EventBus()
    stop = trace_bus(bus, tracer_provider=provider)
    yield bus, exporter
    stop()


def test_inference_calls_are_chat_spans(traced):
    bus, exporter = traced
    engine = InstrumentedEngine(FakeEngine([
        Completion(content="hi", usage=Usage(7, 2), finish_reason="stop"),
        [StreamChunk(content="a"), StreamChunk(finish_reason="length", usage=Usage(5, 1))],
        ServerError("boom", engine_id="fake", status_code=503),
    ]), bus)
    engine.generate([{"role": "user", "content": "q"}], model="m1", max_tokens=50, temperature=0.2)

    async def consume():
        async for _ in engine.stream_full([{"role": "user", "content": "q"}], model="m2"):
            pass

    asyncio.run(consume())
    with pytest.raises(ServerError):
        engine.generate([{"role": "user", "content": "q"}], model="m3")
    first, streamed, failed = exporter.get_finished_spans()
    assert first.name == "chat m1" and first.kind is SpanKind.CLIENT
    assert dict(first.attributes) == {
        "gen_ai.operation.name": "chat", "gen_ai.provider.name": "fake", "gen_ai.request.model": "m1",
        "gen_ai.request.max_tokens": 50, "gen_ai.request.temperature": 0.2, "jarvis.stream": False,
        "gen_ai.usage.input_tokens": 7, "gen_ai.usage.output_tokens": 2, "gen_ai.response.finish_reasons": ("stop",),
        "jarvis.status": "ok",
    }
    assert streamed.attributes["gen_ai.response.finish_reasons"] == ("length",)
    assert streamed.attributes["jarvis.stream"] is True and "jarvis.ttft_s" in streamed.attributes
    assert failed.status.status_code is StatusCode.ERROR and failed.attributes["error.type"] == "ServerError"


def test_an_agent_run_is_an_agent_span_with_tool_and_model_spans(traced):
    bus, exporter = traced
    engine = InstrumentedEngine(FakeEngine([
        Completion(content="", tool_calls=[ToolCall("c1", "clock", "{}")], usage=Usage(10, 2)),
        Completion(content="It is noon.", usage=Usage(15, 4)),
    ]), bus)
    result = Loop(engine, model="m", tools=[Clock()], bus=bus).run("what time is it?")
    assert result.content == "It is noon."
    spans = {s.name: s for s in exporter.get_finished_spans()}
    assert set(spans) == {"invoke_agent loop", "execute_tool clock", "chat m"}
    agent, tool = spans["invoke_agent loop"], spans["execute_tool clock"]
    assert agent.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert agent.attributes["gen_ai.agent.name"] == "loop" and agent.attributes["gen_ai.usage.input_tokens"] == 25
    assert agent.attributes["jarvis.stop_reason"] == "final"
    assert tool.attributes["gen_ai.tool.name"] == "clock" and tool.attributes["gen_ai.tool.call.id"] == "c1"
    assert tool.status.status_code is StatusCode.UNSET
    assert len([s for s in exporter.get_finished_spans() if s.name == "chat m"]) == 2


# -- nesting: OpenTelemetry's context (contextvars) carries the parent ---------------------------------------
class SlowClock(BaseTool):
    """Runs on a worker thread and takes a moment, so two concurrent runs overlap."""

    spec = ToolSpec("clock", "the time", {"type": "object", "properties": {}})

    def run(self, **arguments):
        import time

        time.sleep(0.2)
        return "noon"


def _script():
    return FakeEngine([
        Completion(content="", tool_calls=[ToolCall("c1", "clock", "{}")], usage=Usage(10, 2)),
        Completion(content="It is noon.", usage=Usage(15, 4)),
    ])


def _tree(exporter):
    """name -> span, and span id -> the names of its children."""
    spans = list(exporter.get_finished_spans())
    children = {}
    for s in spans:
        if s.parent is not None:
            children.setdefault(s.parent.span_id, []).append(s.name)
    return spans, children


def _runs_are_trees(exporter, runs):
    """Each ``invoke_agent`` span is the parent of its own two model calls and its tool call, and of nothing
    else; the agent spans are not each other's parents."""
    spans, children = _tree(exporter)
    agents = [s for s in spans if s.name.startswith("invoke_agent")]
    assert len(agents) == runs
    for agent in agents:
        assert sorted(children[agent.context.span_id]) == ["chat m", "chat m", "execute_tool clock"]
    agent_ids = {a.context.span_id for a in agents}
    assert not any(a.parent is not None and a.parent.span_id in agent_ids for a in agents)
    return agents


def test_a_sync_run_nests_its_model_and_tool_spans_under_the_callers_span(traced):
    from opentelemetry import trace

    bus, exporter = traced
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    outer_tracer = provider.get_tracer("app")
    with outer_tracer.start_as_current_span("request") as outer:
        Loop(InstrumentedEngine(_script(), bus), model="m", tools=[Clock()], bus=bus).run("what time is it?")
        assert trace.get_current_span() is outer  # the run gave the context back
    (agent,) = _runs_are_trees(exporter, 1)
    assert agent.parent.span_id == outer.get_span_context().span_id
    assert agent.context.trace_id == outer.get_span_context().trace_id
    assert trace.get_current_span() is trace.INVALID_SPAN


def test_concurrent_async_runs_are_separate_trees(traced):
    bus, exporter = traced

    async def both():
        agents = [Loop(InstrumentedEngine(_script(), bus), model="m", tools=[SlowClock()], bus=bus) for _ in range(2)]
        await asyncio.gather(*(a.arun("what time is it?") for a in agents))

    asyncio.run(both())
    first, second = sorted(_runs_are_trees(exporter, 2), key=lambda s: s.start_time)
    assert first.start_time < second.start_time < first.end_time  # they did overlap
    assert first.parent is None and second.parent is None


def test_concurrent_sync_runs_in_threads_are_separate_trees(traced):
    import threading

    bus, exporter = traced
    agents = [Loop(InstrumentedEngine(_script(), bus), model="m", tools=[SlowClock()], bus=bus) for _ in range(2)]
    threads = [threading.Thread(target=a.run, args=("what time is it?",)) for a in agents]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    first, second = sorted(_runs_are_trees(exporter, 2), key=lambda s: s.start_time)
    assert first.start_time < second.start_time < first.end_time


def test_a_streamed_sdk_run_nests_across_its_pieces(traced):
    """``Jarvis.ask_stream_sync`` drives the run one piece at a time, each on the private loop: the pieces
    share one context, so the second model call is still the agent's child."""
    from jarvis_core.config import JarvisConfig
    from jarvis_core.sdk import Jarvis
    from jarvis_core.testing import installed_registry, simple_plugin

    bus, exporter = traced
    plugin = simple_plugin("otel-test", agents={"loop": Loop}, tools={"clock": Clock})
    engine = FakeEngine([  # text before the tool call: the first piece ends while the first model call is open
        Completion(content="Let me see. ", tool_calls=[ToolCall("c1", "clock", "{}")], usage=Usage(10, 2)),
        Completion(content="It is noon.", usage=Usage(15, 4)),
    ])
    with installed_registry(plugin), Jarvis(engine=engine, model="m", config=JarvisConfig(), bus=bus,
                                            agent="loop", tools=["clock"]) as j:
        assert "".join(j.ask_stream_sync("what time is it?")) == "Let me see. It is noon."
    _runs_are_trees(exporter, 1)


def test_parallel_sync_tool_calls_nest_under_the_callers_span(traced):
    """``ToolExecutor.execute_many`` runs each call on a thread of its own, in a copy of the caller's context."""
    from jarvis_core.tools.executor import ToolExecutor

    bus, exporter = traced
    tracer = TracerProvider().get_tracer("app")
    with tracer.start_as_current_span("step") as outer:
        results = ToolExecutor([SlowClock()], bus=bus, run_id="r1").execute_many(
            [ToolCall("c1", "clock", "{}"), ToolCall("c2", "clock", "{}")])
    assert [r.ok for r in results] == [True, True]
    spans = exporter.get_finished_spans()
    assert sorted(s.name for s in spans) == ["execute_tool clock", "execute_tool clock"]
    assert all(s.parent is not None and s.parent.span_id == outer.get_span_context().span_id for s in spans)
