"""MCP over streamable HTTP under ``jarvis serve``, at ``/mcp``, behind its ``Host`` allow-list and bearer
token: jarvis-server finds this through the ``jarvis.server_mounts`` entry point (it never imports
jarvis-mcp). The tools served are ``[mcp] serve`` in the config; with none, nothing is mounted."""

from __future__ import annotations

from typing import Any, Callable, Optional

import attrs

__all__ = ["Mount", "server_mount"]

PATH = "/mcp"


@attrs.frozen
class Mount:
    """What jarvis-server mounts: an ASGI ``app`` at ``path``, with the ``lifespan`` of its session manager."""

    path: str
    app: Any
    lifespan: Callable[[], Any]


def server_mount(config: Any) -> Optional[Mount]:
    """The MCP app for ``jarvis serve`` (``None`` when ``[mcp] serve`` names no tools)."""
    from mcp.server.transport_security import TransportSecuritySettings

    from jarvis_core.tools import create_tool
    from jarvis_mcp.config import McpConfig
    from jarvis_mcp.server import build_server

    section = getattr(config, "plugin_sections", {}).get("mcp") if config is not None else None
    names = list(section.serve) if isinstance(section, McpConfig) else []
    if not names:
        return None
    server = build_server([create_tool(name, config=config) for name in names])
    # jarvis serve's own layer checks Host (and the token) before a request gets here.
    app = server.streamable_http_app(streamable_http_path=PATH, stateless_http=True,
                                     transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False))
    return Mount(PATH, app, lambda: app.router.lifespan_context(app))
