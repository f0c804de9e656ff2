"""A managed agent's run on a real server, followed from the default event bus as ``jarvis serve`` follows it:
its OpenTelemetry spans form one tree (the ``invoke_agent`` span the parent of its ``chat`` and
``execute_tool`` spans, read back from the SDK's InMemorySpanExporter), and ``/metrics`` counts the run and its
tool call (the server's agents publish on the default bus)."""

from __future__ import annotations

import httpx
import pytest

pytest.importorskip("opentelemetry.sdk", reason="jarvis-core[otel] is not installed")

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from prometheus_client.parser import text_string_to_metric_families

from jarvis_core.events import default_bus
from jarvis_core.instrumented import InstrumentedEngine
from jarvis_core.otel import trace_bus
from jarvis_core.testing import FakeEngine
from jarvis_core.types import Completion, StreamChunk, ToolCall, Usage


@pytest.fixture
def spans():
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    stop = trace_bus(default_bus(), tracer_provider=provider)
    yield exporter
    stop()


def test_a_managed_run_is_one_trace_and_is_counted(managed, spans):
    engine = InstrumentedEngine(FakeEngine([
        Completion(tool_calls=[ToolCall("c1", "add", '{"a": 2, "b": 3}')], usage=Usage(10, 5)),
        [StreamChunk(content="It is 5."), StreamChunk(finish_reason="stop", usage=Usage(20, 4))],
    ]))
    server, _ = managed(engine)
    url = server.url + "/v1/managed-agents"
    agent = httpx.post(url, json={"name": "a", "agent_type": "tool-user", "config": {"tools": ["add"]}}).json()
    with httpx.stream("POST", f"{url}/{agent['id']}/messages", json={"content": "2+3?", "stream": True},
                      timeout=30) as reply:
        assert reply.status_code == 200 and b"[DONE]" in reply.read()

    finished = spans.get_finished_spans()
    (run,) = [s for s in finished if s.name.startswith("invoke_agent")]
    children = sorted(s.name for s in finished if s.parent is not None and s.parent.span_id == run.context.span_id)
    assert children == ["chat fake-model", "chat fake-model", "execute_tool add"]
    assert run.parent is None and all(s.context.trace_id == run.context.trace_id for s in finished)

    metrics = {(s.name, tuple(sorted(s.labels.items()))): s.value
               for family in text_string_to_metric_families(httpx.get(server.url + "/metrics").text)
               for s in family.samples}
    agent_runs = [v for (name, labels), v in metrics.items()
                  if name == "jarvis_agent_runs_total" and ("stop_reason", "final") in labels]
    assert agent_runs == [1.0]
    assert metrics[("jarvis_tool_calls_total", (("ok", "true"), ("tool", "add")))] == 1.0


def test_a_streamed_agent_chat_nests_across_the_handler_and_the_stream(managed, spans):
    """The first event is awaited in the request's handler, the rest read by the response's stream: the
    model call's span is the run's child all the same."""
    import openai

    engine = InstrumentedEngine(FakeEngine([[StreamChunk(content="Hel"), StreamChunk(content="lo."),
                                             StreamChunk(finish_reason="stop", usage=Usage(4, 2))]]))
    server, _ = managed(engine, agent="plain")
    client = openai.OpenAI(base_url=server.url + "/v1", api_key="unused", max_retries=0)
    chunks = client.chat.completions.create(model="fake-model", messages=[{"role": "user", "content": "Hi?"}],
                                            stream=True)
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "Hello."
    finished = spans.get_finished_spans()
    (run,) = [s for s in finished if s.name.startswith("invoke_agent")]
    (chat,) = [s for s in finished if s.name == "chat fake-model"]
    assert chat.parent is not None and chat.parent.span_id == run.context.span_id
