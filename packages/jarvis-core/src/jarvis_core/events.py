"""A small typed event bus.

Publishers call :meth:`EventBus.publish`; subscribers get :class:`Event` objects synchronously in the
publishing thread. A subscriber that raises is logged and isolated: the publisher and the other
subscribers never see its exception. Events carry no secrets: publishers put only ids, names, counts and
timings in ``data``.

Engines and workers that have no bus of their own publish to :func:`default_bus` (through :func:`publish`),
so an application can observe them by subscribing there.
"""

from __future__ import annotations

import enum
import logging
import threading
import time
from typing import Any, Callable, Dict, List, Mapping, Optional

import attrs

__all__ = ["Event", "EventBus", "EventType", "Subscriber", "default_bus", "publish"]

log = logging.getLogger(__name__)


class _EventTypeMeta(enum.EnumMeta):
    # EventType.STREAM_START / STREAM_END were removed in 0.2.0: say so, and what replaces them.
    def __getattr__(cls, name: str) -> Any:
        if name in ("STREAM_START", "STREAM_END"):
            from jarvis_core.deprecation import removed

            raise removed(f"EventType.{name}", f"EventType.INFERENCE_{name[7:]} (its data has stream=True)")
        raise AttributeError(name)


class EventType(str, enum.Enum, metaclass=_EventTypeMeta):
    """Every event jarvis publishes. Plugins may publish these; add new members only in the core, and only
    with a publisher (tests/test_event_types_published.py checks that each member has one)."""

    #: An inference call started / ended (``InstrumentedEngine``; streams say ``stream=True``).
    INFERENCE_START = "inference.start"
    INFERENCE_END = "inference.end"
    #: An agent run started / ended (``BaseAgent``).
    AGENT_TURN_START = "agent.turn.start"
    AGENT_TURN_END = "agent.turn.end"
    #: A tool call started / ended (the core's ``ToolExecutor``).
    TOOL_CALL_START = "tool.call.start"
    TOOL_CALL_END = "tool.call.end"
    #: An agent chose how it talks to the model (``mode="auto"`` announces its pick; never silent).
    AGENT_MODE_CHOSEN = "agent.mode_chosen"
    #: An engine dropped the tools from a request because the server said it does not support them.
    TOOLS_DROPPED = "engine.tools_dropped"
    #: A different engine than the one asked for is used (only when the user opted in to fallback).
    ENGINE_FALLBACK = "engine.fallback"
    #: The prompt was cut to fit the context window (reported, never silent).
    PROMPT_TRUNCATED = "engine.prompt_truncated"
    #: A request is being retried (rate limit, server error).
    REQUEST_RETRY = "engine.retry"
    #: ``jarvis serve`` answered a request with an error status (``route``, ``status``, ``error_type``).
    HTTP_ERROR_RESPONSE = "server.error_response"
    WORKER_STARTING = "worker.starting"
    WORKER_READY = "worker.ready"
    WORKER_RESTART = "worker.restart"
    WORKER_GAVE_UP = "worker.gave_up"
    WORKER_REQUEST_END = "worker.request_end"

    def __str__(self) -> str:
        return self.value


@attrs.frozen
class Event:
    """One published event: its type, its data and when it happened (``time.time()``)."""

    type: EventType
    data: Mapping[str, Any] = attrs.field(factory=dict)
    timestamp: float = attrs.field(factory=time.time)


#: A subscriber is any callable taking one :class:`Event`.
Subscriber = Callable[[Event], None]


class EventBus:
    """Synchronous publish/subscribe with per-subscriber fault isolation. Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._subs: Dict[Optional[EventType], List[Subscriber]] = {}

    def subscribe(self, fn: Subscriber, event_type: Optional[EventType] = None) -> Callable[[], None]:
        """Call ``fn`` for every event of ``event_type`` (``None``: every event). Returns an unsubscribe function."""
        with self._lock:
            self._subs.setdefault(event_type, []).append(fn)

        def unsubscribe() -> None:
            with self._lock:
                subs = self._subs.get(event_type, [])
                if fn in subs:
                    subs.remove(fn)

        return unsubscribe

    def has_subscribers(self) -> bool:
        """True when anyone listens (deprecated: publish unconditionally; a bus without subscribers is cheap)."""
        from jarvis_core.deprecation import deprecated

        deprecated("EventBus.has_subscribers", "publish() unconditionally")
        with self._lock:
            return any(self._subs.values())

    def publish(self, event_type: EventType, **data: Any) -> Event:
        """Build an :class:`Event` and deliver it to the matching subscribers; returns the event."""
        event = Event(event_type, data)
        with self._lock:
            targets = [*self._subs.get(event_type, ()), *self._subs.get(None, ())]
        for fn in targets:
            try:
                fn(event)
            except Exception:
                log.exception("event subscriber %r failed on %s; the other subscribers still run", fn, event_type)
        return event


_default: Optional[EventBus] = None
_default_lock = threading.Lock()


def default_bus() -> EventBus:
    """The process-wide bus used by components that were not given one."""
    global _default
    if _default is None:
        with _default_lock:
            if _default is None:
                _default = EventBus()
    return _default


def publish(event_type: EventType, **data: Any) -> Event:
    """Publish on :func:`default_bus`."""
    return default_bus().publish(event_type, **data)
