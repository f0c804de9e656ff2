"""What is remembered about an operator's ticks, in the operator's state store, under ``operators/<id>``
(outside the ``operator:<id>:`` keys its model can write).

A record holds the agent key, the instruction, the schedule, tick and failure counts, and the last
``RECENT`` ticks (time, outcome, stop reason, the start of the answer or the error). The
:class:`~.scheduler.TaskScheduler` writes it after every tick; ``jarvis operators list`` and ``show`` read it.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional

import attrs

from jarvis_core.stores import StateStore

__all__ = ["PREFIX", "RECENT", "TickRecord", "get_record", "list_records", "save_tick"]

PREFIX = "operators/"
RECENT = 10


@attrs.frozen
class TickRecord:
    """One tick: when it ran (epoch seconds), whether it went well (it raised nothing and did not end with
    ``stop_reason="error"``), its stop reason, its answer and, when it failed, the error
    (``"TypeName: message"``)."""

    operator_id: str
    tick: int
    started_at: float
    ended_at: float
    ok: bool
    stop_reason: Optional[str] = None
    content: str = ""
    error: Optional[str] = None

    def to_json(self) -> Dict[str, Any]:
        """The record as a JSON object."""
        return attrs.asdict(self)


def save_tick(state: StateStore, record: TickRecord, *, agent: str, instruction: str, schedule: str) -> None:
    """Add ``record`` to its operator's record (created on the first tick)."""
    key = PREFIX + record.operator_id
    current = state.get(key) or {}
    recent = [*current.get("recent", []), {**record.to_json(), "content": record.content[:500]}][-RECENT:]
    state.put(key, {
        "operator_id": record.operator_id,
        "agent": agent,
        "instruction": instruction,
        "schedule": schedule,
        "ticks": int(current.get("ticks", 0)) + 1,
        "failures": int(current.get("failures", 0)) + (0 if record.ok else 1),
        "created_at": current.get("created_at", record.started_at),
        "last": recent[-1],
        "recent": recent,
    })


def get_record(state: StateStore, operator_id: str) -> Optional[Dict[str, Any]]:
    """The record of ``operator_id``, or ``None`` when it never ticked through a scheduler."""
    value = state.get(PREFIX + operator_id)
    return value if isinstance(value, dict) else None


def list_records(state: StateStore) -> List[Dict[str, Any]]:
    """Every operator's record, by operator id."""
    found = [v for _k, v in state.items(PREFIX) if isinstance(v, dict)]
    return sorted(found, key=lambda r: str(r.get("operator_id", "")))
