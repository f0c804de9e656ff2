"""What the request handlers share: the engine, the served model, limits and (optionally) the agent store."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional

import anyio
import anyio.to_thread

from jarvis_server.settings import ServerSettings

if TYPE_CHECKING:
    from starlette.requests import Request

    from jarvis_core.engine.base import InferenceEngine
    from jarvis_server.managed.service import ManagedAgents

__all__ = ["ServerState", "server_state"]


class ServerState:
    """Per-application state, at ``app.state.jarvis``.

    :param engine: the engine every request goes to.
    :param engine_key: its registry key (reported as ``owned_by`` and in ``/health``).
    :param model: the model used when a request names none.
    :param default_max_tokens: ``max_tokens`` when a request sends none (a request's own value is never raised).
    :param threads: how many blocking calls may run at once in worker threads (once the application has
        started: :meth:`bound_worker_threads`).
    :param managed: the managed-agents service, when enabled.
    :param agent: the registered agent answering chat completions that name none (``None``: the engine).
    :param config: the jarvis config (agents read their ``[agents.<key>]`` tables from it).
    :param settings: the ``[server]`` limits and allow-lists (default: its defaults).
    """

    def __init__(
        self,
        engine: InferenceEngine,
        *,
        engine_key: str,
        model: str,
        default_max_tokens: int = 1024,
        threads: int = 64,
        managed: Optional[ManagedAgents] = None,
        agent: Optional[str] = None,
        config: Optional[Any] = None,
        settings: Optional[ServerSettings] = None,
    ) -> None:
        self.engine = engine
        self.engine_key = engine_key
        self.model = model
        self.default_max_tokens = default_max_tokens
        self.threads = threads
        self.limiter = anyio.CapacityLimiter(threads)
        self.managed = managed
        self.agent = agent
        self.config = config
        self.settings = settings if settings is not None else ServerSettings()

    def bound_worker_threads(self) -> None:
        """Make ``threads`` the bound of the event loop's default worker threads (anyio's), and use that
        limiter: then every blocking call the server makes counts against one bound, whoever starts the
        thread (an engine's default ``agenerate``, the agent stores, the routes). Called at startup, on the
        server's loop."""
        limiter = anyio.to_thread.current_default_thread_limiter()
        limiter.total_tokens = self.threads
        self.limiter = limiter

    def __repr__(self) -> str:
        return f"ServerState({self.engine_key!r}, model={self.model!r})"


def server_state(request: Request) -> ServerState:
    """The state of the application ``request`` reached."""
    state: ServerState = request.app.state.jarvis
    return state
