"""Every request ``jarvis serve`` answers with an error status, published on the event bus
(``EventType.HTTP_ERROR_RESPONSE``) for ``/metrics`` to count: refusals before the engine (bad JSON, a body
too large, an unsupported field, an unknown agent, a failed authentication, an unknown path) and failures in it
alike, by route, status and error code.

The labels are bounded whatever a client sends: ``route`` is the template of the route the request matched
(``/v1/managed-agents/{agent_id}``), or ``other``; ``error_type`` is the ``code`` of the OpenAI error object the
server sent (``invalid_request``, ``body_too_large``, ``model_not_found``, ``invalid_api_key``, …), never a
model name or anything else taken from the request.

:class:`ErrorResponses` is the ASGI layer that watches the status; the code comes from :func:`note_error`, which
whatever renders an error object calls (:func:`jarvis_server.openai_errors.error_for`, the body limit, the
security layer's refusals through :meth:`ErrorResponses.refused`).
"""

from __future__ import annotations

import contextvars
from typing import Any, Awaitable, Callable, List, Optional, Sequence

from starlette.routing import BaseRoute, Match

from jarvis_core.events import EventType, publish

__all__ = ["ErrorResponses", "note_error"]

ASGIApp = Callable[[Any, Any, Any], Awaitable[None]]

#: The error code of a status the server answered without an error object of its own (starlette's routing).
_PLAIN = {404: "not_found", 405: "method_not_allowed"}


class _Noted:
    code: Optional[str] = None


_NOTED: contextvars.ContextVar[Optional[_Noted]] = contextvars.ContextVar("jarvis_server_error_code", default=None)


def note_error(code: str) -> None:
    """Record the error code of the response the current request is answered with."""
    noted = _NOTED.get()
    if noted is not None:
        noted.code = code


class ErrorResponses:
    """ASGI middleware: publishes ``HTTP_ERROR_RESPONSE`` (``route``, ``status``, ``error_type``) for every
    response with a status of 400 or more. ``routes`` are the application's, for the route label."""

    def __init__(self, app: ASGIApp, routes: Sequence[BaseRoute]) -> None:
        self.app = app
        self.routes: List[BaseRoute] = list(routes)

    def route_of(self, scope: Any) -> str:
        """The template of the route ``scope`` matches (a wrong method included), else ``other``."""
        for route in self.routes:
            match, _ = route.matches(scope)
            if match is not Match.NONE:
                return str(getattr(route, "path", "other"))
        return "other"

    def refused(self, scope: Any, status: int, code: str) -> None:
        """Publish an error response sent outside this layer (the security layer's refusals)."""
        publish(EventType.HTTP_ERROR_RESPONSE, route=self.route_of(scope), status=status, error_type=code)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        noted = _Noted()
        token = _NOTED.set(noted)
        status = 0

        async def watched_send(message: Any) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, watched_send)
        finally:
            _NOTED.reset(token)
            if status >= 400:
                self.refused(scope, status, noted.code or _PLAIN.get(status, f"http_{status}"))
