"""Request bodies: the limit for every route (bytes counted as the application receives them), and reading a
body as JSON (:func:`read_json`, what the jarvis routes call).

A body larger than ``max_body_bytes`` (``[server]``) ends at that size, whichever route or mounted app
(:mod:`jarvis_server.mounts`) reads it and however it is sent: with a ``Content-Length`` or chunked. The
``receive`` that would go past the limit raises :class:`BodyTooLarge`, a 413 :class:`RequestError` (the
jarvis routes answer it as any refused request); if it reaches this layer before a response started, the
layer answers the 413 itself.
"""

from __future__ import annotations

import json
from typing import Any, Awaitable, Callable

import anyio
from starlette.requests import Request

from jarvis_server.error_responses import note_error
from jarvis_server.openai_errors import RequestError, error_body
from jarvis_server.state import server_state

__all__ = ["BodyLimit", "BodyTooLarge", "read_json"]

ASGIApp = Callable[[Any, Any, Any], Awaitable[None]]


class BodyTooLarge(RequestError):
    """A request body past the limit (413 ``body_too_large``)."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"request body larger than {limit} bytes", status=413, code="body_too_large")


class BodyLimit:
    """ASGI middleware: at most ``limit`` body bytes reach ``app`` per request."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        seen = 0
        started = False

        async def limited_receive() -> Any:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body") or b"")
                if seen > self.limit:
                    raise BodyTooLarge(self.limit)
            return message

        async def watched_send(message: Any) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, limited_receive, watched_send)
        except BodyTooLarge as exc:
            if started:
                raise
            note_error(exc.code)
            body = json.dumps(error_body(413, str(exc), code=exc.code)).encode()
            await send({"type": "http.response.start", "status": 413, "headers": [
                (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
            await send({"type": "http.response.body", "body": body})


async def read_json(request: Request) -> Any:
    """The request body as JSON; a 400 (or 413, or 408) :class:`RequestError` when it is not.

    A ``Content-Length`` past ``max_body_bytes`` is refused before any byte is read; any other body is
    counted while it is read (:class:`BodyLimit`, chunked bodies too). The whole body must arrive within
    ``body_timeout`` seconds."""
    settings = server_state(request).settings
    size = request.headers.get("content-length")
    if size is not None and size.isdigit() and int(size) > settings.max_body_bytes:
        raise BodyTooLarge(settings.max_body_bytes)
    try:
        with anyio.fail_after(settings.body_timeout):
            raw = await request.body()
    except TimeoutError:
        raise RequestError(f"the request body did not arrive within {settings.body_timeout:g} s", status=408,
                           code="body_timeout") from None
    try:
        return json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise RequestError(f"the request body is not valid JSON ({exc})", param="body") from None
    except RecursionError:
        raise RequestError("the request body is nested too deeply", param="body") from None
