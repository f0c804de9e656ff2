"""HTTP/1.1 connections for the engines' async pool, spoken directly instead of through h11.

httpcore's HTTP/1.1 connection runs every request and response through h11's event machinery: each header
checked by regular expressions on the way out and in, a state machine stepped for each event, a lock taken
around each change of state. For a proxy such as ``jarvis serve``, which sends one small request per stream
and reads one response, that machinery was about a quarter of its CPU per stream
(``benchmarks/bench_server.py``). :class:`Http11Connection` is a connection of the same interface for
:class:`~jarvis_core.engine.pool.FairConnectionPool`: the request's head and body go out in one write, the
response head is parsed with a few splits, and the body's framing (``Content-Length``, chunked, or up to
the close) is undone with one yield per network read, however many chunks that read held.

What it checks, as h11 does: header names and values with no line breaks or NUL going out; a status line
and header lines of the right shape, a head no longer than :data:`MAX_HEAD`, a ``Content-Length`` that is
one non-negative number, no transfer coding other than ``chunked``, and well-formed chunk sizes coming in.
Anything else is ``httpcore.RemoteProtocolError`` (or ``LocalProtocolError`` for our own request), which
httpx turns into its error of that name. A connection is kept for the next request only when its response
was read to the end, the server did not ask to close, and nothing beyond the response arrived.
"""

from __future__ import annotations

import enum
import time
from typing import Any, AsyncIterator, List, Optional, Tuple

import httpcore

__all__ = ["MAX_HEAD", "Http11Connection"]

#: The longest response head (status line and headers) accepted, in bytes.
MAX_HEAD = 64 * 1024
#: The longest chunk-size line (with its extensions) or trailer line accepted, in bytes.
_MAX_LINE = 8 * 1024
#: Bytes asked of the network stream per read.
_READ_SIZE = 64 * 1024

_NO_BODY_STATUS = (204, 304)
_HEX = b"0123456789abcdefABCDEF"


class _State(enum.Enum):
    NEW = 0
    ACTIVE = 1
    IDLE = 2
    CLOSED = 3


def _request_head(request: httpcore.Request) -> bytes:
    """The request line and headers, checked for what would split or end them early."""
    parts = [request.method, b" ", request.url.target, b" HTTP/1.1\r\n"]
    for name, value in request.headers:
        parts += (name, b": ", value, b"\r\n")
    parts.append(b"\r\n")
    head = b"".join(parts)
    lines = len(request.headers) + 2  # one line break per line, the blank line's included: any other split a line
    if head.count(b"\n") != lines or head.count(b"\r") != lines or b"\0" in head:
        raise httpcore.LocalProtocolError("a request header holds a line break or a NUL byte")
    return head


def _header_lines(head: bytes) -> List[bytes]:
    lines = head.split(b"\n")
    return [line[:-1] if line.endswith(b"\r") else line for line in lines]


def _parse_head(head: bytes) -> Tuple[int, bytes, bytes, List[Tuple[bytes, bytes]]]:
    """``(status, http_version, reason, headers)`` from a response head (without its blank line)."""
    lines = _header_lines(head)
    status_line = lines[0].split(b" ", 2)
    version = status_line[0]
    if version not in (b"HTTP/1.1", b"HTTP/1.0") or len(status_line) < 2:
        raise httpcore.RemoteProtocolError(f"malformed status line: {lines[0][:100]!r}")
    code = status_line[1]
    if len(code) != 3 or not code.isdigit():
        raise httpcore.RemoteProtocolError(f"malformed status line: {lines[0][:100]!r}")
    reason = status_line[2] if len(status_line) > 2 else b""
    headers: List[Tuple[bytes, bytes]] = []
    for line in lines[1:]:
        if line[:1] in (b" ", b"\t"):  # obsolete line folding: the value goes on (RFC 9112 says replace with SP)
            if not headers:
                raise httpcore.RemoteProtocolError("a response header line starts with whitespace")
            name, value = headers[-1]
            headers[-1] = (name, value + b" " + line.strip())
            continue
        name, colon, value = line.partition(b":")
        if not colon or not name or name != name.strip() or b"\0" in line:
            raise httpcore.RemoteProtocolError(f"malformed response header line: {line[:100]!r}")
        headers.append((name, value.strip(b" \t")))
    return int(code), version, reason, headers


def _framing(method: bytes, status: int, version: bytes,
             headers: List[Tuple[bytes, bytes]]) -> Tuple[Optional[int], bool, bool]:
    """``(length, chunked, keep_alive)``: ``length`` is the body's size (``None`` with ``chunked`` false:
    until the server closes)."""
    length: Optional[int] = None
    codings: List[bytes] = []
    tokens: List[bytes] = []
    for name, value in headers:
        key = name.lower()
        if key == b"content-length":
            for item in value.split(b","):
                item = item.strip()
                if not item.isdigit() or (length is not None and int(item) != length):
                    raise httpcore.RemoteProtocolError(f"malformed Content-Length: {value[:40]!r}")
                length = int(item)
        elif key == b"transfer-encoding":
            codings += [c.strip().lower() for c in value.split(b",") if c.strip()]
        elif key == b"connection":
            tokens += [t.strip().lower() for t in value.split(b",")]
    keep_alive = version == b"HTTP/1.1" and b"close" not in tokens
    if method == b"HEAD" or status in _NO_BODY_STATUS:
        return 0, False, keep_alive
    if codings:
        if codings != [b"chunked"]:
            raise httpcore.RemoteProtocolError(f"unsupported Transfer-Encoding: {b', '.join(codings)[:60]!r}")
        return None, True, keep_alive
    if length is None:
        return None, False, False
    return length, False, keep_alive


class Http11Connection(httpcore.AsyncConnectionInterface):
    """One HTTP/1.1 connection to ``origin`` (see the module's docstring), opened on its first request
    through ``network_backend`` (TLS with ``ssl_context`` for ``https``)."""

    def __init__(self, origin: httpcore.Origin, *, ssl_context: Any, keepalive_expiry: Optional[float],
                 network_backend: httpcore.AsyncNetworkBackend) -> None:
        self._origin = origin
        self._ssl_context = ssl_context
        self._keepalive_expiry = keepalive_expiry
        self._backend = network_backend
        self._stream: Optional[httpcore.AsyncNetworkStream] = None
        self._state = _State.NEW
        self._expire_at: Optional[float] = None
        self._requests = 0
        self._buffer = b""  # received and not yet taken by a response

    async def handle_async_request(self, request: httpcore.Request) -> httpcore.Response:
        if request.url.origin != self._origin:
            raise RuntimeError(f"a request to {request.url.origin} on a connection to {self._origin}")
        if self._state not in (_State.NEW, _State.IDLE):
            raise httpcore.ConnectionNotAvailable()
        self._state = _State.ACTIVE
        self._expire_at = None
        self._requests += 1
        timeouts = request.extensions.get("timeout", {})
        try:
            stream = self._stream
            if stream is None:
                stream = self._stream = await self._connect(request, timeouts.get("connect"))
            head = _request_head(request)
            try:
                await self._send(stream, request, head, timeouts.get("write"))
            except httpcore.WriteError:
                pass  # the server may have answered and closed early (an error status): its answer is read next
            read_timeout = timeouts.get("read")
            status, version, reason, headers = await self._read_head(stream, read_timeout)
            while 100 <= status < 200:  # informational (100 Continue): the real answer follows
                if status == 101:
                    raise httpcore.RemoteProtocolError("the server switched protocols, which engines do not use")
                status, version, reason, headers = await self._read_head(stream, read_timeout)
            length, chunked, keep_alive = _framing(request.method, status, version, headers)
            body = _Body(self, stream, read_timeout, length, chunked, keep_alive)
            return httpcore.Response(status=status, headers=headers, content=body,
                                     extensions={"http_version": version, "reason_phrase": reason,
                                                 "network_stream": stream})
        except BaseException:
            await self.aclose()
            raise

    async def _connect(self, request: httpcore.Request, timeout: Optional[float]) -> httpcore.AsyncNetworkStream:
        stream = await self._backend.connect_tcp(self._origin.host.decode("ascii"), self._origin.port, timeout=timeout)
        if self._origin.scheme == b"https":
            self._ssl_context.set_alpn_protocols(["http/1.1"])
            server_hostname = request.extensions.get("sni_hostname") or self._origin.host.decode("ascii")
            try:
                stream = await stream.start_tls(self._ssl_context, server_hostname=server_hostname, timeout=timeout)
            except BaseException:
                await stream.aclose()
                raise
        return stream

    @staticmethod
    async def _send(stream: httpcore.AsyncNetworkStream, request: httpcore.Request, head: bytes,
                    timeout: Optional[float]) -> None:
        chunked = any(n.lower() == b"transfer-encoding" for n, _ in request.headers)
        await stream.write(head, timeout)
        async for part in request.stream:  # type: ignore[union-attr]  # a request body is async here
            if part:
                await stream.write(b"%x\r\n%b\r\n" % (len(part), part) if chunked else part, timeout)
        if chunked:
            await stream.write(b"0\r\n\r\n", timeout)

    async def _read_head(self, stream: httpcore.AsyncNetworkStream,
                         timeout: Optional[float]) -> Tuple[int, bytes, bytes, List[Tuple[bytes, bytes]]]:
        buf = self._buffer.lstrip(b"\r\n")  # blank lines before a response are ignored, as h11 does
        start = 0
        while True:
            end, body_at = _head_end(buf, start)
            if end >= 0:
                break
            if len(buf) > MAX_HEAD:
                raise httpcore.RemoteProtocolError(f"the response head is longer than {MAX_HEAD} bytes")
            start = max(0, len(buf) - 3)  # a head arriving in many pieces is searched once, not once a piece
            data = await stream.read(_READ_SIZE, timeout)
            if not data:
                if not buf:  # also how a kept-alive connection the server closed shows: httpx sends again
                    raise httpcore.RemoteProtocolError("Server disconnected without sending a response.")
                raise httpcore.RemoteProtocolError("the server closed the connection in the middle of the response head")
            buf = buf + data if buf else data.lstrip(b"\r\n")
        if end > MAX_HEAD:
            raise httpcore.RemoteProtocolError(f"the response head is longer than {MAX_HEAD} bytes")
        self._buffer = buf[body_at:]
        return _parse_head(buf[:end])

    def _finished(self, reusable: bool, leftover: bytes) -> None:
        """The response was read (``reusable``: to its end, and the connection may carry another) or left."""
        if reusable and not leftover and self._state is _State.ACTIVE:
            self._buffer = b""
            self._state = _State.IDLE
            if self._keepalive_expiry is not None:
                self._expire_at = time.monotonic() + self._keepalive_expiry
            return
        self._state = _State.CLOSED

    async def aclose(self) -> None:
        self._state = _State.CLOSED
        self._buffer = b""
        stream, self._stream = self._stream, None
        if stream is not None:
            await stream.aclose()

    def can_handle_request(self, origin: httpcore.Origin) -> bool:
        return origin == self._origin

    def is_available(self) -> bool:
        return self._state is _State.IDLE

    def has_expired(self) -> bool:
        if self._expire_at is not None and time.monotonic() > self._expire_at:
            return True
        # Idle with something to read: the server closed it (or sent what no request asked for).
        return self._state is _State.IDLE and self._stream is not None and bool(self._stream.get_extra_info("is_readable"))

    def is_idle(self) -> bool:
        return self._state is _State.IDLE

    def is_closed(self) -> bool:
        return self._state is _State.CLOSED

    def info(self) -> str:
        return f"{str(self._origin)!r}, HTTP/1.1, {self._state.name}, Request Count: {self._requests}"

    def __repr__(self) -> str:
        return f"<{type(self).__name__} [{self.info()}]>"


def _head_end(buf: bytes, start: int) -> Tuple[int, int]:
    """Where the blank line ending a head is in ``buf`` (searched from ``start``): the head's end and the
    body's start, or ``(-1, -1)``. Lines may end with CRLF or a bare LF."""
    lf = buf.find(b"\n\n", start)
    crlf = buf.find(b"\n\r\n", start)
    if crlf >= 0 and (lf < 0 or crlf < lf):
        return crlf, crlf + 3
    if lf >= 0:
        return lf, lf + 2
    return -1, -1


class _Body:
    """A response body as an async iterable of bytes: one item per network read."""

    def __init__(self, conn: Http11Connection, stream: httpcore.AsyncNetworkStream, timeout: Optional[float],
                 length: Optional[int], chunked: bool, keep_alive: bool) -> None:
        self._conn = conn
        self._stream = stream
        self._timeout = timeout
        self._length = length
        self._chunked = chunked
        self._keep_alive = keep_alive
        self._complete = False
        self._closed = False
        self._leftover = b""

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            if self._chunked:
                async for data in self._chunks():
                    yield data
            elif self._length is not None:
                async for data in self._sized(self._length):
                    yield data
            else:
                async for data in self._until_close():
                    yield data
            self._complete = True
        except BaseException:
            await self.aclose()
            raise

    async def _read(self) -> bytes:
        return await self._stream.read(_READ_SIZE, self._timeout)

    async def _sized(self, length: int) -> AsyncIterator[bytes]:
        data, self._conn._buffer = self._conn._buffer, b""
        left = length
        while True:
            if len(data) > left:  # what follows the body belongs to no response: the connection is not reused
                data, self._leftover = data[:left], data[left:]
            if data:
                left -= len(data)
                yield data
            if left <= 0:
                return
            data = await self._read()
            if not data:
                raise httpcore.RemoteProtocolError(
                    f"peer closed connection without sending complete message body: received {length - left} "
                    f"bytes, expected {length}")

    async def _until_close(self) -> AsyncIterator[bytes]:
        data, self._conn._buffer = self._conn._buffer, b""
        while True:
            if data:
                yield data
            data = await self._read()
            if not data:
                return

    async def _chunks(self) -> AsyncIterator[bytes]:
        decoder = _ChunkedDecoder(self._conn._buffer)
        self._conn._buffer = b""
        while True:
            out = decoder.decode()
            if out:
                yield out
            if decoder.done:
                self._leftover = decoder.rest()
                return
            data = await self._read()
            if not data:
                raise httpcore.RemoteProtocolError(
                    "peer closed connection without sending complete message body: incomplete chunked read")
            decoder.feed(data)

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._conn._finished(self._complete and self._keep_alive, self._leftover)
        if self._conn.is_closed():
            await self._conn.aclose()


class _ChunkedDecoder:
    """Chunked transfer coding undone over a buffer: :meth:`decode` returns all the data the bytes so far
    complete (parts of a chunk too), :attr:`done` once the last chunk and the trailers were read."""

    __slots__ = ("_buf", "_left", "_pos", "_state", "done")

    def __init__(self, data: bytes) -> None:
        self._buf = data
        self._pos = 0
        self._left = 0  # bytes of the current chunk still to come
        self._state = "size"  # "size", "data", "crlf" (after a chunk's data), "trailer"
        self.done = False

    def feed(self, data: bytes) -> None:
        self._buf = self._buf[self._pos:] + data if self._pos < len(self._buf) else data
        self._pos = 0

    def rest(self) -> bytes:
        return self._buf[self._pos:]

    def _line(self) -> Optional[bytes]:
        buf, pos = self._buf, self._pos
        end = buf.find(b"\n", pos)
        if end < 0:
            if len(buf) - pos > _MAX_LINE:
                raise httpcore.RemoteProtocolError("a chunk-size or trailer line is too long")
            return None
        if end - pos > _MAX_LINE:
            raise httpcore.RemoteProtocolError("a chunk-size or trailer line is too long")
        self._pos = end + 1
        line = buf[pos:end]
        return line[:-1] if line.endswith(b"\r") else line

    def decode(self) -> bytes:
        out: List[bytes] = []
        buf = self._buf
        while not self.done:
            state = self._state
            if state == "data":
                avail = len(buf) - self._pos
                if not avail:
                    break
                take = min(avail, self._left)
                out.append(buf[self._pos:self._pos + take])
                self._pos += take
                self._left -= take
                if not self._left:
                    self._state = "crlf"
                continue
            line = self._line()
            if line is None:
                break
            if state == "size":
                size_text = line.split(b";", 1)[0].strip(b" \t")
                if not size_text or size_text.translate(None, _HEX):  # hex digits only (int() takes "0x", "_")
                    raise httpcore.RemoteProtocolError(f"malformed chunk size: {line[:40]!r}")
                size = int(size_text, 16)
                if size:
                    self._left = size
                    self._state = "data"
                else:
                    self._state = "trailer"
            elif state == "crlf":
                if line:
                    raise httpcore.RemoteProtocolError("a chunk's data is longer than its size says")
                self._state = "size"
            elif not line:  # "trailer": a blank line ends the body
                self.done = True
        return out[0] if len(out) == 1 else b"".join(out)
