"""An event bus that remembers what was published, for assertions on events."""

from __future__ import annotations

from typing import List

from jarvis_core.events import Event, EventBus, EventType

__all__ = ["RecordingBus"]


class RecordingBus(EventBus):
    """An :class:`~jarvis_core.events.EventBus` that also keeps every event it published, in order."""

    def __init__(self) -> None:
        super().__init__()
        self.events: List[Event] = []
        self.subscribe(self.events.append)

    def of_type(self, event_type: EventType) -> List[Event]:
        """The recorded events of one type."""
        return [e for e in self.events if e.type == event_type]

    def types(self) -> List[EventType]:
        """The types of the recorded events, in order."""
        return [e.type for e in self.events]

    def clear(self) -> None:
        """Forget the recorded events."""
        self.events.clear()

    def __repr__(self) -> str:
        return f"<RecordingBus {len(self.events)} event(s)>"


