"""jarvis-mcp's registrations: every configured MCP server's tools (one tool key each), the ``[mcp]`` config
section and the ``jarvis mcp`` command.

Registering up front reads only the config file's ``[mcp.servers]`` tables and the cached listings
(:mod:`jarvis_mcp.catalog`), so ``jarvis plugins`` or ``jarvis --help`` start nothing. The servers not
listed with their present config are started by the discovery hook, which the registry runs only when every
tool is wanted (``jarvis tools``) or a tool key nobody registered is asked for (``jarvis ask --tools NAME``).
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any, Collection, Dict, List, Optional

from jarvis_core import hookimpl

if TYPE_CHECKING:  # the catalog reads TOML and JSON: imported by the hooks that need it, not by every command
    from jarvis_mcp.catalog import Offer


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
        return f"MCP server {offer.server!r}: {offer.remote} (not listed yet)"
    return f"MCP server {offer.server!r}: {offer.description.strip().splitlines()[0] if offer.description.strip() else offer.remote}"


def _register(register: Any, servers: Dict[str, Dict[str, Any]], listings: Dict[str, Optional[List[Dict[str, Any]]]],
              warn_about: Collection[str]) -> None:
    """Register every server's offers, in config order; a key two servers offer goes to the first, with a
    warning when one of them is in ``warn_about`` (so each clash is told once per process)."""
    from jarvis_mcp.catalog import offers

    seen: Dict[str, str] = {}
    for server, table in servers.items():
        for offer in offers(server, table, listings.get(server)):
            if offer.key in seen:
                if server in warn_about or seen[offer.key] in warn_about:
                    warnings.warn(f"MCP servers {seen[offer.key]!r} and {server!r} both offer a tool {offer.key!r}; "
                                  f"{server!r}'s is not used (set prefix = \"...\" in [mcp.servers.{server}])",
                                  stacklevel=2)
                continue
            seen[offer.key] = server
            register(offer.key, McpToolFactory(offer), description=_describe(offer), server=server)


@hookimpl
def jarvis_register_tools(register: Any) -> None:
    # What is known without starting anything: cached listings, and the names of the config's tools lists.
    from jarvis_mcp.catalog import configured_servers, read_cache

    servers = configured_servers()
    _register(register, servers, {s: read_cache(s, t) for s, t in servers.items()}, warn_about=servers)


@hookimpl
def jarvis_discover_tools(register: Any) -> None:
    # Every tool is wanted (jarvis tools), or one nobody registered: list the servers not listed with their
    # present config, all at once, and register what they offer.
    from jarvis_mcp.catalog import configured_servers, read_cache

    servers = configured_servers()
    listings = {s: read_cache(s, t) for s, t in servers.items()}
    pending = [s for s, listing in listings.items() if listing is None]
    if not pending:
        return
    from jarvis_mcp.discovery import discover

    found = discover(pending)
    listings.update(found)
    _register(register, servers, listings, warn_about=found)


@hookimpl
def jarvis_register_config_sections(register: Any) -> None:
    register("mcp", "jarvis_mcp.config:McpConfig")


@hookimpl
def jarvis_register_commands(register: Any) -> None:
    register("mcp", "jarvis_mcp.cli", description="MCP: list the configured servers' tools; serve jarvis tools over stdio")
