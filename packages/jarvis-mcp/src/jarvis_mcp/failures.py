"""The last failure of each MCP server to start and list its tools, kept next to the cached listings
(``$JARVIS_HOME/mcp/<server>.failed.json``), so a broken server does not cost every command its
``startup_timeout``.

A failure counts only for the config it happened with (the listing cache's fingerprint of ``command``,
``args``, ``env``, ``cwd`` and ``url``: fixing the config retries at once) and only within the server's
``retry_after`` seconds. Discovery skips such a server with one warning; ``jarvis mcp tools`` always
tries it, and a listing made forgets the failure. The record holds the typed error's class, its first line
with the server's secrets and ``env`` values masked, and the time: never an ``env`` or header value.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Optional

import attrs

from jarvis_core.engine.redaction import scrub_text
from jarvis_mcp.catalog import cache_file, config_table, fingerprint
from jarvis_mcp.config import McpServerConfig

__all__ = ["Failure", "failure_file", "forget_failure", "recent_failure", "remember_failure", "skipped_line"]

_MESSAGE_CHARS = 300


@attrs.frozen
class Failure:
    """One remembered failure: the error's class name, its first line (masked) and when (epoch seconds)."""

    error: str
    message: str
    at: float


def failure_file(server: str) -> Path:
    """Where the last failure of ``server`` is kept (beside its cached listing)."""
    listing = cache_file(server)
    return listing.with_name(f"{server}.failed.json")


def _masked(config: McpServerConfig, text: str) -> str:
    # Every env value (not only those named like secrets) and header value: the record outlives the process.
    first = (text.strip().splitlines() or [""])[0][:_MESSAGE_CHARS]
    return scrub_text(first, [*config.secret_values(), *(v for v in config.env.values() if len(v) >= 4)])


def remember_failure(server: str, config: McpServerConfig, error: BaseException, *,
                     now: Optional[float] = None) -> None:
    """Keep ``error`` as ``server``'s last failure with ``config`` (best effort, as the listing cache)."""
    path = failure_file(server)
    doc = {"config": fingerprint(config_table(config)), "error": type(error).__name__,
           "message": _masked(config, str(error)), "at": time.time() if now is None else now}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(doc, indent=1), encoding="utf-8")
        tmp.replace(path)
    except OSError:
        pass


def forget_failure(server: str) -> None:
    """Drop ``server``'s remembered failure (it was listed)."""
    try:
        failure_file(server).unlink()
    except OSError:
        pass


def recent_failure(server: str, config: McpServerConfig, *, now: Optional[float] = None) -> Optional[Failure]:
    """``server``'s failure with this very ``config`` less than its ``retry_after`` seconds ago, else ``None``
    (none kept, another config, an unreadable record, or a time in the future: the clock moved)."""
    if config.retry_after <= 0:
        return None
    try:
        doc: Any = json.loads(failure_file(server).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(doc, dict) or doc.get("config") != fingerprint(config_table(config)):
        return None
    at, error, message = doc.get("at"), doc.get("error"), doc.get("message")
    if not isinstance(at, (int, float)) or not isinstance(error, str) or not isinstance(message, str):
        return None
    age = (time.time() if now is None else now) - at
    if not 0 <= age < config.retry_after:
        return None
    return Failure(error=error, message=message, at=float(at))


def _ago(seconds: float) -> str:
    if seconds < 90:
        return f"{int(seconds)} s"
    if seconds < 90 * 60:
        return f"{round(seconds / 60)} min"
    return f"{round(seconds / 3600)} h"


def skipped_line(server: str, config: McpServerConfig, failure: Failure, *, now: Optional[float] = None) -> str:
    """The one warning for a server discovery does not start: when and how it failed, and until when."""
    age = (time.time() if now is None else now) - failure.at
    try:
        until = "until " + time.strftime("%H:%M", time.localtime(failure.at + config.retry_after))
    except (OverflowError, ValueError, OSError):  # retry_after = inf
        until = "until its config changes"
    return (f"MCP server {server!r} failed {_ago(age)} ago ({failure.error}: {failure.message}); "
            f"not retried {until}, or run jarvis mcp tools {server}")
