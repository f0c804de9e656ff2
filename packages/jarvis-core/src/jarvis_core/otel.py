"""OpenTelemetry traces from the event bus: every inference call, agent run and tool call as a span, with the
GenAI semantic-convention attribute names (``gen_ai.*``). Optional: ``pip install 'jarvis-core[otel]'``; off
unless turned on (``jarvis serve`` with ``JARVIS_OTEL=1``, or :func:`trace_bus` from Python)::

    from jarvis_core.events import default_bus
    from jarvis_core.otel import trace_bus

    stop = trace_bus(default_bus())          # spans go to the global tracer provider (OTEL_* configured)

Spans: ``chat {model}`` (``INFERENCE_START`` → ``INFERENCE_END``; kind CLIENT), ``invoke_agent {agent}``
(``AGENT_TURN_START`` → ``AGENT_TURN_END``) and ``execute_tool {tool}`` (``TOOL_CALL_START`` →
``TOOL_CALL_END``). Attributes: ``gen_ai.operation.name``, ``gen_ai.provider.name`` (the engine key),
``gen_ai.request.model``, ``gen_ai.request.max_tokens``, ``gen_ai.request.temperature``,
``gen_ai.usage.input_tokens``, ``gen_ai.usage.output_tokens``, ``gen_ai.response.finish_reasons``,
``gen_ai.agent.name``, ``gen_ai.tool.name``, ``gen_ai.tool.call.id``, and ``error.type`` with an ERROR
status on a failure. No message text, tool arguments or results: the events carry none.

Spans nest through OpenTelemetry's own context (``contextvars``): a span starts as a child of the span current
where its START event is published, and becomes the current span there until its END. The bus delivers events
in the publishing thread and task, so an agent run's ``invoke_agent`` span is the parent of the ``chat`` spans of
its model calls and the ``execute_tool`` spans of its tool calls, and itself a child of whatever span the caller
had open (a web request's, an outer agent's tool call). Sync runs (``agent.run``, in a task of their own) and
async ones alike; concurrent runs are in different tasks or threads, each with its own context, so one never
becomes the other's parent. At END the context goes back to the span's parent (to the nearest ancestor still
open, when the parent ended first); an END published in another context than its START leaves that context
alone.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any, Callable, Dict, Optional

import attrs

from jarvis_core.events import Event, EventBus, EventType

__all__ = ["OTEL_ENV", "SpanExporter", "trace_bus"]

#: The switch ``jarvis serve`` reads.
OTEL_ENV = "JARVIS_OTEL"
#: Spans still open (an END never came) beyond this many are dropped, oldest first.
_MAX_OPEN = 10_000


@attrs.define
class _Open:
    """A span this exporter started: the context it started in, and the entry of its parent span when that is
    one of ours too (to find the nearest ancestor still open when the parent ended first)."""

    span: Any
    parent_context: Any
    parent: Optional[_Open]
    ended: bool = False


class SpanExporter:
    """Turns bus events into spans on ``tracer_provider`` (default: the global one)."""

    def __init__(self, tracer_provider: Any = None) -> None:
        from opentelemetry import context, trace

        self._trace = trace
        self._context = context
        self._tracer = trace.get_tracer("jarvis_core", tracer_provider=tracer_provider)
        self._open: OrderedDict[str, _Open] = OrderedDict()
        self._by_span: Dict[int, _Open] = {}  # id(span) -> its entry, while open
        self._lock = threading.Lock()
        self._handlers: Dict[EventType, Callable[[Dict[str, Any]], None]] = {
            EventType.INFERENCE_START: self._inference_start, EventType.INFERENCE_END: self._inference_end,
            EventType.AGENT_TURN_START: self._agent_start, EventType.AGENT_TURN_END: self._agent_end,
            EventType.TOOL_CALL_START: self._tool_start, EventType.TOOL_CALL_END: self._tool_end,
        }

    def observe(self, event: Event) -> None:
        handler = self._handlers.get(event.type)
        if handler is not None:
            handler(dict(event.data))

    # -- open and close -----------------------------------------------------------------------------
    def _begin(self, key: str, name: str, attributes: Dict[str, Any], *, client: bool = False) -> None:
        kind = self._trace.SpanKind.CLIENT if client else self._trace.SpanKind.INTERNAL
        parent_context = self._context.get_current()
        span = self._tracer.start_span(name, context=parent_context, kind=kind, attributes=_clean(attributes))
        evicted = []
        with self._lock:
            parent = self._by_span.get(id(self._trace.get_current_span(parent_context)))
            entry = _Open(span, parent_context, parent)
            self._open[key] = entry
            self._by_span[id(span)] = entry
            while len(self._open) > _MAX_OPEN:
                evicted.append(self._close(self._open.popitem(last=False)[1]))
        for old in evicted:
            old.end()
        # The span is current where START was published, until its END: what starts there meanwhile nests.
        self._context.attach(self._trace.set_span_in_context(span, parent_context))

    def _close(self, entry: _Open) -> Any:
        """Mark ``entry`` ended (under the lock); returns its span."""
        entry.ended = True
        self._by_span.pop(id(entry.span), None)
        return entry.span

    def _finish(self, key: str, attributes: Dict[str, Any], error_type: Optional[str]) -> None:
        with self._lock:
            entry = self._open.pop(key, None)
            if entry is None:
                return
            span = self._close(entry)
            restored = entry.parent_context
            ancestor = entry.parent
            while ancestor is not None and ancestor.ended:
                restored, ancestor = ancestor.parent_context, ancestor.parent
        span.set_attributes(_clean(attributes))
        if error_type:
            span.set_attribute("error.type", error_type)
            span.set_status(self._trace.Status(self._trace.StatusCode.ERROR, error_type))
        span.end()
        if self._trace.get_current_span() is span:  # END in the context START made current: give it back
            self._context.attach(restored)

    # -- events -------------------------------------------------------------------------------------
    def _inference_start(self, d: Dict[str, Any]) -> None:
        self._begin(f"inf:{d.get('request_id')}", f"chat {d.get('model')}", {
            "gen_ai.operation.name": "chat", "gen_ai.provider.name": d.get("engine"),
            "gen_ai.request.model": d.get("model"), "gen_ai.request.max_tokens": d.get("max_tokens"),
            "gen_ai.request.temperature": d.get("temperature"), "jarvis.stream": d.get("stream"),
        }, client=True)

    def _inference_end(self, d: Dict[str, Any]) -> None:
        usage = d.get("usage") or {}
        finish = d.get("finish_reason")
        self._finish(f"inf:{d.get('request_id')}", {
            "gen_ai.usage.input_tokens": usage.get("prompt_tokens"),
            "gen_ai.usage.output_tokens": usage.get("completion_tokens"),
            "gen_ai.response.finish_reasons": [finish] if finish else None,
            "jarvis.status": d.get("status"), "jarvis.ttft_s": d.get("ttft_s"),
        }, d.get("error_type") if d.get("status") == "error" else None)

    def _agent_start(self, d: Dict[str, Any]) -> None:
        self._begin(f"run:{d.get('run_id')}", f"invoke_agent {d.get('agent')}", {
            "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": d.get("agent"),
            "gen_ai.request.model": d.get("model"),
        })

    def _agent_end(self, d: Dict[str, Any]) -> None:
        usage = d.get("usage")
        stop = d.get("stop_reason")
        self._finish(f"run:{d.get('run_id')}", {
            "gen_ai.usage.input_tokens": getattr(usage, "prompt_tokens", None),
            "gen_ai.usage.output_tokens": getattr(usage, "completion_tokens", None),
            "jarvis.stop_reason": stop, "jarvis.turns": d.get("turns"), "jarvis.tool_calls": d.get("tool_calls"),
        }, "agent_error" if stop == "error" else None)

    def _tool_start(self, d: Dict[str, Any]) -> None:
        # A call id is unique in its run only (models number their calls): the run's id keys it too.
        self._begin(f"tool:{d.get('run_id')}:{d.get('tool_call_id')}", f"execute_tool {d.get('name')}", {
            "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": d.get("name"),
            "gen_ai.tool.call.id": d.get("tool_call_id"),
        })

    def _tool_end(self, d: Dict[str, Any]) -> None:
        self._finish(f"tool:{d.get('run_id')}:{d.get('tool_call_id')}", {"jarvis.outcome": d.get("outcome")},
                     None if d.get("ok") else str(d.get("outcome") or "tool_error"))


def _clean(attributes: Dict[str, Any]) -> Dict[str, Any]:
    # OpenTelemetry takes str, bool, int, float and sequences of them; None means "not known": left out.
    return {k: v for k, v in attributes.items() if v is not None}


def trace_bus(bus: EventBus, tracer_provider: Any = None) -> Callable[[], None]:
    """Turn ``bus``'s events into spans (see the module docs); returns the function that stops it.
    Raises :class:`ImportError` naming the extra when OpenTelemetry is not installed."""
    try:
        exporter = SpanExporter(tracer_provider)
    except ImportError as exc:
        raise ImportError("OpenTelemetry is not installed: pip install 'jarvis-core[otel]'") from exc
    return bus.subscribe(exporter.observe)
