"""A real loopback HTTP/1.1 server that replays recorded exchanges, for testing engines without a backend.

:class:`ReplayServer` listens on ``127.0.0.1`` on a free port, in background threads, and answers each
request with the first :class:`Exchange` that matches it. Streamed responses (NDJSON lines, SSE events, a
list of raw chunks) go out with chunked transfer encoding, one chunk per line or event, so a client sees
them arrive incrementally. An exchange can also misbehave on purpose: wait before each chunk
(``delay``), cut the connection after some chunks (``break_after``), close without answering (``drop``)
or never answer at all (``hang``).

A request that matches nothing gets HTTP 599 with a JSON error naming what was asked and what is recorded,
so a failing test says why. See ``docs/testing-plugins.md`` for a worked example.
"""

from __future__ import annotations

import json as _json
import select
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union
from urllib.parse import parse_qsl, urlsplit

import attrs

__all__ = ["UNMATCHED_STATUS", "Exchange", "RecordedRequest", "ReplayServer", "body_matches"]

#: The status of the answer to a request that no exchange matches.
UNMATCHED_STATUS = 599



class _Unset:
    def __repr__(self) -> str:
        return "UNSET"


#: "No JSON body" (``None`` is a JSON body: ``null``).
_UNSET: Any = _Unset()

#: A body matcher: a mapping that must be a (recursive) subset of the JSON body, or a predicate on it.
BodyMatch = Union[Mapping[str, Any], Callable[[Any], bool]]
Raw = Union[str, bytes, Sequence[Union[str, bytes]]]


def body_matches(expected: Any, actual: Any) -> bool:
    """True when ``expected`` is contained in ``actual``: mappings are matched as recursive subsets,
    lists element by element (same length), anything else by equality."""
    if isinstance(expected, Mapping):
        return isinstance(actual, Mapping) and all(
            k in actual and body_matches(v, actual[k]) for k, v in expected.items()
        )
    if isinstance(expected, (list, tuple)):
        return (
            isinstance(actual, (list, tuple))
            and len(expected) == len(actual)
            and all(body_matches(e, a) for e, a in zip(expected, actual, strict=True))
        )
    return bool(expected == actual)


def _method(value: str) -> str:
    return value.upper()


@attrs.frozen
class Exchange:
    """One recorded request/response pair.

    Matching: ``method`` (``"*"`` for any), ``path`` (``None`` for any; a path with ``?query`` also
    requires those query parameters), ``match`` (a dict that must be a subset of the JSON request body,
    or a predicate called with the decoded body, ``None`` when it is not JSON). ``times`` limits how often
    the exchange answers (``None``: always), which scripts sequences such as "first a 429, then a 200".

    Response: ``status``, ``headers`` and at most one body: ``json`` (any JSON value), ``ndjson`` (lines,
    each a JSON value or an already-encoded string), ``sse`` (raw event texts such as ``'data: {...}'``;
    each is sent followed by a blank line), or ``raw`` (text or bytes, or a list of them for a chunked
    stream whose chunks are sent exactly as given).

    Misbehaviour: ``delay`` seconds before each chunk; ``break_after=N`` closes the connection after
    ``N`` chunks (a killed server: the final chunk never arrives); ``drop`` closes the connection without
    any response; ``hang`` never answers (until the server stops). ``hold`` (a ``threading.Event``) stops
    the stream after ``hold_after`` chunks until the test sets it: a deterministic way to observe a
    half-delivered stream (incremental parsing, cancellation) without timing.
    """

    method: str = attrs.field(default="POST", converter=_method)
    path: Optional[str] = None
    match: Optional[BodyMatch] = None
    status: int = 200
    headers: Mapping[str, str] = attrs.field(factory=dict)
    json: Any = _UNSET
    ndjson: Optional[Sequence[Any]] = None
    sse: Optional[Sequence[str]] = None
    raw: Optional[Raw] = None
    delay: float = 0.0
    break_after: Optional[int] = None
    drop: bool = False
    hang: bool = False
    hold: Optional[threading.Event] = attrs.field(default=None, eq=False)
    hold_after: int = 1
    times: Optional[int] = None
    #: A name for error messages (the transcript id when loaded from transcripts).
    name: str = ""
    #: Anything the test wants to keep with the exchange (the loaders put the whole transcript here).
    meta: Mapping[str, Any] = attrs.field(factory=dict, eq=False, repr=False)

    def __attrs_post_init__(self) -> None:
        bodies = [n for n in ("ndjson", "sse", "raw") if getattr(self, n) is not None]
        if self.json is not _UNSET:
            bodies.append("json")
        if len(bodies) > 1:
            raise ValueError(f"Exchange {self.describe()} has several bodies ({', '.join(bodies)}); give one")
        if self.break_after is not None and self.break_after < 0:
            raise ValueError("break_after must be >= 0")

    def describe(self) -> str:
        """``METHOD /path [name]`` for messages."""
        label = f"{self.method} {self.path or '<any path>'}"
        return f"{label} [{self.name}]" if self.name else label

    # -- matching -----------------------------------------------------------------------------------
    def matches(self, method: str, path: str, query: Mapping[str, str], body: Any) -> bool:
        """True when this exchange answers the given request."""
        if self.method not in ("*", method.upper()):
            return False
        if self.path is not None:
            want_path, _, want_query = self.path.partition("?")
            if want_path != path:
                return False
            if any(query.get(k) != v for k, v in parse_qsl(want_query, keep_blank_values=True)):
                return False
        if self.match is not None:
            if callable(self.match):
                return bool(self.match(body))
            return body_matches(self.match, body)
        return True

    # -- response -----------------------------------------------------------------------------------
    def content_type(self) -> str:
        if self.json is not _UNSET:
            return "application/json"
        if self.ndjson is not None:
            return "application/x-ndjson"
        if self.sse is not None:
            return "text/event-stream"
        if isinstance(self.raw, bytes):
            return "application/octet-stream"
        return "text/plain; charset=utf-8"

    def streamed(self) -> bool:
        """True when the body goes out as several chunks (chunked transfer encoding)."""
        return self.ndjson is not None or self.sse is not None or isinstance(self.raw, (list, tuple))

    def chunks(self) -> List[bytes]:
        """The body as the list of chunks the server writes."""
        if self.json is not _UNSET:
            return [_json.dumps(self.json).encode()]
        if self.ndjson is not None:
            return [(line if isinstance(line, str) else _json.dumps(line)).encode() + b"\n" for line in self.ndjson]
        if self.sse is not None:
            return [(ev.rstrip("\r\n") + "\n\n").encode() for ev in self.sse]
        if self.raw is None:
            return []
        if isinstance(self.raw, (str, bytes)):
            return [_to_bytes(self.raw)]
        return [_to_bytes(c) for c in self.raw]


def _to_bytes(value: Union[str, bytes]) -> bytes:
    return value if isinstance(value, bytes) else value.encode()


@attrs.frozen
class RecordedRequest:
    """A request the server received: for assertions in tests."""

    method: str
    path: str
    query: Mapping[str, str]
    headers: Mapping[str, str]
    body: bytes
    #: The decoded JSON body, or ``None`` when the body is empty or not JSON.
    json: Any
    #: The name of the exchange that answered, or ``None`` when nothing matched.
    exchange: Optional[str] = None

    @property
    def target(self) -> str:
        """Path plus query string, as sent."""
        if not self.query:
            return self.path
        return self.path + "?" + "&".join(f"{k}={v}" for k, v in self.query.items())


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = True  # server_close() joins the handler threads

    def __init__(self, replay: ReplayServer) -> None:
        self.replay = replay
        self.open_sockets: set[Any] = set()
        self.sock_lock = threading.Lock()
        self.connection_count = 0
        super().__init__(("127.0.0.1", 0), _Handler)

    def get_request(self) -> Tuple[socket.socket, Any]:
        sock, addr = super().get_request()
        with self.sock_lock:
            self.open_sockets.add(sock)
            self.connection_count += 1
        return sock, addr

    def shutdown_request(self, request: Any) -> None:
        with self.sock_lock:
            self.open_sockets.discard(request)
        super().shutdown_request(request)

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that hangs up mid-response is normal in these tests (cancelled streams, timeouts).
        pass


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _read_body(self) -> bytes:
        if self.headers.get("transfer-encoding", "").lower() == "chunked":
            parts: List[bytes] = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return b"".join(parts)
                parts.append(self.rfile.read(size))
                self.rfile.readline()
        length = int(self.headers.get("content-length") or 0)
        return self.rfile.read(length) if length else b""

    def _dispatch(self) -> None:
        replay = self.server.replay
        raw = self._read_body()
        split = urlsplit(self.path)
        query = dict(parse_qsl(split.query, keep_blank_values=True))
        try:
            decoded = _json.loads(raw) if raw else None
        except ValueError:
            decoded = None
        exchange = replay._take(self.command, split.path, query, decoded)
        replay._record(
            RecordedRequest(
                method=self.command,
                path=split.path,
                query=query,
                headers={k.lower(): v for k, v in self.headers.items()},
                body=raw,
                json=decoded,
                exchange=(exchange.name or exchange.describe()) if exchange is not None else None,
            )
        )
        if exchange is None:
            self._send_unmatched(split.path, split.query)
        else:
            self._send(exchange)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_OPTIONS = _dispatch

    def _send_unmatched(self, path: str, query: str) -> None:
        asked = f"{self.command} {path}" + (f"?{query}" if query else "")
        recorded = self.server.replay._describe_available()
        body = _json.dumps(
            {
                "error": {
                    "message": f"ReplayServer: no recorded exchange matches {asked}; recorded: {recorded}",
                    "type": "replay_unmatched",
                }
            }
        ).encode()
        self.send_response(UNMATCHED_STATUS, "No Recorded Exchange")
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _send(self, ex: Exchange) -> None:
        stop = self.server.replay._stop
        if ex.hang:
            self._wait(None)
            self.close_connection = True
            return
        if ex.drop:
            self.close_connection = True
            self._hard_close()
            return
        chunks = ex.chunks()
        streamed = ex.streamed()
        self.send_response(ex.status)
        names = {k.lower() for k in ex.headers}
        for k, v in ex.headers.items():
            if k.lower() not in ("content-length", "transfer-encoding"):
                self.send_header(k, v)
        if "content-type" not in names:
            self.send_header("Content-Type", ex.content_type())
        if streamed:
            self.send_header("Transfer-Encoding", "chunked")
            self.send_header("Cache-Control", "no-cache")
        else:
            self.send_header("Content-Length", str(sum(map(len, chunks))))
        self.end_headers()
        self.wfile.flush()
        for i, chunk in enumerate(chunks):
            if ex.break_after is not None and i >= ex.break_after:
                break
            if ex.delay and stop.wait(ex.delay):
                break
            if ex.hold is not None and i == ex.hold_after and not self._wait(ex.hold):
                break
            if streamed:
                if not chunk:
                    continue  # an empty chunk would end the body
                self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            else:
                self.wfile.write(chunk)
            self.wfile.flush()
        else:
            if streamed:
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()
            return
        # Broken on purpose (or stopping): the body stays incomplete, like a killed server's.
        self.close_connection = True
        self._hard_close()

    def _wait(self, event: Optional[threading.Event]) -> bool:
        """Wait for ``event`` (``None``: forever). False when the server stops or the client hangs up first,
        so a held or hanging exchange never outlives its client."""
        stop = self.server.replay._stop
        while not stop.is_set():
            if event is not None and event.is_set():
                return True
            try:
                readable, _, _ = select.select([self.connection], [], [], 0.02)
                if readable:
                    if not self.connection.recv(1, socket.MSG_PEEK):
                        return False  # EOF: the client closed the connection
                    stop.wait(0.02)  # a pipelined request waits its turn; do not spin on it
            except OSError:
                return False
        return False

    def _hard_close(self) -> None:
        try:
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


class ReplayServer:
    """Serve recorded exchanges on ``127.0.0.1:<free port>`` until :meth:`stop` (or the ``with`` block ends).

    ::

        with ReplayServer([Exchange("GET", "/api/tags", json={"models": []})]) as server:
            engine = OllamaEngine(host=server.url)
            assert engine.list_models() == []
            assert server.requests[0].path == "/api/tags"

    Exchanges are tried in order; the first that matches answers. ``requests`` lists what arrived,
    ``connection_count`` how many TCP connections were opened (to check that clients pool them).
    """

    def __init__(self, exchanges: Sequence[Exchange] = ()) -> None:
        self._lock = threading.Lock()
        self._exchanges: List[Exchange] = []
        self._uses: Dict[int, int] = {}
        self._stop = threading.Event()
        self._requests: List[RecordedRequest] = []
        self._server: Optional[_Server] = None
        self._thread: Optional[threading.Thread] = None
        for ex in exchanges:
            self.add(ex)

    # -- setup --------------------------------------------------------------------------------------
    def add(self, exchange: Exchange) -> Exchange:
        """Add an exchange (also while serving); returns it."""
        if not isinstance(exchange, Exchange):
            raise TypeError(f"expected an Exchange, got {type(exchange).__name__}")
        with self._lock:
            self._exchanges.append(exchange)
        return exchange

    def start(self) -> ReplayServer:
        """Bind a free port and serve in a background thread. Returns ``self``."""
        if self._server is not None:
            return self
        self._stop.clear()
        self._server = _Server(self)
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.01}, name="jarvis-replay", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving: hanging exchanges return, open connections are closed, threads are joined."""
        server, self._server = self._server, None
        if server is None:
            return
        self._stop.set()
        server.shutdown()
        with server.sock_lock:
            socks = list(server.open_sockets)
        for sock in socks:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    close = stop

    def __enter__(self) -> ReplayServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- facts for tests ----------------------------------------------------------------------------
    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("ReplayServer is not running; use it as a context manager or call start()")
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>``: the base URL to point an engine at."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def requests(self) -> List[RecordedRequest]:
        """Every request received so far, in arrival order (a copy)."""
        with self._lock:
            return list(self._requests)

    @property
    def unmatched(self) -> List[RecordedRequest]:
        """The requests that no exchange matched."""
        return [r for r in self.requests if r.exchange is None]

    @property
    def connection_count(self) -> int:
        """How many TCP connections clients have opened to this server."""
        return self._server.connection_count if self._server is not None else 0

    @property
    def open_connections(self) -> int:
        """How many client connections are open right now (a closed pool brings this back to 0)."""
        if self._server is None:
            return 0
        with self._server.sock_lock:
            return len(self._server.open_sockets)

    def wait_for_requests(self, n: int, timeout: float = 5.0) -> List[RecordedRequest]:
        """Wait until at least ``n`` requests arrived (deprecated: ``wait_until``)."""
        from jarvis_core.deprecation import deprecated

        deprecated("ReplayServer.wait_for_requests", "wait_until(lambda server: len(server.requests) >= n)")
        self.wait_until(lambda s: len(s.requests) >= n, timeout)
        return self.requests

    def wait_until(self, predicate: Callable[[ReplayServer], bool], timeout: float = 5.0) -> bool:
        """Poll ``predicate(self)`` until it is true or ``timeout`` passes; returns its last value.

        For facts that settle asynchronously, such as a connection closing after a client hangs up.
        """
        deadline = time.monotonic() + timeout
        while not predicate(self):
            if time.monotonic() >= deadline:
                return bool(predicate(self))
            time.sleep(0.005)
        return True

    # -- internals used by the handler --------------------------------------------------------------
    def _take(self, method: str, path: str, query: Mapping[str, str], body: Any) -> Optional[Exchange]:
        with self._lock:
            for i, ex in enumerate(self._exchanges):
                if ex.times is not None and self._uses.get(i, 0) >= ex.times:
                    continue
                if ex.matches(method, path, query, body):
                    self._uses[i] = self._uses.get(i, 0) + 1
                    return ex
        return None

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self._requests.append(request)

    def _describe_available(self) -> str:
        with self._lock:
            items = [
                ex.describe() + (" (used up)" if ex.times is not None and self._uses.get(i, 0) >= ex.times else "")
                for i, ex in enumerate(self._exchanges)
            ]
        return "; ".join(items) if items else "nothing"

    def __repr__(self) -> str:
        where = self.url if self._server is not None else "stopped"
        return f"<ReplayServer {where} with {len(self._exchanges)} exchange(s)>"
