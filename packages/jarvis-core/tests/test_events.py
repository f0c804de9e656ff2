"""The event bus: typed events, filtering, unsubscribe, isolation of failing subscribers, thread safety."""

from __future__ import annotations

import logging
import threading

import attrs
import pytest

from jarvis_core import events
from jarvis_core.events import Event, EventBus, EventType, default_bus, publish


def test_event_types_have_stable_string_values():
    assert str(EventType.INFERENCE_START) == "inference.start"
    assert EventType("agent.turn.end") is EventType.AGENT_TURN_END
    required = {
        "AGENT_TURN_START", "AGENT_TURN_END", "TOOL_CALL_START", "TOOL_CALL_END", "INFERENCE_START",
        "INFERENCE_END", "TOOLS_DROPPED", "ENGINE_FALLBACK", "PROMPT_TRUNCATED", "REQUEST_RETRY",
    }
    assert required <= set(EventType.__members__)
    assert len({t.value for t in EventType}) == len(EventType)


def test_publish_delivers_typed_event_to_matching_subscribers():
    bus = EventBus()
    every, starts = [], []
    bus.subscribe(every.append)
    bus.subscribe(starts.append, EventType.INFERENCE_START)
    event = bus.publish(EventType.INFERENCE_START, model="m")
    bus.publish(EventType.INFERENCE_END, ok=True)
    assert isinstance(event, Event) and event.data == {"model": "m"} and event.timestamp > 0
    assert starts == [event]
    assert [e.type for e in every] == [EventType.INFERENCE_START, EventType.INFERENCE_END]


def test_events_are_immutable():
    event = EventBus().publish(EventType.TOOL_CALL_START, name="calc")
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        event.type = EventType.TOOL_CALL_END  # type: ignore[misc]


def test_unsubscribe_is_idempotent():
    bus = EventBus()
    seen = []
    unsubscribe = bus.subscribe(seen.append)
    unsubscribe()
    unsubscribe()
    bus.publish(EventType.INFERENCE_START)
    assert seen == []


def test_failing_subscriber_is_logged_and_isolated(caplog):
    bus = EventBus()
    before, after = [], []

    def broken(event):
        raise ValueError("subscriber exploded")

    bus.subscribe(before.append)
    bus.subscribe(broken)
    bus.subscribe(after.append)
    with caplog.at_level(logging.ERROR, logger="jarvis_core.events"):
        event = bus.publish(EventType.AGENT_TURN_START, turn=1)
    assert before == [event] and after == [event]
    assert "subscriber exploded" in caplog.text and "agent.turn.start" in caplog.text


def test_subscriber_may_unsubscribe_while_being_called():
    bus = EventBus()
    calls = []
    holder = {}

    def once(event):
        calls.append(event)
        holder["unsub"]()

    holder["unsub"] = bus.subscribe(once)
    bus.publish(EventType.TOOL_CALL_END)
    bus.publish(EventType.TOOL_CALL_END)
    assert len(calls) == 1


def test_publish_from_many_threads():
    bus = EventBus()
    seen = []
    lock = threading.Lock()

    def record(event):
        with lock:
            seen.append(event.data["i"])

    bus.subscribe(record)
    threads = [
        threading.Thread(target=lambda k=k: [bus.publish(EventType.REQUEST_RETRY, i=k * 100 + j) for j in range(100)])
        for k in range(8)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(seen) == list(range(800))


def test_default_bus_is_a_singleton_and_publish_uses_it():
    assert default_bus() is default_bus()
    seen = []
    unsubscribe = default_bus().subscribe(seen.append, EventType.ENGINE_FALLBACK)
    try:
        event = publish(EventType.ENGINE_FALLBACK, asked="vllm", used="ollama")
    finally:
        unsubscribe()
    assert seen == [event] and event.data["used"] == "ollama"


def test_default_bus_creation_is_thread_safe(monkeypatch):
    monkeypatch.setattr(events, "_default", None)
    got = []
    barrier = threading.Barrier(8)

    def make():
        barrier.wait()
        got.append(default_bus())

    threads = [threading.Thread(target=make) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len({id(b) for b in got}) == 1
