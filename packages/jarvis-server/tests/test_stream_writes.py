"""How a chat-completion stream is written: the ASGI messages the application sends for it, recorded.

Each body message is a write for the server and a read for the client, so a stream the backend sent at
once goes out as one (headers, then the whole body with its end), while a model that produces tokens one at
a time has each written as it comes, never held back for the next.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any, AsyncIterator, Dict, List

from jarvis_core import create_engine
from jarvis_core.engine.base import InferenceEngine
from jarvis_core.testing import Exchange, ReplayServer
from jarvis_core.types import StreamChunk
from jarvis_server.app import create_app
from jarvis_server.chat_wire import DONE

ASK = [{"role": "user", "content": "Count."}]
N = 50


def sse_body(n: int) -> bytes:
    """An OpenAI-compatible stream of ``n`` content deltas, a finish event and ``[DONE]``, as one body."""
    base = {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "m"}
    events = [dict(base, choices=[{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}])]
    events += [dict(base, choices=[{"index": 0, "delta": {"content": f" t{i}"}, "finish_reason": None}])
               for i in range(n)]
    events.append(dict(base, choices=[{"index": 0, "delta": {}, "finish_reason": "stop"}]))
    return b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events) + DONE


async def call(app: Any, body: Dict[str, Any], on_body: Any = None) -> List[Dict[str, Any]]:
    """Run one request through the ASGI ``app``; the messages it sent (``on_body`` sees each body message)."""
    sent: List[Dict[str, Any]] = []
    payload = json.dumps(body).encode()
    requested = False
    ended = asyncio.Event()

    async def receive() -> Dict[str, Any]:
        nonlocal requested
        if not requested:
            requested = True
            return {"type": "http.request", "body": payload, "more_body": False}
        await ended.wait()
        return {"type": "http.disconnect"}

    async def send(message: Dict[str, Any]) -> None:
        sent.append(message)
        if message["type"] == "http.response.body":
            if on_body is not None:
                on_body(message)
            if not message.get("more_body", False):
                ended.set()

    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST", "scheme": "http",
             "path": "/v1/chat/completions", "raw_path": b"/v1/chat/completions", "query_string": b"",
             "root_path": "", "headers": [(b"host", b"127.0.0.1"), (b"content-type", b"application/json")],
             "client": ("127.0.0.1", 1), "server": ("127.0.0.1", 8000)}
    await asyncio.wait_for(app(scope, receive, send), 20)
    return sent


def content_of(body: bytes) -> str:
    text = ""
    for line in body.decode().splitlines():
        if line.startswith("data: {"):
            for choice in json.loads(line[6:]).get("choices", []):
                text += choice["delta"].get("content") or ""
    return text


async def test_a_stream_the_backend_sent_at_once_is_one_write_with_its_end():
    with ReplayServer([Exchange("POST", "/v1/chat/completions", raw=sse_body(N), times=2,
                                       headers={"content-type": "text/event-stream"})]) as backend:
        engine = create_engine("openai-compat", host=backend.url)
        app = create_app(engine, engine_key="openai-compat", model="m")
        for _ in range(2):  # a fresh connection, then a pooled one
            sent = await call(app, {"model": "m", "messages": ASK, "stream": True})
            assert [m["type"] for m in sent] == ["http.response.start", "http.response.body"], sent
            body = sent[1]
            assert body["more_body"] is False and body["body"].endswith(DONE)
            assert content_of(body["body"]) == "".join(f" t{i}" for i in range(N))
        await engine.aclose()


class Paced(InferenceEngine):
    """A model that produces its next token only when the test says so."""

    engine_id = "paced"

    def __init__(self) -> None:
        self.go = asyncio.Event()

    def generate(self, messages: Any, **kw: Any) -> Any:
        raise NotImplementedError

    async def stream_full(self, messages: Any, **kw: Any) -> AsyncIterator[StreamChunk]:
        for i in range(3):
            yield StreamChunk(content=f"tok{i}")
            await self.go.wait()
            self.go.clear()
        yield StreamChunk(finish_reason="stop")

    def stream(self, messages: Any, **kw: Any) -> AsyncIterator[str]:
        raise NotImplementedError

    def list_models(self) -> List[str]:
        return ["m"]

    def health(self) -> bool:
        return True


async def test_tokens_that_come_one_at_a_time_are_each_written_at_once():
    engine = Paced()
    app = create_app(engine, engine_key="paced", model="m")
    bodies: List[bytes] = []

    def on_body(message: Dict[str, Any]) -> None:
        bodies.append(message["body"])
        engine.go.set()  # the next token only once this one was written: holding one back would hang

    sent = await call(app, {"model": "m", "messages": ASK, "stream": True}, on_body)
    assert sent[0]["type"] == "http.response.start"
    assert [content_of(b) for b in bodies] == ["tok0", "tok1", "tok2", ""]
    assert bodies[-1].endswith(DONE) and sent[-1]["more_body"] is False


async def test_an_error_after_the_first_token_ends_the_body_without_done():
    class Failing(Paced):
        async def stream_full(self, messages: Any, **kw: Any) -> AsyncIterator[StreamChunk]:
            yield StreamChunk(content="partial")
            await asyncio.sleep(0)
            raise RuntimeError("boom")

    app = create_app(Failing(), engine_key="paced", model="m")
    sent = await call(app, {"model": "m", "messages": ASK, "stream": True})
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    assert b"event: error" in body and not body.endswith(DONE)
    assert content_of(body) == "partial"
    assert sent[-1]["more_body"] is False


async def test_runnable_tells_a_task_that_only_yielded_from_one_waiting():
    from jarvis_server.event_stream import runnable

    gate = asyncio.Event()

    async def yielding() -> None:
        while not gate.is_set():
            await asyncio.sleep(0)

    async def waiting() -> None:
        await gate.wait()

    busy, idle = asyncio.ensure_future(yielding()), asyncio.ensure_future(waiting())
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    assert runnable(busy) and not runnable(idle)
    gate.set()
    await asyncio.gather(busy, idle)
    assert not runnable(busy) and not runnable(idle)  # done

    class Opaque:  # a loop whose tasks do not say what they wait for: write at once
        def done(self) -> bool:
            return False

    assert not runnable(Opaque())  # type: ignore[arg-type]
