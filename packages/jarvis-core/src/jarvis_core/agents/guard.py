"""The loop guard: stops a model that repeats the same tool call. One guard per run, never per agent."""

from __future__ import annotations

import json
from typing import Dict, Optional, Tuple

import attrs

from jarvis_core.types import ToolCall

__all__ = ["LoopGuard", "LoopGuardConfig"]


@attrs.frozen
class LoopGuardConfig:
    """``max_identical_calls``: how often one exact call (same name, same arguments) may run in a run.
    The next identical call is not run; the model gets a message saying why. ``max_blocked``: how many
    such refusals before the run stops with ``stop_reason="loop_guard"``."""

    max_identical_calls: int = 3
    max_blocked: int = 1


#: One encoder for every key (json.dumps with options builds a new encoder per call, on every tool call).
_CANONICAL = json.JSONEncoder(sort_keys=True)


def _key(call: ToolCall) -> Tuple[str, str]:
    try:
        args = _CANONICAL.encode(json.loads(call.arguments or "{}"))
    except ValueError:
        args = call.arguments
    return call.name, args


class LoopGuard:
    """Counts identical calls within one run (create one per run)."""

    def __init__(self, config: LoopGuardConfig = LoopGuardConfig()) -> None:
        self.config = config
        self._seen: Dict[Tuple[str, str], int] = {}
        self.blocked = 0

    def check(self, call: ToolCall) -> Optional[str]:
        """``None`` when the call may run; otherwise the message to give the model instead of running it."""
        key = _key(call)
        count = self._seen.get(key, 0) + 1
        self._seen[key] = count
        if count <= self.config.max_identical_calls:
            return None
        self.blocked += 1
        return (f"not run: {call.name!r} was already called {count - 1} times with these exact arguments "
                "and gave the result above; use that result, change the arguments, or give your final answer")

    @property
    def should_stop(self) -> bool:
        """True once the model kept repeating after being told (more than ``max_blocked`` refusals)."""
        return self.blocked > self.config.max_blocked
