"""The network layer beneath the engines' async pools: httpcore streams straight over asyncio transports.

httpcore's own async backend goes through anyio: every read and write of a connection opens a cancel
scope for its timeout and detects the running async library, and TLS is anyio's pure-Python wrapper over a
memory BIO. Per request that is a fair share of what a proxy such as ``jarvis serve`` spends on the
engine's side (``benchmarks/bench_server.py``). :class:`AsyncioBackend` does the same job with an asyncio
protocol per connection: a read that finds data waiting returns it without a future or a timer, TLS is the
event loop's own (uvloop's in C when it runs), and writes are held until the connection next reads, so a
request's head and body leave in one system call and one TCP segment instead of two or three.

That last point relies on how HTTP/1.1 is spoken: a client sends its whole request and then reads the
response, so nothing held waits on the server. Writes are still sent at once past :data:`WRITE_BUFFER`
bytes (a large upload streams; its pace is the socket's), and the pools using this speak only HTTP/1.1.

Outside an asyncio loop (trio, say) the backend hands every connection to httpcore's own.
"""

from __future__ import annotations

import asyncio
import collections
import socket
import ssl
from typing import Any, Deque, Iterable, Optional

import httpcore
from httpcore._backends.auto import AutoBackend
from httpcore._utils import is_socket_readable

__all__ = ["READ_BUFFER", "WRITE_BUFFER", "AsyncioBackend", "AsyncioStream"]

#: Bytes held from the request side before they are sent without waiting for the connection's next read.
WRITE_BUFFER = 64 * 1024
#: Bytes received and not yet read past which the connection stops reading from its socket until they are.
READ_BUFFER = 256 * 1024

#: The system-level failures of connecting (and of a TLS handshake) that become ``httpcore.ConnectError``.
_CONNECT_ERRORS = (OSError, EOFError)


class _Connection(asyncio.Protocol):
    """One connection's received bytes, its end, and the flow control of both directions."""

    def __init__(self) -> None:
        self.transport: Optional[asyncio.Transport] = None
        self.received: Deque[bytes] = collections.deque()
        self.size = 0  # bytes in ``received``
        self.eof = False
        self.lost = False
        self.error: Optional[BaseException] = None
        self.reader: Optional[asyncio.Future[None]] = None  # a read waiting for bytes or the end
        self.drained: Optional[asyncio.Future[None]] = None  # a write waiting for the socket to take its bytes
        self.paused_writing = False
        self.paused_reading = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self.received.append(data)
        self.size += len(data)
        if self.size > READ_BUFFER and not self.paused_reading and self.transport is not None:
            self.paused_reading = True
            self.transport.pause_reading()
        self._wake_reader()

    def eof_received(self) -> bool:
        self.eof = True
        self._wake_reader()
        return False  # the transport closes itself: an HTTP/1.1 client has nothing to send after the server's end

    def connection_lost(self, exc: Optional[Exception]) -> None:
        self.lost = True
        self.error = exc
        self._wake_reader()
        self._wake_writer()

    def pause_writing(self) -> None:
        self.paused_writing = True

    def resume_writing(self) -> None:
        self.paused_writing = False
        self._wake_writer()

    def _wake_reader(self) -> None:
        reader, self.reader = self.reader, None
        if reader is not None and not reader.done():
            reader.set_result(None)

    def _wake_writer(self) -> None:
        drained, self.drained = self.drained, None
        if drained is not None and not drained.done():
            drained.set_result(None)

    def take(self, max_bytes: int) -> bytes:
        """Up to ``max_bytes`` of what was received (at least one byte: call only when ``size`` > 0)."""
        first = self.received[0]
        if len(first) <= max_bytes and len(self.received) == 1:
            self.received.clear()
            data = first
        else:
            parts = []
            room = max_bytes
            while self.received and room > 0:
                part = self.received.popleft()
                if len(part) > room:
                    self.received.appendleft(part[room:])
                    part = part[:room]
                parts.append(part)
                room -= len(part)
            data = b"".join(parts)
        self.size -= len(data)
        if self.paused_reading and self.size <= READ_BUFFER // 2 and self.transport is not None:
            self.paused_reading = False
            self.transport.resume_reading()
        return data


def _expire(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_exception(TimeoutError())


async def _wait(conn: _Connection, kind: str, timeout: Optional[float]) -> None:
    """Wait until the connection wakes a read (``kind`` "reader") or a write ("drained"), or ``timeout``."""
    loop = asyncio.get_running_loop()
    waiter: asyncio.Future[None] = loop.create_future()
    setattr(conn, kind, waiter)
    timer = loop.call_later(timeout, _expire, waiter) if timeout is not None else None
    try:
        await waiter
    finally:
        if timer is not None:
            timer.cancel()
        if getattr(conn, kind) is waiter:
            setattr(conn, kind, None)


class AsyncioStream(httpcore.AsyncNetworkStream):
    """An httpcore network stream over one asyncio transport (plain TCP, TLS or a Unix socket)."""

    def __init__(self, transport: asyncio.Transport, conn: _Connection) -> None:
        self._transport = transport
        self._conn = conn
        self._pending: list[bytes] = []  # written, not sent yet
        self._pending_size = 0

    def _flush(self) -> None:
        if self._pending:
            data = self._pending[0] if len(self._pending) == 1 else b"".join(self._pending)
            self._pending.clear()
            self._pending_size = 0
            self._transport.write(data)

    async def read(self, max_bytes: int, timeout: Optional[float] = None) -> bytes:
        conn = self._conn
        if self._pending:
            if conn.lost:
                raise httpcore.WriteError(str(conn.error or "the connection was closed"))
            self._flush()
        while not conn.size:
            if conn.eof or conn.lost:
                if conn.error is not None:
                    raise httpcore.ReadError(str(conn.error) or type(conn.error).__name__)
                return b""
            try:
                await _wait(conn, "reader", timeout)
            except TimeoutError:
                raise httpcore.ReadTimeout("timed out waiting for the server") from None
        return conn.take(max_bytes)

    async def write(self, buffer: bytes, timeout: Optional[float] = None) -> None:
        if not buffer:
            return
        conn = self._conn
        if conn.lost or self._transport.is_closing():
            raise httpcore.WriteError(str(conn.error or "the connection was closed"))
        self._pending.append(buffer)
        self._pending_size += len(buffer)
        if self._pending_size < WRITE_BUFFER:
            return
        self._flush()
        while conn.paused_writing and not conn.lost:
            try:
                await _wait(conn, "drained", timeout)
            except TimeoutError:
                raise httpcore.WriteTimeout("timed out sending to the server") from None
        if conn.lost:
            raise httpcore.WriteError(str(conn.error or "the connection was closed"))

    async def aclose(self) -> None:
        self._pending.clear()
        if not self._transport.is_closing():
            self._transport.close()
            await asyncio.sleep(0)  # the loop closes the socket on its next turn (a TLS close may take longer:
            self._transport.abort()  # the server is not waited for)

    async def start_tls(self, ssl_context: ssl.SSLContext, server_hostname: Optional[str] = None,
                        timeout: Optional[float] = None) -> httpcore.AsyncNetworkStream:
        self._flush()
        loop = asyncio.get_running_loop()
        try:
            transport = await asyncio.wait_for(
                loop.start_tls(self._transport, self._conn, ssl_context, server_hostname=server_hostname),
                timeout)
        except asyncio.TimeoutError:
            self._transport.close()
            raise httpcore.ConnectTimeout("timed out in the TLS handshake") from None
        except (ssl.SSLError, *_CONNECT_ERRORS) as exc:
            self._transport.close()
            raise httpcore.ConnectError(str(exc) or type(exc).__name__) from exc
        if transport is None:  # the connection ended during the handshake
            raise httpcore.ConnectError("the server closed the connection during the TLS handshake")
        self._conn.transport = transport
        return AsyncioStream(transport, self._conn)

    def get_extra_info(self, info: str) -> Any:
        if info == "is_readable":
            # Something to read (or the end, or an error) without a system call when the loop has seen it.
            conn = self._conn
            if conn.size or conn.eof or conn.lost:
                return True
            return is_socket_readable(self._transport.get_extra_info("socket"))
        key = {"client_addr": "sockname", "server_addr": "peername"}.get(info, info)
        if key in ("ssl_object", "socket", "sockname", "peername"):
            return self._transport.get_extra_info(key)
        return None


class AsyncioBackend(httpcore.AsyncNetworkBackend):
    """httpcore's network backend for asyncio loops (see the module's docstring); elsewhere httpcore's own."""

    def __init__(self) -> None:
        self._fallback = AutoBackend()

    async def connect_tcp(self, host: str, port: int, timeout: Optional[float] = None,
                          local_address: Optional[str] = None,
                          socket_options: Optional[Iterable[Any]] = None) -> httpcore.AsyncNetworkStream:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return await self._fallback.connect_tcp(host, port, timeout, local_address, socket_options)
        local = (local_address, 0) if local_address else None
        # Address families tried a quarter-second apart, as anyio's connect does (uvloop tries them in turn).
        if isinstance(loop, asyncio.BaseEventLoop):
            opening = loop.create_connection(_Connection, host, port, local_addr=local, happy_eyeballs_delay=0.25)
        else:
            opening = loop.create_connection(_Connection, host, port, local_addr=local)
        return await _open(opening, timeout, socket_options)

    async def connect_unix_socket(self, path: str, timeout: Optional[float] = None,
                                  socket_options: Optional[Iterable[Any]] = None) -> httpcore.AsyncNetworkStream:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return await self._fallback.connect_unix_socket(path, timeout, socket_options)
        return await _open(loop.create_unix_connection(_Connection, path), timeout, socket_options)

    async def sleep(self, seconds: float) -> None:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            await self._fallback.sleep(seconds)
            return
        await asyncio.sleep(seconds)


async def _open(opening: Any, timeout: Optional[float], socket_options: Optional[Iterable[Any]]) -> AsyncioStream:
    try:
        transport, conn = await asyncio.wait_for(opening, timeout)
    except asyncio.TimeoutError:
        raise httpcore.ConnectTimeout("timed out connecting") from None
    except _CONNECT_ERRORS as exc:
        raise httpcore.ConnectError(str(exc) or type(exc).__name__) from exc
    sock: Optional[socket.socket] = transport.get_extra_info("socket")
    if sock is not None:
        for option in socket_options or ():
            sock.setsockopt(*option)
    return AsyncioStream(transport, conn)
