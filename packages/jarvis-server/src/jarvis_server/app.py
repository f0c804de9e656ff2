"""Building the ASGI application: the routes composed (the OpenAI routes, the managed-agents routes when
there is a service, mounted apps), the state they share, and the security layer wrapped around all of it.

:func:`create_app` returns the :class:`~jarvis_server.security.SecurityLayer` wrapping the Starlette app, so
nothing reaches a route without passing the ``Host`` allow-list and (with a token) authentication. At startup
the layer is probed in-process (:func:`verify_front_door`); if it does not refuse a foreign ``Host`` (and,
with a token, a request without one), startup fails instead of serving unprotected.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any, AsyncIterator, FrozenSet, List, Optional

from starlette.applications import Starlette
from starlette.routing import BaseRoute, Route

from jarvis_core.errors import ConfigError
from jarvis_server import openai_routes
from jarvis_server.error_responses import ErrorResponses
from jarvis_server.managed.routes import managed_routes
from jarvis_server.mounts import ServerMount, lifespans, server_mounts
from jarvis_server.request_body import BodyLimit
from jarvis_server.security import SecurityLayer
from jarvis_server.settings import ServerSettings
from jarvis_server.state import ServerState

if TYPE_CHECKING:
    from jarvis_core.engine.base import InferenceEngine
    from jarvis_server.managed.service import ManagedAgents

__all__ = ["create_app", "verify_front_door"]


def _routes(state: ServerState, mounts: List[ServerMount]) -> List[BaseRoute]:
    routes: List[BaseRoute] = [
        Route("/v1/chat/completions", openai_routes.chat_completions, methods=["POST"]),
        Route("/v1/models", openai_routes.list_models, methods=["GET"]),
        Route("/v1/embeddings", openai_routes.embeddings, methods=["POST"]),
        Route("/health", openai_routes.health, methods=["GET"]),
    ]
    if state.managed is not None:
        routes.extend(managed_routes())
    # An ASGI app as the endpoint: it gets the scope with its own path (no Mount: no slash redirect).
    routes.extend(Route(m.path, m.app) for m in mounts)
    return routes


async def _probe(app: Any, host: bytes, headers: List[Any]) -> int:
    sent: List[Any] = []

    async def receive() -> Any:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: Any) -> None:
        sent.append(message)

    scope = {"type": "http", "method": "GET", "path": "/v1/models", "raw_path": b"/v1/models", "query_string": b"",
             "headers": [(b"host", host), *headers], "http_version": "1.1", "scheme": "http",
             "client": ("127.0.0.1", 0), "server": ("127.0.0.1", 0), "root_path": "", "app": app}
    await app(scope, receive, send)
    return next((int(m["status"]) for m in sent if m["type"] == "http.response.start"), 0)


async def verify_front_door(app: Any) -> None:
    """Check, in-process, that ``app`` refuses a foreign ``Host`` and, when a token is set, a request
    without one. Raises :class:`ConfigError` otherwise (the server must not start unprotected)."""
    if not isinstance(app, SecurityLayer):
        raise ConfigError("the server's security layer is not installed; refusing to start")
    if app.any_host:
        if not app.requires_token:
            raise ConfigError("the Host allow-list is off and no token is set; refusing to start")
    elif await _probe(app, b"jarvis-rebinding-check.invalid", []) != 400:
        raise ConfigError("the Host allow-list is not enforced; refusing to start")
    if app.requires_token and await _probe(app, app.a_host.encode(), []) != 401:
        raise ConfigError("bearer-token authentication is not enforced; refusing to start")


def create_app(
    engine: InferenceEngine,
    *,
    engine_key: str,
    model: str,
    token: Optional[bytes] = None,
    allowed_hosts: FrozenSet[str] = frozenset({"127.0.0.1", "localhost", "::1"}),
    default_max_tokens: int = 1024,
    threads: int = 64,
    managed: Optional[ManagedAgents] = None,
    agent: Optional[str] = None,
    config: Optional[Any] = None,
    settings: Optional[ServerSettings] = None,
) -> SecurityLayer:
    """The application: the OpenAI-compatible routes (and managed agents when ``managed`` is given) over
    ``engine``, behind the security layer. The caller owns ``engine`` (closes it). ``agent`` names a
    registered agent that answers chat completions by default; ``config`` is the jarvis config agents read;
    ``settings`` the ``[server]`` limits and allow-lists (its defaults when not given). Apps other
    distributions mount (:mod:`jarvis_server.mounts`) are served behind the same layer."""
    state = ServerState(engine, engine_key=engine_key, model=model, default_max_tokens=default_max_tokens,
                        threads=threads, managed=managed, agent=agent, config=config, settings=settings)
    holder: List[SecurityLayer] = []
    mounts = server_mounts(config)

    @contextlib.asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        await verify_front_door(holder[0])
        state.bound_worker_threads()
        if managed is not None:
            await managed.start()
        try:
            async with lifespans(mounts):
                yield
        finally:
            if managed is not None:
                await managed.stop()

    routes = _routes(state, mounts)
    inner = Starlette(routes=routes, lifespan=lifespan)
    inner.state.jarvis = state
    errors = ErrorResponses(BodyLimit(inner, state.settings.max_body_bytes), routes)
    layer = SecurityLayer(errors, token=token, allowed_hosts=allowed_hosts, on_refusal=errors.refused)
    holder.append(layer)
    return layer
