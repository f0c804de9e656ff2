"""The llamacpp engine's stream watch (what the managed worker streams through), over a real loopback server."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from typing import Any, List, Optional

import httpx
import pytest

from jarvis_core.errors import StreamError
from jarvis_core.testing.replay import Exchange, ReplayServer
from jarvis_engine_openai_compat.engines import LlamaCppEngine
from jarvis_engine_openai_compat.engines.llamacpp import template_supports_tools

BASE = {"id": "c1", "object": "chat.completion.chunk", "model": "m"}
MSGS = [{"role": "user", "content": "hi"}]


def event(delta: dict, finish: Optional[str] = None) -> str:
    return "data: " + json.dumps({**BASE, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})


def call_fragments(name: str, arguments: str, pieces: int = 3) -> List[str]:
    size = -(-len(arguments) // pieces)
    head = event({"tool_calls": [{"index": 0, "id": "call_a", "type": "function",
                                  "function": {"name": name, "arguments": ""}}]})
    return [head, *(event({"tool_calls": [{"index": 0, "function": {"arguments": arguments[i:i + size]}}]})
                    for i in range(0, len(arguments), size))]


class Watch:
    def __init__(self, stop_on: Optional[str] = None) -> None:
        self.sockets: List[Any] = []
        self.reads = 0
        self.calls: List[tuple] = []
        self.stop_on = stop_on

    def opened(self, response: httpx.Response) -> None:
        self.sockets.append(response.extensions["network_stream"].get_extra_info("socket"))

    def received(self) -> None:
        self.reads += 1

    def tool_calls(self, calls: tuple) -> None:
        self.calls.append(calls)
        if self.stop_on and calls and calls[-1].arguments.endswith("}"):
            raise LookupError(self.stop_on)


def collect(engine: LlamaCppEngine) -> list:
    async def run() -> list:
        try:
            return [c async for c in engine.stream_full(MSGS, model="m", max_tokens=16, id_slot=0,
                                                           cache_prompt=True, return_progress=True)]
        finally:
            await engine.aclose()

    return asyncio.run(run())


def test_the_watch_sees_headers_reads_and_tool_call_fragments():
    args = json.dumps({"question": "Ship?", "options": ["yes", "no"]})
    sse = [event({"content": "Hm. "}), *call_fragments("decision_request", args), event({}, "tool_calls")]
    with ReplayServer([Exchange("POST", "/v1/chat/completions", sse=sse, delay=0.01)]) as server:
        engine = LlamaCppEngine(host=server.url)
        engine.watch = watch = Watch()
        chunks = collect(engine)
        body = server.requests[0].json
    assert (body["id_slot"], body["cache_prompt"], body["return_progress"]) == (0, True, True)
    assert callable(watch.sockets[0].shutdown)  # asyncio's TransportSocket around the connection's socket
    assert watch.reads >= 3  # one per network read; the chunks came apart
    assert [c[0].name for c in watch.calls] == ["decision_request"] * 4
    assert watch.calls[-1][0].arguments == args and watch.calls[0][0].arguments == "{}"
    assert chunks[0].content == "Hm. " and chunks[-1].tool_calls[0].arguments == args


def test_a_watch_that_raises_abandons_the_stream_at_once():
    args = json.dumps({"question": "Ship?", "options": ["yes"]})
    sse = [*call_fragments("decision_request", args, pieces=1), event({"content": "never"}), event({}, "stop")]
    with ReplayServer([Exchange("POST", "/v1/chat/completions", sse=sse)]) as server:
        engine = LlamaCppEngine(host=server.url)
        engine.watch = Watch(stop_on="decision")
        with pytest.raises(LookupError, match="decision"):
            collect(engine)


def test_shutting_the_socket_from_another_thread_ends_a_silent_stream():
    """What a cancel does: the server holds the stream (no bytes), another thread shuts the socket."""
    hold = threading.Event()
    sse = [event({"content": "partial"}), event({"content": " never"}), event({}, "stop")]
    with ReplayServer([Exchange("POST", "/v1/chat/completions", sse=sse, hold=hold, hold_after=1)]) as server:
        engine = LlamaCppEngine(host=server.url, timeout=float("inf"))
        engine.watch = watch = Watch()
        seen: List[Any] = []

        def shut_when_streaming() -> None:
            deadline = time.monotonic() + 30
            while not watch.sockets and time.monotonic() < deadline:
                time.sleep(0.01)
            time.sleep(0.2)
            watch.sockets[0].shutdown(socket.SHUT_RDWR)

        threading.Thread(target=shut_when_streaming, daemon=True).start()
        started = time.monotonic()
        with pytest.raises(StreamError):
            for chunk in collect(engine):
                seen.append(chunk)
        hold.set()
    assert time.monotonic() - started < 20  # woken by the shutdown, not by a timeout (there is none)


@pytest.mark.parametrize("props, expected", [
    ({"chat_template_caps": {"supports_tools": False}}, False),
    ({"chat_template_caps": {"supports_tools": True, "supports_tool_calls": False}}, False),
    ({"chat_template_caps": {"supports_tools": True}}, True),
    ({}, True), (None, True),
])
def test_template_supports_tools(props, expected):
    assert template_supports_tools(props) is expected


def test_busy_slots_reads_slots_and_tells_unknown_from_unreported():
    slots = [{"id": 0, "is_processing": True}, {"id": 1, "is_processing": False}]
    with ReplayServer([Exchange("GET", "/slots", json=slots)]) as server:
        assert LlamaCppEngine(host=server.url).busy_slots() == {0}
    with ReplayServer([Exchange("GET", "/slots", status=501, json={"error": {"message": "no slots"}})]) as server:
        assert LlamaCppEngine(host=server.url).busy_slots() == set()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    assert LlamaCppEngine(host=f"http://127.0.0.1:{port}").busy_slots() is None
