"""A logging filter that removes the engine's keys from log records of httpx, httpcore and this package.

httpcore logs response headers at DEBUG; a proxy that echoes request headers back would otherwise put a
key in the log. The filter runs only for records that pass the logger's level, so it costs nothing
while DEBUG logging is off.
"""

from __future__ import annotations

import logging
import threading
from typing import Iterable, Set

from jarvis_engine_cloud.credentials import MIN_SCRUB_LENGTH, Secret

__all__ = ["LOGGERS", "protect_logs"]

#: The loggers that can see request or response details.
LOGGERS = (
    "httpx",
    "httpcore.connection",
    "httpcore.http11",
    "httpcore.http2",
    "httpcore.proxy",
    "jarvis_engine_cloud",
)


class _SecretFilter(logging.Filter):
    def __init__(self) -> None:
        super().__init__()
        self.values: Set[str] = set()

    def filter(self, record: logging.LogRecord) -> bool:
        if not self.values:
            return True
        message = record.getMessage()
        hits = [v for v in self.values if v in message]
        if hits:
            for value in hits:
                message = message.replace(value, "***")
            record.msg, record.args = message, None
        return True


_filter = _SecretFilter()
_installed = False
_lock = threading.Lock()


def protect_logs(secrets: Iterable[Secret]) -> None:
    """Scrub ``secrets`` from the records of :data:`LOGGERS` (installs the filter on first use)."""
    global _installed
    with _lock:
        _filter.values.update(s.reveal() for s in secrets if s and len(s.reveal()) >= MIN_SCRUB_LENGTH)
        if not _installed:
            for name in LOGGERS:
                logging.getLogger(name).addFilter(_filter)
            _installed = True
