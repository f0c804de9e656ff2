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
