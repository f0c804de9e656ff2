"""Engine names removed while jarvis-core still read 0.1.0, kept working until 1.0.0 (``docs/contract.md`` §11).

Each warns with :class:`~jarvis_core.errors.JarvisDeprecationWarning` naming its replacement and the plugin
code that used it. The stream helpers are reached through ``jarvis_core.engine.streams`` (its module
``__getattr__``); the ``HTTPEngine`` methods through :class:`DeprecatedHTTPEngineMethods`, one of
``HTTPEngine``'s bases.
"""

from __future__ import annotations

import contextlib
from typing import Any, AsyncGenerator, AsyncIterable, AsyncIterator, Iterable, Iterator, List, Mapping, Optional

import httpx

from jarvis_core.deprecation import deprecated
from jarvis_core.engine.streams import LineByteDecoder, SSEEvent, decode_json

__all__ = [
    "STREAMS_ALIASES",
    "DeprecatedHTTPEngineMethods",
    "SSEDecoder",
    "aiter_ndjson",
    "aiter_sse",
    "aiter_sse_json",
    "iter_ndjson",
    "iter_sse",
    "iter_sse_json",
]

_BYTES = "the byte decoders of jarvis_core.engine.streams (SSEByteDecoder, NDJSONByteDecoder) through HTTPEngine.astream_batches"

#: ``jarvis_core.engine.streams`` name -> (where it is kept, its replacement).
STREAMS_ALIASES = {
    "SSEDecoder": ("jarvis_core.engine.compat:SSEDecoder", "SSEByteDecoder(events=True)"),
    "iter_sse": ("jarvis_core.engine.compat:iter_sse", _BYTES),
    "aiter_sse": ("jarvis_core.engine.compat:aiter_sse", _BYTES),
    "iter_sse_json": ("jarvis_core.engine.compat:iter_sse_json", _BYTES),
    "aiter_sse_json": ("jarvis_core.engine.compat:aiter_sse_json", _BYTES),
    "iter_ndjson": ("jarvis_core.engine.compat:iter_ndjson", _BYTES),
    "aiter_ndjson": ("jarvis_core.engine.compat:aiter_ndjson", _BYTES),
}


class SSEDecoder:
    """Incremental SSE decoder fed one line at a time (deprecated: ``SSEByteDecoder`` reads bytes)."""

    __slots__ = ("_data", "_event")

    def __init__(self) -> None:
        self._event: Optional[str] = None
        self._data: List[str] = []

    def feed(self, line: str) -> Optional[SSEEvent]:
        """Take one line (without its ending); return the event a blank line completes."""
        if not line:
            return self.flush()
        if line.startswith(":"):
            return None
        field, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if field == "data":
            self._data.append(value)
        elif field == "event":
            self._event = value
        return None

    def flush(self) -> Optional[SSEEvent]:
        """The pending event, if any (for a stream that ends without a blank line)."""
        if not self._data:
            self._event = None
            return None
        event = SSEEvent(self._event or "message", "\n".join(self._data))
        self._event, self._data = None, []
        return event


def iter_sse(lines: Iterable[str]) -> Iterator[SSEEvent]:
    """Events from lines (a final event without a trailing blank line is kept)."""
    dec = SSEDecoder()
    for line in lines:
        event = dec.feed(line)
        if event is not None:
            yield event
    event = dec.flush()
    if event is not None:
        yield event


async def aiter_sse(lines: AsyncIterable[str]) -> AsyncIterator[SSEEvent]:
    """Async twin of :func:`iter_sse`."""
    dec = SSEDecoder()
    async for line in lines:
        event = dec.feed(line)
        if event is not None:
            yield event
    event = dec.flush()
    if event is not None:
        yield event


def iter_sse_json(lines: Iterable[str], *, engine_id: str = "") -> Iterator[Any]:
    """JSON payloads of an OpenAI-style SSE stream, up to ``[DONE]``."""
    for event in iter_sse(lines):
        if event.data == "[DONE]":
            return
        yield decode_json(event.data, engine_id=engine_id)


async def aiter_sse_json(lines: AsyncIterable[str], *, engine_id: str = "") -> AsyncIterator[Any]:
    """Async twin of :func:`iter_sse_json`."""
    async for event in aiter_sse(lines):
        if event.data == "[DONE]":
            return
        yield decode_json(event.data, engine_id=engine_id)


def iter_ndjson(lines: Iterable[str], *, engine_id: str = "") -> Iterator[Any]:
    """One JSON value per non-blank line."""
    for line in lines:
        if line.strip():
            yield decode_json(line, engine_id=engine_id)


async def aiter_ndjson(lines: AsyncIterable[str], *, engine_id: str = "") -> AsyncIterator[Any]:
    """Async twin of :func:`iter_ndjson`."""
    async for line in lines:
        if line.strip():
            yield decode_json(line, engine_id=engine_id)


class DeprecatedHTTPEngineMethods:
    """``HTTPEngine`` methods removed while the version read 0.1.0; they go in 1.0.0."""

    @contextlib.asynccontextmanager
    async def astream_lines(
        self, method: str, path: str, *, json_body: Any = None, model: Optional[str] = None,
        timeout: Optional[float] = None, params: Optional[Mapping[str, Any]] = None,
        headers: Optional[Mapping[str, str]] = None,
    ) -> AsyncIterator[AsyncIterator[str]]:
        """The body's lines, one by one (deprecated: read batches with ``astream_batches``)."""
        deprecated("HTTPEngine.astream_lines", "astream_batches(method, path, LineByteDecoder(), ...)")
        engine: Any = self
        async with engine.astream_batches(method, path, LineByteDecoder(), json_body=json_body, params=params,
                                          headers=headers, model=model, timeout=timeout) as batches:

            async def lines() -> AsyncGenerator[str, None]:
                async for batch in batches:
                    for line in batch:
                        yield line

            flat = lines()
            try:
                yield flat
            finally:
                await flat.aclose()

    @contextlib.contextmanager
    def stream_response(
        self, method: str, path: str, *, json_body: Any = None, params: Optional[Mapping[str, Any]] = None,
        headers: Optional[Mapping[str, str]] = None, model: Optional[str] = None, timeout: Optional[float] = None,
    ) -> Iterator[Any]:
        """A streamed ``httpx.Response`` on the sync client; an error status raises the typed error
        (deprecated: use ``astream_response``)."""
        deprecated("HTTPEngine.stream_response", "astream_response (or astream_batches)")
        with self._sync_stream(method, path, json_body=json_body, params=params, headers=headers, model=model,
                               timeout=timeout) as response:
            yield response

    @contextlib.contextmanager
    def stream_lines(
        self, method: str, path: str, *, json_body: Any = None, model: Optional[str] = None,
        timeout: Optional[float] = None, params: Optional[Mapping[str, Any]] = None,
        headers: Optional[Mapping[str, str]] = None,
    ) -> Iterator[Iterator[str]]:
        """The body's lines on the sync client (deprecated: read batches with ``astream_batches``)."""
        deprecated("HTTPEngine.stream_lines", "astream_batches(method, path, LineByteDecoder(), ...)")
        engine: Any = self
        with self._sync_stream(method, path, json_body=json_body, params=params, headers=headers, model=model,
                               timeout=timeout) as response:

            def lines() -> Iterator[str]:
                try:
                    yield from response.iter_lines()
                except httpx.TransportError as exc:
                    raise engine.broken(exc, path) from None

            yield lines()

    @contextlib.contextmanager
    def _sync_stream(self, method: str, path: str, *, model: Optional[str], **request: Any) -> Iterator[Any]:
        engine: Any = self
        hdrs = {"accept": "text/event-stream, application/x-ndjson", **(request.pop("headers") or {})}
        response = engine.send(engine.build_request(engine.client, method, path, headers=hdrs, **request))
        try:
            if response.status_code >= 400:
                response.read()
                try:
                    body: Any = response.json()
                except ValueError:
                    body = response.text
                raise engine.classify_error(response, engine.redact(body), model=model)
            yield response
        finally:
            response.close()
