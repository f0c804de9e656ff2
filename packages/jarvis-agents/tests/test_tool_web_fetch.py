"""web_fetch's one overall deadline, against real loopback servers that drip: a body one byte per 0.5 s, and
a status line one byte at a time. The per-read timeout never fires on either; the deadline ends the call,
closes its connection and frees its thread, so later calls are not refused as "saturated"."""

from __future__ import annotations

import json
import socket
import threading
import time
from typing import Iterator

import pytest

from jarvis_agents.tools.ssrf import FetchFailedError
from jarvis_agents.tools.web import WebFetchTool, html_to_text
from jarvis_core.testing import Exchange, ReplayServer
from jarvis_core.tools import ToolExecutor
from jarvis_core.types import ToolCall

DEADLINE = 2.0
#: Liveness bound: the deadline plus room for a loaded machine (the drip would go on for 100 s).
BOUND = DEADLINE + 3.0


@pytest.fixture
def drip() -> Iterator[ReplayServer]:
    with ReplayServer([
        Exchange("GET", "/drip", headers={"content-type": "text/plain"}, raw=[b"x"] * 200, delay=0.5),
        Exchange("GET", "/page", headers={"content-type": "text/html"}, raw="<p>hello</p>"),
    ]) as server:
        yield server


@pytest.fixture
def slow_head() -> Iterator[int]:
    """A server that answers every connection with a status line sent one byte every 0.3 s."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    stop = threading.Event()

    def serve(conn: socket.socket) -> None:
        with conn:
            conn.recv(65536)
            for byte in b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n" * 20:
                if stop.wait(0.3):
                    return
                try:
                    conn.sendall(bytes([byte]))
                except OSError:
                    return

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            threading.Thread(target=serve, args=(conn,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    yield int(listener.getsockname()[1])
    stop.set()
    listener.close()


def _tool(port: int) -> WebFetchTool:
    return WebFetchTool(allow=[f"127.0.0.1:{port}"], timeout=1, deadline=DEADLINE)


def _call(i: int, url: str) -> ToolCall:
    return ToolCall(f"c{i}", "web_fetch", json.dumps({"url": url}))


def test_a_dripping_body_ends_at_the_deadline_and_frees_the_thread(drip):
    executor = ToolExecutor([_tool(drip.port)], max_abandoned_threads=3)
    started = time.monotonic()
    results = executor.execute_many([_call(i, drip.url + "/drip") for i in range(4)])
    assert time.monotonic() - started < BOUND  # before: each call ran as long as the server dripped
    assert all(not r.ok and "FetchFailedError" in r.content and "deadline" in r.content for r in results), results
    assert executor.abandoned_threads == 0  # before: 5 abandoned threads with limit 3
    assert drip.wait_until(lambda s: s.open_connections == 0)  # the connections went with the calls
    later = executor.execute(_call(9, drip.url + "/page"))
    assert later.ok and "hello" in later.content  # not refused as saturated


def test_a_dripping_status_line_ends_at_the_deadline(slow_head):
    started = time.monotonic()
    with pytest.raises(FetchFailedError, match="deadline"):
        _tool(slow_head).run(f"http://127.0.0.1:{slow_head}/")
    assert time.monotonic() - started < BOUND


def test_the_deadline_reaches_the_async_executor_too(drip):
    import asyncio

    executor = ToolExecutor([_tool(drip.port)], max_abandoned_threads=1)
    started = time.monotonic()
    result = asyncio.run(executor.aexecute(_call(1, drip.url + "/drip")))
    assert time.monotonic() - started < BOUND
    assert not result.ok and "deadline" in result.content and executor.abandoned_threads == 0


def test_html_past_the_deadline_comes_back_cut_and_says_so():
    markup = "<p>first</p>" + "<div>more</div>" * 10_000
    assert html_to_text(markup).endswith("more")
    text = html_to_text(markup, deadline=time.monotonic() - 1)
    assert text.endswith("[web_fetch: cut here; the deadline came before the page was turned into text]")


def test_deadline_is_checked_as_an_option():
    from jarvis_core.errors import ConfigError

    with pytest.raises(ConfigError, match="deadline"):
        WebFetchTool(deadline=0)
    assert WebFetchTool(deadline=7).policy.timeout == 12.0  # the executor waits a little longer than the tool


@pytest.mark.parametrize("host", ["2002:7f00:1::", "2002:a00:1::", "2002:a9fe:a9fe::"])
def test_a_6to4_address_carrying_a_private_ipv4_is_refused(host):
    from jarvis_agents.tools.ssrf import AddressPolicy, FetchRefusedError

    with pytest.raises(FetchRefusedError, match="inside 6to4"):
        AddressPolicy().check(host, 80)
    assert str(AddressPolicy().check("2002:808:808::", 80)) == "2002:808:808::"  # 8.8.8.8 inside: public
