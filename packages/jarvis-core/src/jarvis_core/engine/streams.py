"""Robust readers for Server-Sent Events and newline-delimited JSON.

They take lines (as ``httpx.Response.iter_lines`` / ``aiter_lines`` yield them) and cope with CRLF, SSE
comments and keep-alive pings, ``data:`` without a space, multi-line ``data`` fields, ``event:`` names,
``[DONE]``, blank and whitespace lines, and JSON error payloads in the middle of a stream, which become
typed errors instead of being mistaken for data.
"""

from __future__ import annotations

import json
from typing import Any, AsyncIterable, AsyncIterator, Iterable, Iterator, List, Optional

from jarvis_core.errors import StreamError

__all__ = [
    "SSEDecoder",
    "SSEEvent",
    "aiter_ndjson",
    "aiter_sse",
    "aiter_sse_json",
    "decode_json",
    "iter_ndjson",
    "iter_sse",
    "iter_sse_json",
]


class SSEEvent:
    """One server-sent event: its ``event`` name (``"message"`` when none was given) and ``data`` text."""

    __slots__ = ("data", "event")

    def __init__(self, event: str, data: str) -> None:
        self.event = event
        self.data = data

    def __repr__(self) -> str:
        return f"SSEEvent({self.event!r}, {self.data[:60]!r})"


class SSEDecoder:
    """Incremental SSE decoder: feed it lines, get events when a blank line ends one."""

    __slots__ = ("_data", "_event")

    def __init__(self) -> None:
        self._event: Optional[str] = None
        self._data: List[str] = []

    def feed(self, line: str) -> Optional[SSEEvent]:
        """Take one line (with or without its line ending); return an event when it completes one."""
        line = line.rstrip("\r\n")
        if not line:
            return self.flush()
        if line[0] == ":":
            return None
        field, _, value = line.partition(":")
        if value[:1] == " ":
            value = value[1:]
        if field == "data":
            self._data.append(value)
        elif field == "event":
            self._event = value
        return None

    def flush(self) -> Optional[SSEEvent]:
        """End the current event (at a blank line or the end of the stream)."""
        if not self._data:
            self._event = None
            return None
        event = SSEEvent(self._event or "message", "\n".join(self._data))
        self._event, self._data = None, []
        return event


def iter_sse(lines: Iterable[str]) -> Iterator[SSEEvent]:
    """Events from an iterable of lines (a final event without a trailing blank line is kept)."""
    dec = SSEDecoder()
    for line in lines:
        ev = dec.feed(line)
        if ev is not None:
            yield ev
    ev = dec.flush()
    if ev is not None:
        yield ev


async def aiter_sse(lines: AsyncIterable[str]) -> AsyncIterator[SSEEvent]:
    """Async twin of :func:`iter_sse`."""
    dec = SSEDecoder()
    async for line in lines:
        ev = dec.feed(line)
        if ev is not None:
            yield ev
    ev = dec.flush()
    if ev is not None:
        yield ev


def decode_json(text: str, *, engine_id: str = "") -> Any:
    """Parse one JSON payload of a stream; an error payload or invalid JSON raises :class:`StreamError`.

    An error payload is an object with a non-empty ``error`` member (OpenAI, vLLM, llama.cpp, Ollama),
    with ``type == "error"`` (Anthropic) or with ``object == "error"`` (older vLLM's flat form).
    """
    try:
        obj = json.loads(text)
    except ValueError as exc:
        raise StreamError(f"{engine_id or 'engine'} sent malformed JSON in its stream: {text[:200]!r}", engine_id=engine_id) from exc
    if isinstance(obj, dict) and (obj.get("error") or obj.get("type") == "error" or obj.get("object") == "error"):
        from jarvis_core.engine.http_errors import error_from_payload

        raise error_from_payload(obj, engine_id=engine_id, in_stream=True)
    return obj


def iter_sse_json(lines: Iterable[str], *, engine_id: str = "") -> Iterator[Any]:
    """JSON payloads of an OpenAI-style SSE stream, stopping at ``[DONE]``."""
    for ev in iter_sse(lines):
        if ev.data == "[DONE]":
            return
        yield decode_json(ev.data, engine_id=engine_id)


async def aiter_sse_json(lines: AsyncIterable[str], *, engine_id: str = "") -> AsyncIterator[Any]:
    """Async twin of :func:`iter_sse_json`."""
    async for ev in aiter_sse(lines):
        if ev.data == "[DONE]":
            return
        yield decode_json(ev.data, engine_id=engine_id)


def iter_ndjson(lines: Iterable[str], *, engine_id: str = "") -> Iterator[Any]:
    """One JSON value per non-blank line (Ollama's streaming format)."""
    for line in lines:
        if line.strip():
            yield decode_json(line, engine_id=engine_id)


async def aiter_ndjson(lines: AsyncIterable[str], *, engine_id: str = "") -> AsyncIterator[Any]:
    """Async twin of :func:`iter_ndjson`."""
    async for line in lines:
        if line.strip():
            yield decode_json(line, engine_id=engine_id)
