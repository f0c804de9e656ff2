"""Robust decoders for Server-Sent Events and newline-delimited JSON.

The engines read whole network chunks (:meth:`~jarvis_core.engine.http.HTTPEngine.astream_batches`) and
decode them with :class:`SSEByteDecoder`, :class:`NDJSONByteDecoder` or :class:`LineByteDecoder`; each SSE
payload then goes through :func:`loads_payload` or :func:`decode_json`. They cope with CRLF, SSE comments and
keep-alive pings, ``data:`` without a space, multi-line ``data`` fields, ``event:`` names, ``[DONE]``, blank
and whitespace lines, and JSON error payloads in the middle of a stream, which become typed errors instead of
being mistaken for data.
"""

from __future__ import annotations

import codecs
import json
from typing import Any, Iterator, List, Optional, Union

from jarvis_core.errors import LimitExceededError, StreamError

__all__ = [
    "DEFAULT_MAX_LINE",
    "LineByteDecoder",
    "NDJSONBatch",
    "NDJSONByteDecoder",
    "SSEByteDecoder",
    "SSEEvent",
    "decode_json",
    "loads_payload",
]


class SSEEvent:
    """One server-sent event: its ``event`` name (``"message"`` when none was given) and ``data`` text."""

    __slots__ = ("data", "event")

    def __init__(self, event: str, data: str) -> None:
        self.event = event
        self.data = data

    def __repr__(self) -> str:
        return f"SSEEvent({self.event!r}, {self.data[:60]!r})"


def decode_json(text: str, *, engine_id: str = "") -> Any:
    """Parse one JSON payload of a stream; an error payload or invalid JSON raises :class:`StreamError`.

    An error payload is an object with a non-empty ``error`` member (OpenAI, vLLM, llama.cpp, Ollama),
    with ``type == "error"`` (Anthropic) or with ``object == "error"`` (older vLLM's flat form).
    """
    obj = loads_payload(text, engine_id=engine_id)
    if type(obj) is dict and (obj.get("error") or obj.get("type") == "error" or obj.get("object") == "error"):
        from jarvis_core.engine.http_errors import error_from_payload

        raise error_from_payload(obj, engine_id=engine_id, in_stream=True)
    return obj


# -- byte-level decoders for hot streaming loops -------------------------------------------------------
#
# An async iterator hop per line costs about as much as decoding a short JSON line, so the engines' hot
# paths read whole network chunks (``HTTPEngine.astream_batches``) and decode them with these: each
# ``feed`` takes the bytes of one read and returns everything they completed, as a list.

_scan_once = json.JSONDecoder().scan_once  # type: ignore[attr-defined]  # the C scanner behind json.loads


def loads_payload(text: str, *, engine_id: str = "") -> Any:
    """``json.loads`` for one stream payload, about 1 us faster; malformed JSON raises :class:`StreamError`.

    It calls the C scanner that ``json.loads`` ends up in directly, skipping two regex whitespace scans and
    three Python-level calls; anything unusual (surrounding whitespace, errors) goes through ``json.loads``.
    Unlike :func:`decode_json` it does not look for error payloads: the caller's decoder does.
    """
    try:
        obj, end = _scan_once(text, 0)
        if end == len(text):
            return obj
    except (StopIteration, ValueError):  # ValueError: a JSONDecodeError inside a malformed payload
        pass
    try:
        return json.loads(text)
    except ValueError:
        raise StreamError(f"{engine_id or 'engine'} sent malformed JSON in its stream: {text[:200]!r}",
                          engine_id=engine_id) from None


#: The longest line (or SSE event, or non-streamed body) accepted by default, in characters: 16 MiB.
DEFAULT_MAX_LINE = 16 * 1024 * 1024


class _TextLines:
    """Shared part of the byte decoders: incremental UTF-8 (a character split across reads stays whole)
    and LF / CRLF / CR line endings, also when a CRLF is split across two reads.

    A line still waiting for its end is kept as a list of pieces, so assembling it is linear however many
    reads it spans; once it is longer than ``max_line`` characters, :class:`LimitExceededError` is raised.
    """

    __slots__ = ("_decode", "_pending", "_pending_len", "_skip_lf", "engine_id", "max_line")

    def __init__(self, *, max_line: int = DEFAULT_MAX_LINE, engine_id: str = "") -> None:
        self._decode = codecs.getincrementaldecoder("utf-8")("replace").decode
        self._pending: List[str] = []
        self._pending_len = 0
        self._skip_lf = False
        self.max_line = max_line
        self.engine_id = engine_id

    def too_long(self, what: str = "a line") -> LimitExceededError:
        """The error for a line or event longer than :attr:`max_line`."""
        who = self.engine_id or "engine"
        return LimitExceededError(
            f"{who}: the server sent {what} longer than {self.max_line} characters; it is not a normal reply "
            "(raise max_line_bytes in the engine's config if it is)", engine_id=self.engine_id, limit="line")

    def _lines(self, data: bytes, final: bool) -> List[str]:
        text = self._decode(data, final)
        if self._skip_lf:
            self._skip_lf = False
            if text[:1] == "\n":  # the LF of a CRLF that was split across two reads
                text = text[1:]
        if "\r" in text:
            self._skip_lf = text[-1:] == "\r"
            text = text.replace("\r\n", "\n").replace("\r", "\n")
        lines = text.split("\n")
        last = lines.pop()
        pending = self._pending
        if pending:
            if not lines:  # still no line end: one more piece, no copying
                pending.append(last)
                self._pending_len += len(last)
                if self._pending_len > self.max_line:
                    raise self.too_long()
                return lines
            pending.append(lines[0])
            lines[0] = "".join(pending)
            if len(lines[0]) > self.max_line:
                raise self.too_long()
            pending.clear()
        if last:
            pending.append(last)
            self._pending_len = len(last)
            if self._pending_len > self.max_line:
                raise self.too_long()
        return lines

    def _last_lines(self) -> List[str]:
        """At the end of the body: the lines still to come, the last one even without its line ending."""
        lines = self._lines(b"", True)
        rest = self._take_pending()
        return [*lines, rest] if rest else lines

    def _take_pending(self) -> str:
        rest = "".join(self._pending)
        self._pending.clear()
        self._pending_len = 0
        return rest


class LineByteDecoder(_TextLines):
    """Raw body bytes → complete lines (without their endings), for NDJSON streams. Blank lines are kept."""

    __slots__ = ()

    def feed(self, data: bytes, final: bool = False) -> List[str]:
        """Take the next bytes of the body; return the lines they completed."""
        return self._lines(data, final)

    def flush(self) -> List[str]:
        """At the end of the body: the last line, even without its line ending."""
        return self._last_lines()


class NDJSONBatch:
    """The complete lines of one network read of an NDJSON body; iterating gives their JSON values, each
    decoded as it is reached. Blank lines are skipped; a line that is not one JSON value raises
    :class:`StreamError` when it is reached.

    Each line goes to json's C scanner directly, so a line costs the scan and not the calls around
    ``json.loads``; a line with whitespace around its value goes through :func:`loads_payload`. Decoding
    as the consumer goes, not the whole read at once, keeps what a stream holds between two awaits to
    text, which the garbage collector does not track: with hundreds of streams in flight, whole reads of
    decoded objects kept the collector busy for a fifth of the client's time.
    """

    __slots__ = ("engine_id", "lines")

    def __init__(self, lines: List[str], engine_id: str = "") -> None:
        self.lines = lines
        self.engine_id = engine_id

    def __len__(self) -> int:
        return len(self.lines)

    def __iter__(self) -> Iterator[Any]:
        scan = _scan_once
        for line in self.lines:
            try:
                value, end = scan(line, 0)
                if end == len(line):
                    yield value
                    continue
            except (StopIteration, ValueError):  # StopIteration: no value at 0 (blank, or whitespace first)
                pass
            if line and not line.isspace():
                yield loads_payload(line, engine_id=self.engine_id)

    def __repr__(self) -> str:
        return f"<NDJSONBatch of {len(self.lines)} line(s)>"


class NDJSONByteDecoder(_TextLines):
    """Raw body bytes → the complete lines of each read as an :class:`NDJSONBatch`, for NDJSON streams
    (Ollama): iterate a batch for the lines' JSON values. Error payloads are values like any other: the engine looks for them."""

    __slots__ = ()

    def feed(self, data: bytes, final: bool = False) -> NDJSONBatch:
        """Take the next bytes of the body; return the lines they completed."""
        return NDJSONBatch(self._lines(data, final), self.engine_id)

    def flush(self) -> NDJSONBatch:
        """At the end of the body: the last line, even without its line ending."""
        return NDJSONBatch(self._last_lines(), self.engine_id)


class SSEByteDecoder(_TextLines):
    """Raw body bytes → server-sent events.

    With ``events=False`` (the default, for OpenAI-style streams) :meth:`feed` returns each completed
    event's ``data`` text; with ``events=True`` it returns :class:`SSEEvent` objects that keep the
    ``event:`` name too (Anthropic). Comments, keep-alive pings, ``data:`` with or without its space,
    multi-line data (joined with newlines), a bare ``data`` line (empty data) and ``id``/``retry`` fields
    are handled as the SSE specification says.

    With ``until_done=True`` (OpenAI-style streams) the ``[DONE]`` marker ends the stream: it is not
    returned, :attr:`done` becomes True, and everything after it is read but ignored, so that the caller's
    loop simply runs to the end of the body and the connection goes back to the pool.
    """

    __slots__ = ("_event", "_events", "_parts", "_parts_len", "_until_done", "done")

    def __init__(self, *, events: bool = False, until_done: bool = False, max_line: int = DEFAULT_MAX_LINE,
                 engine_id: str = "") -> None:
        super().__init__(max_line=max_line, engine_id=engine_id)
        self._parts_len = 0
        self._parts: List[str] = []
        self._event: Optional[str] = None
        self._events = events
        self._until_done = until_done
        #: True once the ``[DONE]`` marker arrived (only with ``until_done``).
        self.done = False

    def feed(self, data: bytes, final: bool = False) -> List[Union[str, SSEEvent]]:
        """Take the next bytes of the body; return the events they completed."""
        if self.done:
            return []
        out: List[Any] = []
        parts = self._parts
        # Read once per network read, not once per event: this loop is every OpenAI-style stream's hot path.
        until_done = self._until_done
        events = self._events
        for line in self._lines(data, final):
            if not line:
                if parts:
                    text = parts[0] if len(parts) == 1 else "\n".join(parts)
                    parts.clear()
                    if until_done and text[:1] != "{" and text.strip() == "[DONE]":
                        self.done = True
                        return out
                    out.append(SSEEvent(self._event or "message", text) if events else text)
                self._event = None
            elif line[:5] == "data:":
                value = line[5:]
                if parts:  # a multi-line event: bound its total size too
                    self._parts_len += len(value)
                    if self._parts_len > self.max_line:
                        raise self.too_long("an event")
                else:
                    self._parts_len = len(value)
                parts.append(value[1:] if value[:1] == " " else value)
            elif line[:6] == "event:":
                value = line[6:]
                self._event = value[1:] if value[:1] == " " else value
            elif line == "data":  # a field name alone: an empty data line (the SSE spec)
                parts.append("")
        return out

    def flush(self) -> List[Union[str, SSEEvent]]:
        """At the end of the body: the last event, even without its closing blank line."""
        if self.done:
            return []
        self._skip_lf = False
        out = self.feed(b"", final=True)
        rest = self._take_pending()
        if rest or self._parts:
            out += self.feed(rest.encode() + b"\n\n")
        self._parts, self._event = [], None
        self._pending_len = self._parts_len = 0
        return out


def __getattr__(name: str) -> Any:
    # Names removed while the version read 0.1.0 keep working, with a warning, until 1.0.0 (engine/compat.py).
    if name.startswith("__"):  # the import system asks for __path__ and friends
        raise AttributeError(name)
    from jarvis_core.deprecation import module_getattr
    from jarvis_core.engine.compat import STREAMS_ALIASES

    return module_getattr(__name__, STREAMS_ALIASES)(name)
