"""jarvis-mcp's registrations: every configured MCP server's tools (one tool key each), the ``[mcp]`` config
section and the ``jarvis mcp`` command.

Registering reads only the config file's ``[mcp.servers]`` tables and the cached listings
(:mod:`jarvis_mcp.catalog`): no server starts until one of its tools is used, or ``jarvis mcp tools`` lists
them.
"""

from __future__ import annotations

from typing import Any, Dict

from jarvis_core import hookimpl
from jarvis_mcp.catalog import Offer, configured_servers, offers, read_cache


class McpToolFactory:
    """Builds the jarvis tool for one server's tool when an agent asks for it (the registered target)."""

    def __init__(self, offer: Offer) -> None:
        self.offer = offer
        self.__qualname__ = f"McpToolFactory[{offer.server}:{offer.remote}]"

    @property
    def policy(self) -> Any:
        """The tool's ToolPolicy from its listed annotations and the server's config (what ``jarvis tools``
        shows); ``None`` until the server's tools were listed (``jarvis mcp tools``)."""
        if self.offer.annotations is None:
            return None
        from jarvis_mcp.settings import server_config
        from jarvis_mcp.tool import policy_for

        return policy_for(server_config(self.offer.server), self.offer.annotations)

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
    seen: Dict[str, str] = {}
    for server, table in configured_servers().items():
        for offer in offers(server, table, read_cache(server, table)):
            if offer.key in seen:  # two servers with a tool of the same name: the first keeps it
                import warnings

                warnings.warn(f"MCP servers {seen[offer.key]!r} and {server!r} both offer a tool {offer.key!r}; "
                              f"{server!r}'s is not used (set prefix = \"...\" in [mcp.servers.{server}])",
                              stacklevel=2)
                continue
            seen[offer.key] = server
            register(offer.key, McpToolFactory(offer), description=_describe(offer), server=server)


@hookimpl
def jarvis_register_config_sections(register: Any) -> None:
    register("mcp", "jarvis_mcp.config:McpConfig")


@hookimpl
def jarvis_register_commands(register: Any) -> None:
    register("mcp", "jarvis_mcp.cli", description="MCP: list the configured servers' tools; serve jarvis tools over stdio")
