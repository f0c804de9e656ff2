"""HTTPEngine plumbing: typed errors from statuses and transports, streams, pooling, secrets.

Driven two ways: ``httpx.MockTransport`` (no sockets) and the loopback ReplayServer (real HTTP).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import textwrap
from typing import Any, List

import httpx
import pytest

from jarvis_core.engine.http import HTTPEngine, normalize_base_url
from jarvis_core.engine.streams import LineByteDecoder, SSEByteDecoder, decode_json
from jarvis_core.errors import (
    AuthenticationError,
    BadRequestError,
    ConfigError,
    ContentFilterError,
    ContextLengthError,
    EngineConnectionError,
    EngineHTTPError,
    EngineTimeoutError,
    MalformedResponseError,
    ModelNotFoundError,
    RateLimitError,
    ServerError,
    StreamError,
    ToolsNotSupportedError,
)
from jarvis_core.testing import Exchange, ReplayServer, closed_port_url

KEY = "sk-test-SECRET-key-987654"


@contextlib.asynccontextmanager
async def streamed(engine, path, decoder):
    """The JSON items of a streamed POST, read the way engines read them: ``astream_batches`` and a byte
    decoder (``SSEByteDecoder(until_done=True)`` or ``LineByteDecoder()``), one item at a time."""
    async with engine.astream_batches("POST", path, decoder, json_body={}) as batches:
        async def items():
            async for batch in batches:
                for raw in batch:
                    if raw.strip():
                        yield decode_json(raw, engine_id=engine.engine_id)

        gen = items()
        try:
            yield gen
        finally:
            await gen.aclose()


class Mini(HTTPEngine):
    engine_id = "mini-engine"
    health_path = "/health"
    strip_suffix = "/v1"

    def generate(self, messages, **kw):
        raise NotImplementedError

    def list_models(self) -> List[str]:
        return [m["id"] for m in self.request_json("GET", "/v1/models")["data"]]


def mock_engine(handler, **kw: Any) -> Mini:
    return Mini(host="http://mock", transport=httpx.MockTransport(handler), async_transport=httpx.MockTransport(handler), **kw)


def answering(status: int, body: Any, headers: Any = None):
    def handler(request: httpx.Request) -> httpx.Response:
        if isinstance(body, (dict, list)):
            return httpx.Response(status, json=body, headers=headers)
        return httpx.Response(status, text=body, headers=headers)

    return handler


# -- status -> typed error ----------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("status", "body", "headers", "error"),
    [
        (404, {"error": "model 'llama9' not found"}, None, ModelNotFoundError),
        (400, {"error": {"message": "model \"x\" does not exist"}}, None, ModelNotFoundError),
        (429, {"error": {"message": "Too many requests"}}, {"Retry-After": "7"}, RateLimitError),
        (401, {"error": {"message": "Incorrect API key provided"}}, None, AuthenticationError),
        (403, "forbidden", None, AuthenticationError),
        (400, {"error": {"message": "This model's maximum context length is 4096 tokens."}}, None, ContextLengthError),
        (400, {"error": {"message": "\"auto\" tool choice requires --enable-auto-tool-choice"}}, None,
         ToolsNotSupportedError),
        (400, {"error": "registry.ollama.ai/library/gemma2:2b does not support tools"}, None, ToolsNotSupportedError),
        (400, {"error": {"message": "Output blocked by content filter"}}, None, ContentFilterError),
        (422, {"detail": "field required"}, None, BadRequestError),
        (500, "Internal Server Error", None, ServerError),
        (503, {"error": {"message": "Service Unavailable"}}, None, ServerError),
        (418, "teapot", None, EngineHTTPError),
    ],
)
def test_status_maps_to_typed_error(status, body, headers, error):
    engine = mock_engine(answering(status, body, headers))
    with pytest.raises(error) as info:
        engine.request_json("POST", "/v1/chat/completions", json_body={}, model="llama9")
    exc = info.value
    assert type(exc) is error
    assert exc.status_code == status and exc.engine_id == "mini-engine"
    assert f"HTTP {status}" in str(exc) or status == 400
    if error is RateLimitError:
        assert exc.retry_after == 7.0 and "retry after 7s" in str(exc)
    if error is ModelNotFoundError and status == 404:
        assert "'llama9'" in str(exc)


def test_rate_limit_without_retry_after():
    with pytest.raises(RateLimitError) as info:
        mock_engine(answering(429, {"error": "slow"})).request_json("GET", "/x")
    assert info.value.retry_after is None


def test_error_body_excerpt_is_bounded():
    with pytest.raises(ServerError) as info:
        mock_engine(answering(500, "x" * 10_000)).request_json("GET", "/x")
    assert len(str(info.value)) < 500 and len(info.value.body) <= 300


def test_invalid_json_on_success_is_a_malformed_response():
    with pytest.raises(MalformedResponseError, match="invalid JSON") as info:
        mock_engine(answering(200, "<html>not json</html>")).request_json("GET", "/x")
    assert not isinstance(info.value, StreamError)  # nothing was streamed
    assert info.value.excerpt == "<html>not json</html>" and info.value.engine_id == "mini-engine"


async def test_async_request_maps_errors_too():
    engine = mock_engine(answering(404, {"error": "model 'm' not found"}))
    with pytest.raises(ModelNotFoundError):
        await engine.arequest_json("POST", "/api/chat", json_body={}, model="m")
    await engine.aclose()


async def test_stream_error_status_raises_before_any_line():
    engine = mock_engine(answering(400, {"error": {"message": "prompt is too long"}}))
    with pytest.raises(ContextLengthError):
        async with streamed(engine, "/v1/chat/completions", SSEByteDecoder()) as items:
            async for _ in items:
                raise AssertionError("no item may be yielded for an error status")
    await engine.aclose()


# -- secrets ------------------------------------------------------------------------------------------
def test_request_urls_join_the_base_url_and_the_path_every_time():
    engine = Mini(host="http://h:1/api/")
    for client in (engine.client, engine.aclient):
        for _ in range(2):  # the second time from the engine's parsed URLs
            assert str(engine.build_request(client, "POST", "/a?x=1", json_body={}).url) == "http://h:1/api/a?x=1"
            assert str(engine.build_request(client, "POST", "b").url) == "http://h:1/api/b"
            assert str(engine.build_request(client, "GET", "/a", params={"y": "2"}).url) == "http://h:1/api/a?y=2"
    engine.close()


def test_a_cookie_the_server_sets_is_sent_back_and_responses_without_one_cost_no_cookie_work(monkeypatch):
    import http.cookiejar

    seen: list = []
    real = http.cookiejar.CookieJar.extract_cookies
    monkeypatch.setattr(http.cookiejar.CookieJar, "extract_cookies", lambda *a: seen.append(a) or real(*a))
    exchanges = [Exchange("GET", "/first", json={}, headers={"set-cookie": "lb=node-7; Path=/"}),
                 Exchange("GET", "/next", json={})]
    with ReplayServer(exchanges + exchanges) as server:
        engine = Mini(host=server.url)
        engine.request_json("GET", "/first")
        assert len(seen) == 1  # the jar read the answer that set a cookie
        engine.request_json("GET", "/next")
        assert server.requests[-1].headers.get("cookie") == "lb=node-7"
        assert len(seen) == 1  # the answer set no cookie: the jar was not consulted

        async def twice() -> None:  # the async client, on aiohttp, alike
            await engine.arequest_json("GET", "/first")
            await engine.arequest_json("GET", "/next")
            await engine.aclose()

        asyncio.run(twice())
        assert server.requests[-1].headers.get("cookie") == "lb=node-7" and len(seen) == 2
        engine.close()


def test_key_is_sent_but_never_shown():
    seen = {}

    def handler(request: httpx.Request) -> httpx.Response:
        seen["auth"] = request.headers.get("authorization")
        return httpx.Response(401, json={"error": {"message": f"Invalid API key: {KEY}"}})

    engine = mock_engine(handler, api_key=KEY)
    with pytest.raises(AuthenticationError) as info:
        engine.request_json("GET", "/v1/models")
    assert seen["auth"] == f"Bearer {KEY}"
    assert KEY not in str(info.value) and KEY not in info.value.body and KEY not in repr(engine)


def test_connection_error_does_not_show_key():
    engine = Mini(host=closed_port_url(), api_key=KEY)
    with pytest.raises(EngineConnectionError) as info:
        engine.list_models()
    assert KEY not in str(info.value)


# -- transport failures -------------------------------------------------------------------------------
def test_connection_refused_is_engine_connection_error():
    url = closed_port_url()
    engine = Mini(host=url)
    with pytest.raises(EngineConnectionError) as info:
        engine.request_json("GET", "/v1/models")
    message = str(info.value)
    assert url in message and "MINI_ENGINE_HOST" in message
    assert engine.health() is False


async def test_async_connection_refused():
    engine = Mini(host=closed_port_url())
    with pytest.raises(EngineConnectionError):
        await engine.arequest_json("GET", "/x")
    with pytest.raises(EngineConnectionError):
        async with streamed(engine, "/x", LineByteDecoder()):
            pass
    await engine.aclose()


def test_timeout_is_an_engine_timeout_error():
    with ReplayServer([Exchange("*", None, hang=True)]) as server:
        engine = Mini(host=server.url, timeout=0.2)
        with pytest.raises(EngineTimeoutError, match=r"timed out after 0\.2s waiting for an answer from") as info:
            engine.request_json("GET", "/v1/models")
        engine.close()
        url = f"{server.url}/v1/models"
    assert isinstance(info.value, EngineConnectionError)  # existing `except EngineConnectionError` still catch it
    assert (info.value.phase, info.value.timeout, info.value.url) == ("read", 0.2, url)


def test_health_true_false_and_never_raises():
    with ReplayServer([Exchange("GET", "/health", json={}), Exchange("GET", "/bad", status=500, json={})]) as server:
        assert Mini(host=server.url).health() is True
        bad = Mini(host=server.url)
        bad.health_path = "/bad"
        assert bad.health() is False
    with ReplayServer([Exchange("*", None, hang=True)]) as server:
        assert Mini(host=server.url, health_timeout=0.2).health() is False


# -- streams over real HTTP ---------------------------------------------------------------------------
async def test_server_cut_mid_stream_is_stream_error():
    lines = ['data: {"n": 1}', 'data: {"n": 2}', 'data: {"n": 3}', "data: [DONE]"]
    with ReplayServer([Exchange("POST", "/s", sse=lines, break_after=2)]) as server:
        engine = Mini(host=server.url)
        got = []
        with pytest.raises(StreamError, match="broke off"):
            async with streamed(engine, "/s", SSEByteDecoder(until_done=True)) as items:
                async for payload in items:
                    got.append(payload["n"])
        assert got == [1, 2]
        await engine.aclose()


_KILLABLE_SERVER = textwrap.dedent(
    """
    import sys, threading, time
    from jarvis_core.testing import Exchange, ReplayServer
    never = threading.Event()
    server = ReplayServer([Exchange("POST", "/s", ndjson=[{"n": 1}, {"n": 2}], hold=never)]).start()
    print(server.url, flush=True)
    time.sleep(600)
    """
)


async def test_killed_server_mid_stream_raises_stream_error_not_a_timeout():
    proc = subprocess.Popen([sys.executable, "-c", _KILLABLE_SERVER], stdout=subprocess.PIPE, text=True)
    try:
        url = proc.stdout.readline().strip()
        engine = Mini(host=url, timeout=120)  # a hang would show up as a timeout error, far later
        got = []
        with pytest.raises(StreamError):
            async with streamed(engine, "/s", LineByteDecoder()) as items:
                async for obj in items:
                    got.append(obj["n"])
                    os.kill(proc.pid, signal.SIGKILL)
        assert got == [1]
        await engine.aclose()
    finally:
        proc.kill()
        proc.wait()


async def test_abandoning_a_stream_closes_its_connection_at_once():
    import threading

    gate = threading.Event()  # the server holds the rest of the answer until the test ends
    with ReplayServer([Exchange("POST", "/s", ndjson=[1, 2, 3], hold=gate)]) as server:
        engine = Mini(host=server.url)

        async def engine_stream():  # how engines wrap astream_batches
            async with streamed(engine, "/s", LineByteDecoder()) as items:
                async for obj in items:
                    yield obj

        agen = engine_stream()
        assert await agen.__anext__() == 1
        await agen.aclose()  # the consumer stops: the generation must be cancelled, not drained
        # the server sees the hang-up although it was still holding the answer (waited for off the loop,
        # which closes the socket on its next turn)
        loop = asyncio.get_running_loop()
        assert await loop.run_in_executor(None, server.wait_until, lambda s: s.open_connections == 0)
        gate.set()
        await engine.aclose()


# -- pooling ------------------------------------------------------------------------------------------
def test_sync_client_is_pooled():
    with ReplayServer([Exchange("GET", "/v1/models", json={"data": [{"id": "a"}]})]) as server:
        engine = Mini(host=server.url + "/v1/")
        assert engine.base_url == server.url
        for _ in range(3):
            assert engine.list_models() == ["a"]
        assert engine.client is engine.client
        assert server.connection_count == 1 and len(server.requests) == 3
        engine.close()
        engine.close()
        assert server.wait_until(lambda s: s.open_connections == 0)


async def test_async_client_is_pooled_even_when_streams_stop_at_done():
    exchanges = [
        Exchange("POST", "/sse", sse=['data: {"x": 1}', "data: [DONE]"]),
        Exchange("POST", "/nd", ndjson=[{"done": False}, {"done": True}]),
        Exchange("GET", "/j", json={"ok": 1}),
    ]
    with ReplayServer(exchanges) as server:
        engine = Mini(host=server.url)
        for _ in range(3):
            async with streamed(engine, "/sse", SSEByteDecoder(until_done=True)) as items:
                assert [p async for p in items] == [{"x": 1}]
            async with streamed(engine, "/nd", LineByteDecoder()) as items:
                async for obj in items:
                    if obj["done"]:
                        break  # stop at the protocol's end marker
            assert await engine.arequest_json("GET", "/j") == {"ok": 1}
        assert server.connection_count == 1
        await engine.aclose()
        assert server.wait_until(lambda s: s.open_connections == 0)


def test_a_new_event_loop_gets_a_new_async_pool():
    with ReplayServer([Exchange("GET", "/j", json=1)]) as server:
        engine = Mini(host=server.url)

        async def call():
            await engine.arequest_json("GET", "/j")
            return engine.aclient

        first = asyncio.run(call())
        second = asyncio.run(call())
        assert first is not second
        asyncio.run(engine.aclose())


def test_requests_carry_json_and_extra_headers():
    with ReplayServer([Exchange("POST", "/c", json={})]) as server:
        engine = Mini(host=server.url, headers={"X-Client": "jarvis"}, api_key="k1234")
        engine.request_json("POST", "/c", json_body={"model": "m", "messages": []}, params={"q": "1"})
        (req,) = server.requests
        assert req.json == {"model": "m", "messages": []} and req.query == {"q": "1"}
        assert req.headers["x-client"] == "jarvis" and req.headers["authorization"] == "Bearer k1234"
        engine.close()


# -- construction -------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("given", "suffix", "expected"),
    [
        ("localhost:11434", "", "http://localhost:11434"),
        ("http://h:1/", "", "http://h:1"),
        ("https://api.example.com/v1/", "/v1", "https://api.example.com"),
        (" http://h:8000/v1 ", "/v1", "http://h:8000"),
        ("http://h/v1beta", "/v1", "http://h/v1beta"),
    ],
)
def test_normalize_base_url(given, suffix, expected):
    assert normalize_base_url(given, strip_suffix=suffix) == expected


@pytest.mark.parametrize("bad", ["notaurl::", "ftp://files.example", "http://", "http://h:port"])
def test_a_bad_address_is_a_config_error_naming_it(bad):
    with pytest.raises(ConfigError, match="invalid server address") as info:
        Mini(host=bad)
    assert repr(bad) in str(info.value)


def test_no_host_is_a_config_error():
    with pytest.raises(ConfigError, match="no host given") as info:
        Mini()
    assert info.value.key == "host"


def test_base_url_alias_and_repr():
    engine = Mini(base_url="h:9", api_key=KEY)
    assert engine.base_url == "http://h:9"
    assert repr(engine) == "<Mini 'mini-engine' http://h:9>"


def test_mock_transport_body_is_json():
    captured = {}

    def handler(request: httpx.Request) -> httpx.Response:
        captured["body"] = json.loads(request.content)
        return httpx.Response(200, json={"ok": True})

    assert mock_engine(handler).request_json("POST", "/x", json_body={"a": [1]}) == {"ok": True}
    assert captured["body"] == {"a": [1]}


async def test_close_in_a_running_loop_keeps_its_task_until_the_pool_is_closed():
    import gc

    from jarvis_core.engine import http as http_module

    with ReplayServer([Exchange("GET", "/j", json=1)]) as server:
        engine = Mini(host=server.url)
        await engine.arequest_json("GET", "/j")
        pool = engine.aclient
        engine.close()  # the sync close, called from async code: the pool is closed by a scheduled task
        pending = list(http_module._closing)
        assert len(pending) == 1
        gc.collect()  # the loop holds tasks only weakly; ours must survive this
        await asyncio.wait_for(asyncio.gather(*pending), timeout=10)
        assert pool.is_closed and not http_module._closing
        assert server.wait_until(lambda s: s.open_connections == 0)


def test_close_from_another_thread_closes_the_pool_on_its_own_loop():
    import threading

    with ReplayServer([Exchange("GET", "/j", json=1)]) as server:
        loop = asyncio.new_event_loop()
        thread = threading.Thread(target=loop.run_forever, daemon=True)
        thread.start()
        try:
            engine = Mini(host=server.url)
            asyncio.run_coroutine_threadsafe(engine.arequest_json("GET", "/j"), loop).result(timeout=10)
            pool = engine._aclient
            engine.close()
            assert server.wait_until(lambda s: s.open_connections == 0)
            assert pool is not None and pool.is_closed
        finally:
            loop.call_soon_threadsafe(loop.stop)
            thread.join(timeout=10)
            loop.close()
