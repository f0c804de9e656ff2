"""``GET /metrics``: after real requests to a real server (streamed, not streamed, failed, through an agent
with a tool), the Prometheus text is parsed with prometheus_client's own parser and holds the requests,
errors by type, latency and time-to-first-token histograms, tokens, active streams, agent runs and tool calls;
it is behind the same bearer token as every route, and a client cannot grow its labels without bound."""

from __future__ import annotations

import httpx
import openai
import pytest
from prometheus_client.parser import text_string_to_metric_families

from jarvis_core import errors as E
from jarvis_core.events import Event, EventType
from jarvis_core.instrumented import InstrumentedEngine
from jarvis_core.testing import FakeEngine
from jarvis_core.types import Completion, StreamChunk, Usage
from jarvis_server.metrics import MAX_LABEL_VALUES, ServerMetrics

ASK = [{"role": "user", "content": "q"}]


def scrape(server, token=None):
    headers = {"authorization": f"Bearer {token}"} if token else {}
    reply = httpx.get(server.url + "/metrics", headers=headers, timeout=10)
    return reply


def samples(text):
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def value(found, name, **labels):
    return found.get((name, tuple(sorted(labels.items()))), 0.0)


def test_metrics_after_real_requests(serve):
    engine = InstrumentedEngine(FakeEngine([
        Completion(content="hi", usage=Usage(7, 2)),
        [StreamChunk(content="a"), StreamChunk(content="b"), StreamChunk(finish_reason="stop", usage=Usage(5, 2))],
        E.RateLimitError("slow down", engine_id="fake", status_code=429),
    ]))
    server = serve(engine, engine_key="fake")
    client = openai.OpenAI(base_url=server.url + "/v1", api_key="unused", max_retries=0)
    client.chat.completions.create(model="m", messages=ASK)
    list(client.chat.completions.create(model="m", messages=ASK, stream=True))
    with pytest.raises(openai.RateLimitError):
        client.chat.completions.create(model="m", messages=ASK)

    reply = scrape(server)
    assert reply.status_code == 200 and reply.headers["content-type"].startswith("text/plain")
    found = samples(reply.text)
    assert value(found, "jarvis_requests_total", engine="fake", model="m", stream="false", status="ok") == 1
    assert value(found, "jarvis_requests_total", engine="fake", model="m", stream="true", status="ok") == 1
    assert value(found, "jarvis_requests_total", engine="fake", model="m", stream="false", status="error") == 1
    assert value(found, "jarvis_request_errors_total", engine="fake", error_type="RateLimitError") == 1
    assert value(found, "jarvis_request_duration_seconds_count", engine="fake", model="m") == 3
    assert value(found, "jarvis_time_to_first_token_seconds_count", engine="fake", model="m") == 1
    assert value(found, "jarvis_tokens_total", engine="fake", model="m", kind="prompt") == 12
    assert value(found, "jarvis_tokens_total", engine="fake", model="m", kind="completion") == 4
    assert value(found, "jarvis_active_streams", engine="fake") == 0


def test_metrics_need_the_token(serve):
    server = serve(InstrumentedEngine(FakeEngine(default="x")), token=b"s3cret-token-value")
    assert scrape(server).status_code == 401
    assert scrape(server, "s3cret-token-value").status_code == 200


def test_agent_runs_tool_calls_retries_and_bounded_labels():
    metrics = ServerMetrics()
    metrics.observe(Event(EventType.AGENT_TURN_END, {"agent": "orchestrator", "stop_reason": "final"}))
    metrics.observe(Event(EventType.TOOL_CALL_END, {"name": "calculator", "ok": True}))
    metrics.observe(Event(EventType.REQUEST_RETRY, {"engine": "vllm", "status": 429}))
    metrics.observe(Event(EventType.INFERENCE_START, {"engine": "e", "stream": True}))
    for i in range(MAX_LABEL_VALUES + 50):  # a client naming a new model on every request
        metrics.observe(Event(EventType.INFERENCE_END, {"engine": "e", "model": f"m{i}", "status": "ok",
                                                        "latency_s": 0.1}))
    from prometheus_client import generate_latest

    found = samples(generate_latest(metrics.registry).decode())
    assert value(found, "jarvis_agent_runs_total", agent="orchestrator", stop_reason="final") == 1
    assert value(found, "jarvis_tool_calls_total", tool="calculator", ok="true") == 1
    assert value(found, "jarvis_retries_total", engine="vllm", status="429") == 1
    assert value(found, "jarvis_active_streams", engine="e") == 1
    models = {dict(k[1]).get("model") for k in found if k[0] == "jarvis_requests_total"}
    assert len(models) == MAX_LABEL_VALUES + 1 and "other" in models
    assert value(found, "jarvis_requests_total", engine="e", model="other", stream="false", status="ok") == 50


def test_requests_refused_before_the_engine_are_counted_by_route_and_error_code(serve):
    """Bad JSON, a body too large, an unsupported field, a failed authentication, an unknown path and a model
    the engine does not know: each is counted by route template, status and error code, and nothing the client
    sent (the model name, the path) becomes a label value."""
    from jarvis_server.settings import ServerSettings

    token = "s3cret-token-value"
    engine = InstrumentedEngine(FakeEngine([E.ModelNotFoundError("no such model", engine_id="fake",
                                                                  status_code=404)]))
    server = serve(engine, token=token.encode(), settings=ServerSettings(max_body_bytes=4096))
    client = openai.OpenAI(base_url=server.url + "/v1", api_key=token, max_retries=0)
    auth = {"authorization": f"Bearer {token}", "content-type": "application/json"}
    url = server.url + "/v1/chat/completions"
    assert httpx.post(url, content=b'{"model": ', headers=auth).status_code == 400
    assert httpx.post(url, content=b'{"x": "' + b"a" * 8192 + b'"}', headers=auth).status_code == 413
    with pytest.raises(openai.BadRequestError):
        client.chat.completions.create(model="m", messages=ASK, extra_body={"frobnicate": 1})
    with pytest.raises(openai.AuthenticationError):
        openai.OpenAI(base_url=server.url + "/v1", api_key="wrong-token-value", max_retries=0).models.list()
    assert httpx.get(server.url + "/v1/no-such-route-abc", headers=auth).status_code == 404
    with pytest.raises(openai.NotFoundError):
        client.chat.completions.create(model="nosuch-model-xyz", messages=ASK)

    text = scrape(server, token).text
    found = samples(text)
    name = "jarvis_http_error_responses_total"
    chat = "/v1/chat/completions"
    assert value(found, name, route=chat, status="400", error_type="invalid_request") == 1
    assert value(found, name, route=chat, status="413", error_type="body_too_large") == 1
    assert value(found, name, route=chat, status="400", error_type="unsupported_parameter") == 1
    assert value(found, name, route="/v1/models", status="401", error_type="invalid_api_key") == 1
    assert value(found, name, route="other", status="404", error_type="not_found") == 1
    assert value(found, name, route=chat, status="404", error_type="model_not_found") == 1
    assert value(found, "jarvis_requests_total", engine="fake", model="unknown", stream="false", status="error") == 1
    assert "nosuch-model-xyz" not in text and "no-such-route-abc" not in text and "frobnicate" not in text
