"""The engines' async transport (aiohttp under httpx's seam, ``jarvis_core.engine.aiohttp_transport``) over
real sockets, on asyncio's loop and on uvloop's: what the server receives, large bodies both ways, every
failure as the httpx error the engines translate, connections the server closed, TLS, and the HTTP/1.1
framings, reuse rules and malformed responses."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import socket
import ssl
import subprocess
import threading
import time
from typing import Any, Awaitable, Callable, List

import httpx
import pytest

from jarvis_core.engine.aiohttp_transport import AiohttpTransport
from jarvis_core.engine.pool import async_transport, pool_limits
from jarvis_core.engine.transport import shared_ssl_context
from jarvis_core.testing.raw_server import RawServer, answering, read_request, serving

#: Sizes past what one socket read or write moves, and past the longest response head a client accepts.
READ_BUFFER = WRITE_BUFFER = 256 * 1024
MAX_HEAD = 64 * 1024


def reply(body: bytes, *, extra: bytes = b"") -> bytes:
    return b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n%s\r\n%s" % (len(body), extra, body)


def client(verify: Any = None, timeout: float = 5.0) -> httpx.AsyncClient:
    transport = async_transport(pool_limits(), verify or shared_ssl_context())
    return httpx.AsyncClient(transport=transport, timeout=timeout)


@pytest.fixture(params=["asyncio", "uvloop"])
def run(request: Any) -> Callable[[Callable[[], Awaitable[Any]]], Any]:
    """Run a coroutine function on a fresh loop of the parametrised kind."""
    if request.param == "uvloop":
        uvloop = pytest.importorskip("uvloop")
        return lambda fn: uvloop.run(fn())
    return lambda fn: asyncio.run(fn())


def test_the_engines_pools_use_it():
    assert isinstance(async_transport(pool_limits(), shared_ssl_context()), AiohttpTransport)


def test_a_request_reaches_the_server_in_one_piece(run):
    firsts: List[bytes] = []

    def handler(conn: socket.socket) -> None:
        while True:
            request = read_request(conn, firsts)
            if not request:
                return
            conn.sendall(reply(b"ok"))

    body = b"x" * 3000

    async def main() -> None:
        async with client() as c:
            for _ in range(3):
                r = await c.post(server.url() + "/v1/chat", content=body, headers={"content-type": "application/json"})
                assert r.content == b"ok"

    with serving(handler) as server:
        run(main)
    firsts = [f for f in firsts if f]  # the last: the client's close
    assert len(firsts) == 3
    for first in firsts:  # head and body: one write, so the server's first read has all of it
        assert first.startswith(b"POST /v1/chat HTTP/1.1\r\n") and first.endswith(b"\r\n\r\n" + body)
    assert server.connections == 1  # kept alive between requests


def test_large_bodies_both_ways_arrive_whole(run):
    upload = bytes(range(256)) * (3 * WRITE_BUFFER // 256 + 7)
    download = hashlib.sha256(b"seed").digest() * (4 * READ_BUFFER // 32)

    def handler(conn: socket.socket) -> None:
        request = read_request(conn, [])
        got = request.partition(b"\r\n\r\n")[2]
        conn.sendall(reply(hashlib.sha256(got).hexdigest().encode() + b"\n" + download))

    async def main() -> bytes:
        async with client() as c:
            async with c.stream("POST", server.url() + "/up", content=upload) as r:
                await asyncio.sleep(0.3)  # the server's answer piles up past the read buffer meanwhile
                return b"".join([part async for part in r.aiter_raw()])

    with serving(handler) as server:
        got = run(main)
    digest, _, rest = got.partition(b"\n")
    assert digest == hashlib.sha256(upload).hexdigest().encode()
    assert rest == download


def test_a_server_that_never_answers_is_a_read_timeout(run):
    def handler(conn: socket.socket) -> None:
        read_request(conn, [])
        time.sleep(2)

    async def main() -> None:
        async with client(timeout=0.3) as c:
            with pytest.raises(httpx.ReadTimeout):
                await c.get(server.url() + "/slow")

    with serving(handler) as server:
        run(main)


def test_a_body_cut_short_is_a_protocol_error(run):
    def handler(conn: socket.socket) -> None:
        read_request(conn, [])
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly ten..")

    async def main() -> None:
        async with client() as c:
            with pytest.raises(httpx.RemoteProtocolError):
                await c.get(server.url() + "/cut")

    with serving(handler) as server:
        run(main)


def test_a_reset_connection_is_a_read_error_and_never_a_short_success(run):
    def handler(conn: socket.socket) -> None:
        read_request(conn, [])
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\npart")
        time.sleep(0.1)
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")  # close = RST

    async def main() -> None:
        async with client() as c:
            # aiohttp reports it as a body cut short (its cause: the reset); both become StreamError.
            with pytest.raises((httpx.ReadError, httpx.RemoteProtocolError)):
                async with c.stream("GET", server.url() + "/reset") as r:
                    async for _ in r.aiter_raw():
                        pass

    with serving(handler) as server:
        run(main)


def test_nothing_listening_is_a_connect_error(run):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # bound, never listening: refused

    async def main() -> None:
        async with client() as c:
            with pytest.raises(httpx.ConnectError):
                await c.get(f"http://127.0.0.1:{port}/")

    run(main)


def test_a_connection_the_server_closed_while_idle_is_replaced(run):
    def handler(conn: socket.socket) -> None:
        read_request(conn, [])
        conn.sendall(reply(b"once"))  # keep-alive by HTTP/1.1 rules, then closed by the server

    async def main() -> None:
        async with client() as c:
            assert (await c.get(server.url() + "/a")).content == b"once"
            await asyncio.sleep(0.2)  # the server's close arrives while the connection is idle in the pool
            assert (await c.get(server.url() + "/b")).content == b"once"

    with serving(handler) as server:
        run(main)
    assert server.connections == 2


def test_a_stream_left_early_closes_its_connection_at_once(run):
    gate = threading.Event()
    closed = threading.Event()

    def handler(conn: socket.socket) -> None:
        read_request(conn, [])
        conn.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nfirst\r\n")
        conn.settimeout(5)
        with contextlib.suppress(OSError):
            if conn.recv(1) == b"":
                closed.set()
        gate.wait(5)

    async def main() -> None:
        async with client() as c:
            async with c.stream("GET", server.url() + "/s") as r:
                async for part in r.aiter_raw():
                    assert part == b"first"
                    break
            assert await asyncio.get_running_loop().run_in_executor(None, closed.wait, 5)

    with serving(handler) as server:
        try:
            run(main)
        finally:
            gate.set()


def test_a_streams_socket_shut_down_from_another_thread_ends_its_read_at_once():
    # What the llama.cpp worker does (on asyncio's loop) to drop a generation: the response's network_stream
    # gives the socket.
    gate = threading.Event()

    def handler(conn: socket.socket) -> None:
        read_request(conn, [])
        conn.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nfirst\r\n")
        gate.wait(10)

    async def main() -> None:
        async with client(timeout=30.0) as c:
            async with c.stream("GET", server.url() + "/s") as r:
                sock = r.extensions["network_stream"].get_extra_info("socket")
                assert sock is not None
                parts = r.aiter_raw()
                assert await parts.__anext__() == b"first"
                threading.Timer(0.2, sock.shutdown, args=(socket.SHUT_RDWR,)).start()
                started = time.monotonic()
                with pytest.raises(httpx.TransportError):
                    async for _ in parts:
                        pass
                assert time.monotonic() - started < 5

    with serving(handler) as server:
        try:
            asyncio.run(main())
        finally:
            gate.set()


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: Any) -> Any:
    """A self-signed certificate for ``localhost`` (openssl's command line)."""
    folder = tmp_path_factory.mktemp("tls")
    key, cert = folder / "key.pem", folder / "cert.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(cert),
         "-days", "2", "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost"],
        check=True, capture_output=True)
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(cert, key)
    trusting = ssl.create_default_context(cafile=str(cert))
    return server, trusting


def test_tls_with_a_trusted_certificate(run, certificate):
    server_ctx, trusting = certificate

    def handler(conn: socket.socket) -> None:
        while read_request(conn, []):
            conn.sendall(reply(b"secret"))

    async def main() -> None:
        async with client(verify=trusting) as c:
            for _ in range(2):
                r = await c.get(server.url("https", "localhost") + "/")
                assert r.content == b"secret"

    with serving(handler, tls=server_ctx) as server:
        run(main)
    assert server.connections == 1


def test_tls_with_an_untrusted_certificate_is_a_connect_error(run, certificate):
    server_ctx, _ = certificate

    def handler(conn: socket.socket) -> None:
        read_request(conn, [])

    async def main() -> None:
        async with client() as c:  # the system's CAs: the self-signed certificate is not among them
            with pytest.raises(httpx.ConnectError, match=r"CERTIFICATE_VERIFY_FAILED|certificate verify failed"):
                await c.get(server.url("https", "localhost") + "/")

    with serving(handler, tls=server_ctx) as server:
        run(main)


# -- HTTP/1.1 as the transport's connections speak it -------------------------------------------------------
def get_twice(run: Any, server: RawServer, path: str = "/", method: str = "GET") -> List[httpx.Response]:
    async def main() -> List[httpx.Response]:
        async with client() as c:
            return [await c.request(method, server.url() + path) for _ in range(2)]
    return run(main)


def test_a_chunked_body_sent_byte_by_byte_with_extensions_and_trailers(run):
    body = b"".join(b"%x;ext=1\r\n%s\r\n" % (len(p), p) for p in (b"hello ", b"chunked ", b"world")) + b"0\r\nX-T: 1\r\n\r\n"
    head = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"

    def handler(conn: socket.socket) -> None:
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for _ in range(2):
            read_request(conn, [])
            for i in range(len(head + body)):
                conn.sendall((head + body)[i:i + 1])

    with serving(handler) as server:
        responses = get_twice(run, server)
    assert [r.content for r in responses] == [b"hello chunked world"] * 2
    assert server.connections == 1  # read to its end, the connection served the second request too


def test_the_chunks_of_one_read_come_out_as_one_piece(run):
    chunks = [b"data: %d\n\n" % i for i in range(50)]
    answer = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + b"".join(
        b"%x\r\n%s\r\n" % (len(c), c) for c in chunks) + b"0\r\n\r\n"

    async def main() -> List[bytes]:
        async with client() as c:
            async with c.stream("GET", server.url()) as r:
                return [part async for part in r.aiter_raw()]

    with serving(answering(answer)) as server:
        parts = run(main)
    assert b"".join(parts) == b"".join(chunks)
    assert len(parts) < len(chunks)  # one piece per network read, not one per chunk


@pytest.mark.parametrize("answer", [
    b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok",
    b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok",
], ids=["connection-close", "http-1.0"])
def test_a_connection_that_cannot_carry_another_request_is_not_reused(run, answer):
    def handler(conn: socket.socket) -> None:
        read_request(conn, [])
        conn.sendall(answer)
        # The server keeps the connection open without answering again: a client that sent its next request
        # on it would wait, then see it closed without a response.
        time.sleep(1.0)

    with serving(handler) as server:
        responses = get_twice(run, server)
    assert [r.content for r in responses] == [b"ok"] * 2
    assert server.connections == 2


def test_bytes_past_the_body_in_the_same_read_are_a_protocol_error(run):
    # aiohttp parses bytes that came with the response past its Content-Length as the next response head
    # and fails the response: a framing the client cannot trust, never a short or a mixed-up success.
    def handler(conn: socket.socket) -> None:
        read_request(conn, [])
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok and more")
        time.sleep(1.0)

    async def main() -> None:
        async with client() as c:
            with pytest.raises(httpx.RemoteProtocolError):
                await c.get(server.url())

    with serving(handler) as server:
        run(main)


def test_a_body_without_a_length_ends_with_the_connection(run):
    with serving(answering(b"HTTP/1.1 200 OK\r\n\r\nuntil the end", then_close=True)) as server:
        responses = get_twice(run, server)
    assert [r.content for r in responses] == [b"until the end"] * 2
    assert server.connections == 2


@pytest.mark.parametrize("answer, method", [
    (b"HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\n", "GET"),
    (b"HTTP/1.1 304 Not Modified\r\n\r\n", "GET"),
    (b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n", "HEAD"),
], ids=["204", "304", "HEAD"])
def test_responses_without_a_body_leave_the_connection_reusable(run, answer, method):
    with serving(answering(answer, answer)) as server:
        responses = get_twice(run, server, method=method)
    assert [r.content for r in responses] == [b"", b""]
    assert server.connections == 1


def test_informational_responses_bare_line_feeds_and_folded_headers(run):
    answer = (b"HTTP/1.1 100 Continue\r\n\r\n"
              b"HTTP/1.1 200 OK\nX-Folded: one\n two\nContent-Length: 2\n\nok")
    with serving(answering(answer, answer)) as server:
        responses = get_twice(run, server)
    assert [r.content for r in responses] == [b"ok", b"ok"]
    assert responses[0].headers["x-folded"] == "one two"
    assert server.connections == 1


@pytest.mark.parametrize("answer", [
    b"HTTP/2 200 OK\r\nContent-Length: 2\r\n\r\nok",
    b"HTTP/1.1 2000 OK\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nNo colon here\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nok",
    b"HTTP/1.1 200 OK\r\nContent-Length: -2\r\n\r\nok",
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0x5\r\nhello\r\n0\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhello\r\n0\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nX-Big: " + b"a" * (MAX_HEAD + 10),  # a head that does not end
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel",  # cut inside a chunk
    b"HTTP/1.1 200 OK\r\nContent-Le",  # cut inside the head
    b"",  # closed without a word
], ids=["version", "status", "header", "two-lengths", "negative-length", "chunk-size", "chunk-size-0x", "chunk-overrun",
        "huge-head", "cut-chunk", "cut-head", "nothing"])
def test_a_malformed_or_broken_response_is_a_protocol_error(run, answer):
    def handler(conn: socket.socket) -> None:
        read_request(conn, [])
        conn.sendall(answer)
        # A head past the limit is refused as it arrives: the server then says nothing more for longer than
        # the client's read timeout, so a client that waited for the rest would time out instead.
        time.sleep(2.0 if len(answer) > MAX_HEAD else 0.05)
        conn.shutdown(socket.SHUT_WR)
        time.sleep(0.5)

    async def main() -> None:
        async with client(timeout=1.0) as c:
            with pytest.raises(httpx.RemoteProtocolError):
                await c.get(server.url())

    with serving(handler) as server:
        run(main)


def test_a_header_that_would_split_the_request_is_refused(run):
    async def main() -> None:
        async with client() as c:
            with pytest.raises(httpx.LocalProtocolError):
                await c.get(server.url(), headers={"x-key": "a\r\nX-Injected: 1"})

    with serving(answering(reply(b"ok"))) as server:
        run(main)


def test_a_sync_request_never_imports_aiohttp():
    # aiohttp costs about as much to import as httpx: only an engine's async client loads it.
    import sys

    code = ("import sys\nfrom jarvis_core.engine.http import HTTPEngine\n"
            "class E(HTTPEngine):\n    engine_id = 'e'\n    def generate(self, *a, **k): ...\n"
            "    def list_models(self): return []\n"
            "E(host='http://127.0.0.1:9').health()\nassert 'aiohttp' not in sys.modules, 'aiohttp was imported'\n")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def test_an_async_client_left_open_is_closed_when_asyncio_run_ends():
    # An engine used from asyncio.run without aclose(): the loop's shutdown closes the aiohttp session, so
    # nothing reports an unclosed session, connector or socket at exit.
    import sys

    code = ("import asyncio, gc\nfrom jarvis_core.testing import Exchange, ReplayServer\n"
            "from jarvis_core.engine.http import HTTPEngine\n"
            "class E(HTTPEngine):\n    engine_id = 'e'\n    def generate(self, *a, **k): ...\n"
            "    def list_models(self): return []\n"
            "with ReplayServer([Exchange('GET', '/j', json={'ok': 1}, times=None)]) as server:\n"
            "    engine = E(host=server.url)\n"
            "    for _ in range(2):\n"
            "        assert asyncio.run(engine.arequest_json('GET', '/j')) == {'ok': 1}\n"
            "    del engine\n    gc.collect()\n")
    proc = subprocess.run([sys.executable, "-W", "always::ResourceWarning", "-c", code], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "nclosed" not in proc.stderr, proc.stderr
