"""Connection limits of the engines' pools (``max_connections`` / ``max_keepalive_connections``) on the sync
client and the async transport (aiohttp), over the loopback ReplayServer: concurrent streams that each hold
their connection."""

from __future__ import annotations

import asyncio
import threading
from typing import List

import pytest

from jarvis_core.engine.http import HTTPEngine
from jarvis_core.engine.pool import DEFAULT_MAX_CONNECTIONS, pool_limits
from jarvis_core.engine.streams import NDJSONByteDecoder
from jarvis_core.errors import ConfigError
from jarvis_core.testing import Exchange, ReplayServer

LINES = [{"n": 1}, {"n": 2}, {"n": 3}]


class Mini(HTTPEngine):
    engine_id = "mini-engine"

    def generate(self, messages, **kw):
        raise NotImplementedError

    def list_models(self) -> List[str]:
        return []


async def read_stream(engine: HTTPEngine) -> list:
    out: list = []
    async with engine.astream_batches("POST", "/s", NDJSONByteDecoder(), json_body={}) as batches:
        async for batch in batches:
            out += batch
    return out


def held_stream(hold: threading.Event, times: int) -> Exchange:
    """An NDJSON stream that stops after its first line until ``hold`` is set: the stream keeps its
    connection for as long as the test wants, as a model server's stream does while it generates."""
    return Exchange(path="/s", ndjson=LINES, hold=hold, hold_after=1, times=times)


async def burst(engine: HTTPEngine, server: ReplayServer, hold: threading.Event, n: int, busy: int) -> list:
    """``n`` concurrent streams; ``hold`` is set once ``busy`` connections are open at the same time."""
    tasks = [asyncio.ensure_future(read_stream(engine)) for _ in range(n)]
    loop = asyncio.get_running_loop()
    opened = await loop.run_in_executor(None, lambda: server.wait_until(lambda s: s.open_connections >= busy, 20))
    hold.set()
    results = await asyncio.wait_for(asyncio.gather(*tasks), 30)
    assert opened, f"only {server.open_connections} connections were open at once, expected {busy}"
    return results


def test_limits_default_and_validation():
    limits = pool_limits()
    assert limits.max_connections == DEFAULT_MAX_CONNECTIONS
    assert limits.max_keepalive_connections == DEFAULT_MAX_CONNECTIONS  # httpx keeps only 20
    assert pool_limits(300).max_keepalive_connections == 300
    assert pool_limits(10, 50).max_keepalive_connections == 10  # never more than may be open
    assert pool_limits(10, 0).max_keepalive_connections == 0
    for bad in ({"max_connections": 0}, {"max_connections": "8"}, {"max_keepalive_connections": -1},
                {"max_connections": True}):
        with pytest.raises(ValueError):
            pool_limits(**bad)
        with pytest.raises(ConfigError) as info:
            Mini(host="http://127.0.0.1:9", **bad)
        assert info.value.key == next(iter(bad))


def test_a_burst_of_held_streams_keeps_its_connections_for_the_next_burst():
    first, second = threading.Event(), threading.Event()
    n = 30
    with ReplayServer([held_stream(first, n), held_stream(second, n)]) as server:
        engine = Mini(host=server.url, max_connections=n)

        async def main():
            assert await burst(engine, server, first, n, n) == [LINES] * n
            assert server.connection_count == n
            # httpx's own pool keeps 20 alive and would open 10 again here.
            assert await burst(engine, server, second, n, n) == [LINES] * n
            assert server.connection_count == n
            await engine.aclose()

        asyncio.run(main())


def test_more_streams_than_connections_wait_for_one_and_all_finish():
    hold = threading.Event()
    with ReplayServer([held_stream(hold, None)]) as server:
        engine = Mini(host=server.url, max_connections=8)

        async def main():
            assert await burst(engine, server, hold, 40, 8) == [LINES] * 40
            await engine.aclose()

        asyncio.run(main())
        assert server.connection_count <= 8


def test_no_keepalive_closes_connections_after_use():
    with ReplayServer([Exchange(path="/s", ndjson=LINES)]) as server:
        engine = Mini(host=server.url, max_keepalive_connections=0)

        async def main():
            for _ in range(3):
                assert await read_stream(engine) == LINES
            await engine.aclose()

        asyncio.run(main())
        assert server.connection_count == 3


def test_a_keepalive_limit_above_zero_keeps_the_async_bursts_connections():
    # aiohttp has no cap on idle connections apart from max_connections: a limit above 0 keeps them all
    # (for keepalive_expiry), so the next burst opens none.
    first, second = threading.Event(), threading.Event()
    n, kept = 12, 4
    with ReplayServer([held_stream(first, n), held_stream(second, n)]) as server:
        engine = Mini(host=server.url, max_connections=n, max_keepalive_connections=kept)

        async def main():
            assert await burst(engine, server, first, n, n) == [LINES] * n
            assert await burst(engine, server, second, n, n) == [LINES] * n
            assert server.connection_count == n
            await engine.aclose()

        asyncio.run(main())


def test_a_waiting_request_that_is_cancelled_leaves_the_pool_usable():
    hold = threading.Event()
    with ReplayServer([held_stream(hold, 2), Exchange(path="/s", ndjson=LINES)]) as server:
        engine = Mini(host=server.url, max_connections=1)

        async def main():
            holder = asyncio.ensure_future(read_stream(engine))
            loop = asyncio.get_running_loop()
            assert await loop.run_in_executor(None, lambda: server.wait_until(lambda s: s.open_connections >= 1, 20))
            waiter = asyncio.ensure_future(read_stream(engine))  # no connection left: it waits in the pool
            await asyncio.sleep(0.2)
            waiter.cancel()
            with pytest.raises(asyncio.CancelledError):
                await waiter
            hold.set()
            assert await asyncio.wait_for(holder, 20) == LINES
            # The cancelled request is gone from the queue: the next one gets the connection back.
            assert await asyncio.wait_for(read_stream(engine), 20) == LINES
            assert server.connection_count == 1
            await engine.aclose()

        asyncio.run(main())


def test_an_expired_idle_connection_is_not_handed_out():
    import httpx

    from jarvis_core.engine.pool import async_transport
    from jarvis_core.engine.transport import shared_ssl_context

    with ReplayServer([Exchange(path="/s", ndjson=LINES)]) as server:
        limits = httpx.Limits(max_connections=4, max_keepalive_connections=4, keepalive_expiry=0.2)

        async def main():
            async with httpx.AsyncClient(transport=async_transport(limits, shared_ssl_context())) as client:
                assert (await client.post(server.url + "/s", json={})).status_code == 200
                assert (await client.post(server.url + "/s", json={})).status_code == 200
                assert server.connection_count == 1  # reused while fresh
                await asyncio.sleep(0.4)
                assert (await client.post(server.url + "/s", json={})).status_code == 200
                assert server.connection_count == 2  # past its keep-alive: a new one

        asyncio.run(main())


PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY")


def proxy_environment(monkeypatch: pytest.MonkeyPatch, **values: str) -> None:
    for name in PROXY_VARIABLES:
        for spelled in (name, name.lower()):
            monkeypatch.delenv(spelled, raising=False)
    for name, value in values.items():
        monkeypatch.setenv(name, value)


async def stream_then_close(engine: HTTPEngine) -> list:
    try:
        return await read_stream(engine)
    finally:
        await engine.aclose()


def test_an_engine_behind_the_environments_proxy_goes_through_it_streamed_or_not(monkeypatch):
    exchanges = [Exchange("POST", "/s", ndjson=LINES), Exchange("GET", "/j", json={"ok": 1})]
    with ReplayServer(exchanges) as proxy:
        proxy_environment(monkeypatch, HTTP_PROXY=proxy.url)
        engine = Mini(host="http://upstream.invalid:9")  # reachable only through the proxy
        assert engine.request_json("GET", "/j") == {"ok": 1}
        assert asyncio.run(stream_then_close(engine)) == LINES
        engine.close()
        assert [r.headers["host"] for r in proxy.requests] == ["upstream.invalid:9"] * 2


def test_an_address_in_no_proxy_is_reached_directly(monkeypatch):
    with ReplayServer([Exchange("POST", "/s", ndjson=LINES)]) as server:
        proxy_environment(monkeypatch, HTTP_PROXY="http://127.0.0.1:9", NO_PROXY="127.0.0.1")  # no proxy there
        engine = Mini(host=server.url)

        async def main() -> list:
            return await stream_then_close(engine)

        assert asyncio.run(main()) == LINES
        assert len(server.requests) == 1
