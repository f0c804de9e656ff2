"""Keeping keys out of what the user and the logs see: one mask, one way to apply it.

Servers and proxies sometimes quote the key they were sent: in an error body, in an error payload inside
a 200 reply, in a malformed stream line, in a response header. Every text that came from a server passes
through an engine's :meth:`~jarvis_core.engine.base.InferenceEngine.redact` before it becomes an exception
message, an event or a log record; the engine says which keys it holds in one place,
:meth:`~jarvis_core.engine.base.InferenceEngine.secret_values`. This module holds the pieces that do the
masking, and :data:`MASK`, what a secret is shown as everywhere: in server texts, in ``Secret`` reprs, in
``jarvis config show`` and in config reprs.
"""

from __future__ import annotations

import logging
import threading
from typing import Any, Iterable, Mapping, Optional, Set, Tuple

__all__ = ["LOGGERS", "MASK", "MIN_SECRET_LENGTH", "Secret", "protect_logs", "scrub_error", "scrub_text", "scrub_value"]

#: What a key is replaced by.
MASK = "***"
#: Shorter "keys" (test placeholders such as ``x``) are not masked: replacing them would garble every message.
MIN_SECRET_LENGTH = 8
#: The loggers that can see request or response details (httpcore logs response headers at DEBUG; aiohttp,
#: the engines' async transport, logs connection failures; the MCP SDK's client logs every message at DEBUG).
LOGGERS = ("httpx", "httpcore.connection", "httpcore.http11", "httpcore.http2", "httpcore.proxy", "aiohttp.client",
           "aiohttp.internal", "jarvis_core", "jarvis_engine_ollama", "jarvis_engine_openai_compat", "jarvis_engine_cloud",
           "httpx2", "mcp.client.streamable_http", "mcp.client.stdio", "mcp.client.client",
           "mcp.shared.jsonrpc_dispatcher", "jarvis_mcp.client")


class Secret:
    """A string that does not print itself. :meth:`reveal` is the one way to read it."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        """The secret itself (only for building request headers)."""
        return self._value

    def __repr__(self) -> str:
        return f"Secret({MASK!r})"

    __str__ = __repr__

    def __bool__(self) -> bool:
        return bool(self._value)

    def __reduce__(self) -> Tuple[Any, ...]:
        raise TypeError("a Secret cannot be pickled")


def _values(secrets: Iterable[Any]) -> list[Any]:
    out = []
    for s in secrets:
        value = s.reveal() if isinstance(s, Secret) else s
        if isinstance(value, str) and len(value) >= MIN_SECRET_LENGTH:
            out.append(value)
    return out


def scrub_text(text: str, secrets: Iterable[Any]) -> str:
    """``text`` with every occurrence of each secret (a ``str`` or :class:`Secret`) replaced by :data:`MASK`."""
    for value in _values(secrets):
        if value in text:
            text = text.replace(value, MASK)
    return text


def scrub_value(value: Any, secrets: Iterable[Any]) -> Any:
    """A decoded JSON value (or text) with every secret removed from its strings."""
    secrets = tuple(secrets)
    if isinstance(value, str):
        return scrub_text(value, secrets)
    if isinstance(value, Mapping):
        return {k: scrub_value(v, secrets) for k, v in value.items()}
    if isinstance(value, list):
        return [scrub_value(v, secrets) for v in value]
    return value


def scrub_error(exc: BaseException, secrets: Iterable[Any]) -> None:
    """Remove the secrets from a jarvis error and its chain, in place.

    Contexts raised ``from None`` are dropped: they may quote a server's raw reply (a ``JSONDecodeError``
    keeps the whole line it failed on) and nobody sees them anyway. Foreign exceptions in the chain are cut
    off, since their messages cannot be rewritten safely.
    """
    from jarvis_core.errors import JarvisError

    secrets = tuple(_values(secrets))
    seen = set()
    current: Optional[BaseException] = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, JarvisError) and secrets:
            current.args = tuple(scrub_text(a, secrets) if isinstance(a, str) else a for a in current.args)
            for attr in ("body", "partial", "excerpt"):
                text = getattr(current, attr, None)
                if isinstance(text, str):
                    setattr(current, attr, scrub_text(text, secrets))
        if current.__suppress_context__:
            current.__context__ = None
        nxt = current.__cause__ or current.__context__
        if nxt is not None and not isinstance(nxt, JarvisError) and secrets:
            current.__cause__ = current.__context__ = None
            current.__suppress_context__ = True
            nxt = None
        current = nxt


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
                message = message.replace(value, MASK)
            record.msg, record.args = message, None
        return True


_filter = _SecretFilter()
_installed = False
_lock = threading.Lock()


def protect_logs(secrets: Iterable[Any]) -> None:
    """Mask ``secrets`` in the records of :data:`LOGGERS` (installs the filter on first use).

    The filter runs only for records that pass the logger's level, so it costs nothing while DEBUG logging
    is off.
    """
    global _installed
    values = _values(secrets)
    if not values:
        return
    with _lock:
        _filter.values.update(values)
        if not _installed:
            for name in LOGGERS:
                logging.getLogger(name).addFilter(_filter)
            _installed = True
