"""The response every SSE stream of the server goes out through: the body's bytes as they come, and the
body stopped as soon as the client disconnects.

Starlette's ``StreamingResponse`` does the same with an anyio task group per response (a task for the
body, one listening for the disconnect, cancel scopes to tie them). Here the body is written by the
request's own task and one small task waits for the disconnect and cancels it: the same behaviour with
less work per stream, which shows when many short streams run at once.

Each write is a system call for the server and a read for the client, whichever HTTP client it is, so a
stream is written in as few pieces as its pace allows: the status line and headers go out right before
the first piece of the body (not while the first token is still being waited for), and a piece that ends
with ``data: [DONE]``, the last event of every stream, goes out together with the end of the body.
"""

from __future__ import annotations

import asyncio
from typing import Any, AsyncIterator, Mapping, Optional

from starlette.responses import Response

from jarvis_server.chat_wire import DONE

__all__ = ["EventStreamResponse", "runnable"]


def runnable(task: asyncio.Task[Any]) -> bool:
    """Whether ``task`` will run again without waiting for anything: it only yielded to the loop (or what
    it waited for has happened). A producer of SSE bytes that is runnable has more at hand, so its reader
    lets it go on before writing; one waiting on the network has nothing more to add now.

    False where the task does not say (an event loop whose tasks lack asyncio's ``_fut_waiter``), which
    only means writing sooner.
    """
    if task.done():
        return False
    waiter: Any = getattr(task, "_fut_waiter", False)
    return waiter is None or (waiter is not False and bool(waiter.done()))


class EventStreamResponse(Response):
    """A ``text/event-stream`` response whose body is an async iterator of bytes.

    When the client disconnects, the body iterator is cancelled where it waits and then closed (its
    ``finally`` blocks run: that is how a stream stops its engine call or its run); the response then
    ends quietly. The iterator is also closed when it ends normally or fails.
    """

    media_type = "text/event-stream"

    def __init__(self, body: AsyncIterator[bytes], headers: Optional[Mapping[str, str]] = None) -> None:
        self.body_iterator = body
        self.status_code = 200
        self.background = None
        self.init_headers(headers)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        streaming = asyncio.current_task()
        started = finished = gone = False

        async def watch() -> None:
            nonlocal gone
            while (await receive())["type"] != "http.disconnect":
                pass
            if not finished and streaming is not None:  # after the last byte the server reports one too
                gone = True
                streaming.cancel()

        async def write(body: bytes, more: bool) -> None:
            nonlocal started
            if not started:
                started = True
                await send({"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers})
            await send({"type": "http.response.body", "body": body, "more_body": more})

        watcher = asyncio.get_running_loop().create_task(watch())
        try:
            last = b""  # a piece ending with [DONE], held until the body ends
            async for chunk in self.body_iterator:
                if gone:  # the cancellation was lost on the way (asyncio.wait_for before Python 3.12 drops one
                    raise asyncio.CancelledError  # that comes as the awaited result does): stop here instead
                if last:
                    await write(last, True)
                    last = b""
                if chunk.endswith(DONE):
                    last = chunk
                elif chunk:
                    await write(chunk, True)
            finished = True
            await write(last, False)
        except asyncio.CancelledError:
            if not gone:
                raise
            uncancel = getattr(streaming, "uncancel", None)  # Python 3.11+: the cancellation was ours
            if uncancel is not None:
                uncancel()
        finally:
            finished = True
            watcher.cancel()
            close = getattr(self.body_iterator, "aclose", None)
            if close is not None:
                await close()
