"""``GET /metrics``: Prometheus metrics of ``jarvis serve``, fed from the event bus, through the maintained
``prometheus-client``.

The mount (``jarvis.server_mounts`` entry point ``metrics``) subscribes to the process's default event bus
while the server runs, so it counts what the served engine (``jarvis serve`` wraps it in an
:class:`~jarvis_core.instrumented.InstrumentedEngine`), the agents and their tools publish. It is served
behind the same security layer as every route (the ``Host`` allow-list and the bearer token).

Metrics (all prefixed ``jarvis_``): ``requests_total`` {engine, model, stream, status}, ``request_errors_total``
{engine, error_type}, ``request_duration_seconds`` and ``time_to_first_token_seconds`` histograms {engine,
model}, ``tokens_total`` {engine, model, kind = prompt | completion}, ``active_streams`` {engine},
``agent_runs_total`` {agent, stop_reason}, ``tool_calls_total`` {tool, ok}, ``retries_total`` {engine, status},
``fallbacks_total`` {requested, used} and ``http_error_responses_total`` {route, status, error_type}: every
request answered with an error status, the ones refused before the engine (bad JSON, body too large,
unsupported field, authentication, unknown path) included, labelled by route template and error code only
(:mod:`jarvis_server.error_responses`). A label fed by a client (the model name) keeps at most
:data:`MAX_LABEL_VALUES` distinct values; the rest are counted as ``other``, and a model the engine does not
know is counted as ``unknown``, so no client can grow the registry without bound.
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any, AsyncIterator, Callable, Dict, Optional, Set

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, make_asgi_app

from jarvis_core.events import Event, EventBus, EventType, default_bus

__all__ = ["MAX_LABEL_VALUES", "ServerMetrics", "mount"]

#: Distinct values a label may take before further ones are counted as ``other``.
MAX_LABEL_VALUES = 100
_LATENCY_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300)
_TTFT_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)


class _Bounded:
    """Label values as given until :data:`MAX_LABEL_VALUES` distinct ones were seen, then ``other``."""

    def __init__(self) -> None:
        self._seen: Set[str] = set()
        self._lock = threading.Lock()

    def __call__(self, value: Any) -> str:
        text = str(value or "")[:200] or "unknown"
        with self._lock:
            if text in self._seen:
                return text
            if len(self._seen) < MAX_LABEL_VALUES:
                self._seen.add(text)
                return text
        return "other"


class ServerMetrics:
    """The metrics of one server, in their own :class:`CollectorRegistry`, updated by bus events."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.requests = Counter("jarvis_requests", "Inference requests, by how they ended.",
                                ["engine", "model", "stream", "status"], registry=r)
        self.errors = Counter("jarvis_request_errors", "Failed inference requests, by error type.",
                              ["engine", "error_type"], registry=r)
        self.latency = Histogram("jarvis_request_duration_seconds", "Inference request duration.",
                                 ["engine", "model"], buckets=_LATENCY_BUCKETS, registry=r)
        self.ttft = Histogram("jarvis_time_to_first_token_seconds", "Time to the first streamed piece.",
                              ["engine", "model"], buckets=_TTFT_BUCKETS, registry=r)
        self.tokens = Counter("jarvis_tokens", "Tokens the engines reported.", ["engine", "model", "kind"], registry=r)
        self.active_streams = Gauge("jarvis_active_streams", "Streams in progress.", ["engine"], registry=r)
        self.agent_runs = Counter("jarvis_agent_runs", "Agent runs, by how they ended.", ["agent", "stop_reason"],
                                  registry=r)
        self.tool_calls = Counter("jarvis_tool_calls", "Tool calls, by tool and outcome.", ["tool", "ok"], registry=r)
        self.retries = Counter("jarvis_retries", "Requests retried.", ["engine", "status"], registry=r)
        self.fallbacks = Counter("jarvis_fallbacks", "Requests sent to a fallback engine.", ["requested", "used"],
                                 registry=r)
        self.error_responses = Counter("jarvis_http_error_responses",
                                       "Requests answered with an error status, by route and error code.",
                                       ["route", "status", "error_type"], registry=r)
        self._model = _Bounded()
        self._name = _Bounded()
        self._handlers: Dict[EventType, Callable[[Event], None]] = {
            EventType.INFERENCE_START: self._start, EventType.INFERENCE_END: self._end,
            EventType.AGENT_TURN_END: self._agent, EventType.TOOL_CALL_END: self._tool,
            EventType.REQUEST_RETRY: self._retry, EventType.ENGINE_FALLBACK: self._fallback,
            EventType.HTTP_ERROR_RESPONSE: self._error_response,
        }

    def observe(self, event: Event) -> None:
        """Update the metrics from one bus event (other events are ignored)."""
        handler = self._handlers.get(event.type)
        if handler is not None:
            handler(event)

    def subscribe(self, bus: EventBus) -> Callable[[], None]:
        """Follow ``bus``; returns the unsubscribe function."""
        return bus.subscribe(self.observe)

    def _start(self, event: Event) -> None:
        if event.data.get("stream"):
            self.active_streams.labels(self._name(event.data.get("engine"))).inc()

    def _end(self, event: Event) -> None:
        d = event.data
        engine = self._name(d.get("engine"))
        # A model the engine does not know is a client's word: not a label value of its own.
        model = "unknown" if d.get("error_type") == "ModelNotFoundError" else self._model(d.get("model"))
        streamed = "chunks" in d
        if streamed:
            self.active_streams.labels(engine).dec()
        self.requests.labels(engine, model, str(streamed).lower(), str(d.get("status") or "unknown")).inc()
        if d.get("status") == "error":
            self.errors.labels(engine, self._name(d.get("error_type"))).inc()
        latency = d.get("latency_s")
        if isinstance(latency, (int, float)):
            self.latency.labels(engine, model).observe(latency)
        ttft = d.get("ttft_s")
        if isinstance(ttft, (int, float)):
            self.ttft.labels(engine, model).observe(ttft)
        usage = d.get("usage")
        if isinstance(usage, dict):
            for kind in ("prompt", "completion"):
                count = usage.get(f"{kind}_tokens")
                if isinstance(count, int) and count > 0:
                    self.tokens.labels(engine, model, kind).inc(count)

    def _agent(self, event: Event) -> None:
        self.agent_runs.labels(self._name(event.data.get("agent")), str(event.data.get("stop_reason"))).inc()

    def _tool(self, event: Event) -> None:
        self.tool_calls.labels(self._name(event.data.get("name")), str(bool(event.data.get("ok"))).lower()).inc()

    def _retry(self, event: Event) -> None:
        self.retries.labels(self._name(event.data.get("engine")), str(event.data.get("status") or "none")).inc()

    def _error_response(self, event: Event) -> None:
        d = event.data
        self.error_responses.labels(self._name(d.get("route")), str(d.get("status")),
                                    self._name(d.get("error_type"))).inc()

    def _fallback(self, event: Event) -> None:
        self.fallbacks.labels(self._name(event.data.get("requested")), self._name(event.data.get("used"))).inc()


def mount(config: Any, *, bus: Optional[EventBus] = None) -> Any:
    """The ``/metrics`` mount (the ``jarvis.server_mounts`` entry point): a fresh :class:`ServerMetrics` that
    follows ``bus`` (default: the default bus) while the server runs."""
    from jarvis_server.mounts import ServerMount

    metrics = ServerMetrics()
    followed = bus if bus is not None else default_bus()

    @contextlib.asynccontextmanager
    async def lifespan() -> AsyncIterator[None]:
        unsubscribe = metrics.subscribe(followed)
        try:
            yield
        finally:
            unsubscribe()

    return ServerMount("/metrics", _ASGIApp(make_asgi_app(registry=metrics.registry)), lifespan=lifespan)


class _ASGIApp:
    """An ASGI app as an object: starlette takes a plain function endpoint for a request handler."""

    def __init__(self, app: Callable[..., Any]) -> None:
        self._app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        await self._app(scope, receive, send)
