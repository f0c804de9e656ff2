"""A loopback TCP server that answers with exactly the bytes a test gives: for responses no well-behaved
HTTP server would send (a malformed head, a body cut short or running past its length, a close mid-stream),
which :class:`~jarvis_core.testing.ReplayServer` cannot produce."""

from __future__ import annotations

import contextlib
import socket
import ssl
import threading
from typing import Callable, Iterator, List, Optional

__all__ = ["Handler", "RawServer", "answering", "read_request", "serving"]

#: What serves one accepted connection (in a thread of its own); the server closes it afterwards.
Handler = Callable[[socket.socket], None]


class RawServer:
    """A TCP server on 127.0.0.1 whose connections are each handled by ``handler`` in a thread; ``tls``: a
    server-side SSL context to wrap them in. :attr:`connections` counts the connections accepted."""

    def __init__(self, handler: Handler, *, tls: Optional[ssl.SSLContext] = None) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port: int = self.sock.getsockname()[1]
        self.connections = 0
        self._handler = handler
        self._tls = tls
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with contextlib.suppress(OSError, ssl.SSLError):
            if self._tls is not None:
                conn = self._tls.wrap_socket(conn, server_side=True)
            self._handler(conn)
        with contextlib.suppress(OSError):
            conn.close()

    def url(self, scheme: str = "http", host: str = "127.0.0.1") -> str:
        return f"{scheme}://{host}:{self.port}"

    def close(self) -> None:
        self.sock.close()


@contextlib.contextmanager
def serving(handler: Handler, *, tls: Optional[ssl.SSLContext] = None) -> Iterator[RawServer]:
    """A :class:`RawServer` for the ``with`` block."""
    server = RawServer(handler, tls=tls)
    try:
        yield server
    finally:
        server.close()


def read_request(conn: socket.socket, first: Optional[List[bytes]] = None) -> bytes:
    """One whole request (head and ``Content-Length`` body), ``b""`` once the client closed; what the first
    ``recv`` returned is appended to ``first``."""
    data = conn.recv(1 << 20)
    if first is not None:
        first.append(data)
    while data and b"\r\n\r\n" not in data:
        more = conn.recv(1 << 20)
        if not more:
            return data
        data += more
    if not data:
        return b""
    head, _, body = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    while len(body) < length:
        more = conn.recv(1 << 20)
        if not more:
            break
        body += more
    return head + b"\r\n\r\n" + body


def answering(*answers: bytes, then_close: bool = False, linger: float = 0.0) -> Handler:
    """A handler that reads a request and sends the next of ``answers`` (raw bytes, head included), as often
    as there are answers; then keeps the connection open and silent for ``linger`` seconds and, with
    ``then_close``, closes it."""
    def handler(conn: socket.socket) -> None:
        for answer in answers:
            if not read_request(conn):
                return
            conn.sendall(answer)
        if linger:
            threading.Event().wait(linger)
        if then_close:
            conn.close()
    return handler
