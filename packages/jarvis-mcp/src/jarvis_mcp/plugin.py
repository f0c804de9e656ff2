"""jarvis-mcp's registrations: every configured MCP server's tools (one tool key each), the ``[mcp]`` config
section and the ``jarvis mcp`` command.

Registering reads only the config file's ``[mcp.servers]`` tables and the cached listings
(:mod:`jarvis_mcp.catalog`): no server starts until one of its tools is used, or ``jarvis mcp tools`` lists
them.
"""

from __future__ import annotations

from typing import Any

from jarvis_core import hookimpl
from jarvis_mcp.catalog import Offer, configured_servers, offers, read_cache


class McpToolFactory:
    """Builds the jarvis tool for one server's tool when an agent asks for it (the registered target)."""

    def __init__(self, offer: Offer) -> None:
        self.offer = offer
        self.__qualname__ = f"McpToolFactory[{offer.server}:{offer.remote}]"

    def __call__(self) -> Any:
        from jarvis_mcp.settings import server_config
        from jarvis_mcp.tool import build

        offer = self.offer
        return build(offer.key, offer.server, offer.remote, server_config(offer.server), offer.listed)


def _describe(offer: Offer) -> str:
    if offer.description is None:
        return f"MCP server {offer.server!r}: {offer.remote} (not listed yet: jarvis mcp tools)"
    return f"MCP server {offer.server!r}: {offer.description.strip().splitlines()[0] if offer.description.strip() else offer.remote}"


@hookimpl
def jarvis_register_tools(register: Any) -> None:
    for server, table in configured_servers().items():
        for offer in offers(server, table, read_cache(server, table)):
            read_only = offer.read_only()
            confirm = table.get("confirm")
            register(offer.key, McpToolFactory(offer), description=_describe(offer), server=server,
                     side_effects="unknown" if read_only is None else ("read" if read_only else "write"),
                     confirm=(not read_only if read_only is not None else "unknown") if confirm is None else bool(confirm))


@hookimpl
def jarvis_register_config_sections(register: Any) -> None:
    register("mcp", "jarvis_mcp.config:McpConfig")


@hookimpl
def jarvis_register_commands(register: Any) -> None:
    register("mcp", "jarvis_mcp.cli", description="MCP: list the configured servers' tools; serve jarvis tools over stdio")
