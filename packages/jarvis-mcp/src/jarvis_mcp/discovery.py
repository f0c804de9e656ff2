"""Listing the tools of the MCP servers not listed yet with their present config: when ``jarvis tools`` wants
every tool, or a tool key nobody registered is asked for (the registry's ``jarvis_discover_tools`` hook).

The servers start all at once, each within its ``startup_timeout``; a line on stderr says so when that takes
more than a second. A server that fails is told once, as a warning naming its typed error, and its tools
are left out; the others are registered. The failure is remembered (:mod:`jarvis_mcp.failures`): within the
server's ``retry_after`` the next commands do not start it again, and say so in one warning.
"""

from __future__ import annotations

import warnings
from typing import Any, Dict, List, Sequence

__all__ = ["discover"]


def _starting(names: List[str], seconds: float) -> None:
    from jarvis_core.commands import announce

    which = ", ".join(repr(n) for n in names)
    announce(f"starting MCP server{'s' if len(names) > 1 else ''} {which} to list {'their' if len(names) > 1 else 'its'} "
             f"tools (up to {seconds:g} s; the listing is kept until the server's config changes)")


def discover(names: Sequence[str]) -> Dict[str, List[Dict[str, Any]]]:
    """The listings of servers ``names`` that answered (each kept in the cache); the others warned about."""
    from jarvis_core.errors import JarvisError
    from jarvis_mcp.catalog import cache_file
    from jarvis_mcp.failures import recent_failure, skipped_line
    from jarvis_mcp.settings import mcp_config

    try:
        servers = mcp_config().servers
    except JarvisError as exc:  # the [mcp] table does not check: the config loader's error, once
        warnings.warn(f"MCP servers not started to list their tools: {type(exc).__name__}: {exc}", stacklevel=2)
        return {}
    configs = {name: servers[name] for name in names if name in servers}
    for name in list(configs):
        failure = recent_failure(name, configs[name])
        if failure is not None:
            del configs[name]
            warnings.warn(skipped_line(name, servers[name], failure), stacklevel=2)
    found: Dict[str, List[Dict[str, Any]]] = {}
    if not configs:
        return found
    from jarvis_mcp.client import list_servers

    for name, result in list_servers(configs, on_slow=_starting).items():
        if isinstance(result, list):
            found[name] = result
            continue
        where = "" if configs[name].url else f" (its stderr: {cache_file(name).with_suffix('').with_suffix('.log')})"
        warnings.warn(f"MCP server {name!r} left out of the tools: {type(result).__name__}: {result}{where}",
                      stacklevel=2)
    return found
