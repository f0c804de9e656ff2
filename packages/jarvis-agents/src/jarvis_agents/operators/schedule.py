"""When an operator ticks: :class:`Schedule` (every N seconds, a cron expression, or only when asked).

Cron expressions are read by ``croniter``, an optional dependency (``pip install 'jarvis-agents[cron]'``).
Without it a cron schedule is a :class:`~jarvis_core.errors.ConfigError` naming that extra; it never falls
back to another interval.
"""

from __future__ import annotations

import datetime
import importlib
import re
from typing import Any, Optional

import attrs

from jarvis_core.errors import ConfigError

__all__ = ["CRON_EXTRA", "Schedule", "parse_every"]

CRON_EXTRA = "pip install 'jarvis-agents[cron]'"
_EVERY = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|sec|secs|seconds?|m|min|mins|minutes?|h|hr|hours?|d|days?)?\s*$",
                    re.IGNORECASE)
_UNITS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_every(text: str) -> float:
    """``"60s"``, ``"5m"``, ``"1.5h"``, ``"2d"``, ``"250ms"`` or plain seconds (``"90"``) → seconds (> 0)."""
    match = _EVERY.match(str(text))
    if not match:
        raise ConfigError(f"--every {text!r} is not a duration; write e.g. 30s, 5m, 2h or 1d", key="every")
    unit = (match.group(2) or "s").lower()
    key = "ms" if unit == "ms" else "h" if unit.startswith("h") else unit[0]
    seconds = float(match.group(1)) * _UNITS[key]
    if seconds <= 0:
        raise ConfigError(f"--every {text!r} must be longer than zero", key="every")
    return seconds


def _croniter() -> Any:
    try:
        return importlib.import_module("croniter").croniter
    except ImportError:
        raise ConfigError(f"cron schedules need the croniter package, which is not installed: {CRON_EXTRA} "
                          "(or use an interval such as --every 60s)", key="cron") from None


@attrs.frozen
class Schedule:
    """``every`` seconds, or the cron expression ``cron`` (local time), or neither (ticks only when asked).

    :raises ConfigError: both given, a bad interval or expression, or a cron expression without croniter.
    """

    every: Optional[float] = None
    cron: Optional[str] = None

    def __attrs_post_init__(self) -> None:
        if self.every is not None and self.cron is not None:
            raise ConfigError("give an interval or a cron expression, not both")
        if self.every is not None and not self.every > 0:
            raise ConfigError(f"an interval must be longer than zero, got {self.every!r}", key="every")
        if self.cron is not None:
            if not _croniter().is_valid(self.cron):
                raise ConfigError(f"{self.cron!r} is not a cron expression (five fields: minute hour day month "
                                  "weekday, e.g. '*/15 * * * *')", key="cron")

    @property
    def manual(self) -> bool:
        """Whether this schedule never ticks by itself."""
        return self.every is None and self.cron is None

    def next_after(self, moment: float) -> Optional[float]:
        """The first tick time (epoch seconds) after ``moment``; ``None`` for a manual schedule."""
        if self.every is not None:
            return moment + self.every
        if self.cron is not None:
            start = datetime.datetime.fromtimestamp(moment).astimezone()
            return float(_croniter()(self.cron, start).get_next(float))
        return None

    def describe(self) -> str:
        """``every 60s``, ``cron '*/5 * * * *'`` or ``manual``."""
        if self.every is not None:
            return f"every {self.every:g}s"
        if self.cron is not None:
            return f"cron {self.cron!r}"
        return "manual"
