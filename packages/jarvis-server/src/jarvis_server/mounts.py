"""ASGI apps other distributions mount under ``jarvis serve``, behind its security layer (``Host`` allow-list
and bearer token), without jarvis-server importing them.

A distribution declares an entry point in the group ``jarvis.server_mounts``; it names a callable
``(config) -> mount | None`` (``config``: the jarvis config ``jarvis serve`` uses; ``None``: nothing to
mount), where a mount is any object with the attributes of :class:`ServerMount` (``path``, ``app`` and
optionally ``lifespan``), so the distribution need not import jarvis-server. jarvis-mcp uses it to serve MCP over streamable HTTP at ``/mcp``. A mount that fails to build is a
startup error naming its distribution, never a silent omission.
"""

from __future__ import annotations

import contextlib
from typing import Any, AsyncContextManager, Callable, List, Optional

import attrs

from jarvis_core.errors import PluginError

__all__ = ["GROUP", "ServerMount", "server_mounts"]

#: The entry-point group of mounts.
GROUP = "jarvis.server_mounts"


@attrs.frozen
class ServerMount:
    """An ASGI ``app`` answering the exact ``path`` (and the paths under it), and an optional ``lifespan``:
    an async context manager factory entered while the server runs (e.g. a session manager's task group)."""

    path: str
    app: Any
    lifespan: Optional[Callable[[], AsyncContextManager[Any]]] = None


def server_mounts(config: Any) -> List[ServerMount]:
    """Every installed mount that has something to serve under this config."""
    from importlib.metadata import entry_points

    out: List[ServerMount] = []
    for ep in entry_points(group=GROUP):
        dist = getattr(ep.dist, "name", "?")
        try:
            mount = ep.load()(config)
        except Exception as exc:
            raise PluginError(f"the jarvis serve mount {ep.name!r} of {dist} failed to build: "
                              f"{type(exc).__name__}: {exc}", plugin=ep.name, distribution=dist) from exc
        if mount is None:
            continue
        path, app = getattr(mount, "path", None), getattr(mount, "app", None)
        if not (isinstance(path, str) and path.startswith("/") and callable(app)):
            raise PluginError(f"the jarvis serve mount {ep.name!r} of {dist} returned {type(mount).__name__}, which "
                              "has no path ('/...') and ASGI app", plugin=ep.name, distribution=dist)
        out.append(ServerMount(path, app, getattr(mount, "lifespan", None)))
    return out


@contextlib.asynccontextmanager
async def lifespans(mounts: List[ServerMount]) -> Any:
    """Enter every mount's lifespan for as long as the server runs."""
    async with contextlib.AsyncExitStack() as stack:
        for mount in mounts:
            if mount.lifespan is not None:
                await stack.enter_async_context(mount.lifespan())
        yield
