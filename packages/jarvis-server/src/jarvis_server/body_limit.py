"""The request-body limit, for every route: bytes are counted as the application receives them.

A body larger than ``max_body_bytes`` (``[server]``) ends at that size, whichever route or mounted app
(:mod:`jarvis_server.mounts`) reads it and however it is sent: with a ``Content-Length`` or chunked. The
``receive`` that would go past the limit raises :class:`BodyTooLarge`, a 413 :class:`RequestError` (the
jarvis routes answer it as any refused request); if it reaches this layer before a response started, the
layer answers the 413 itself.
"""

from __future__ import annotations

import json
from typing import Any, Awaitable, Callable

from jarvis_server.openai_errors import RequestError, error_body

__all__ = ["BodyLimit", "BodyTooLarge"]

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
            body = json.dumps(error_body(413, str(exc), code=exc.code)).encode()
            await send({"type": "http.response.start", "status": 413, "headers": [
                (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
            await send({"type": "http.response.body", "body": body})
