"""``jarvis mcp``: the configured MCP servers' tools, and jarvis tools served over MCP.

::

    jarvis mcp tools [SERVER ...] [--json | --indent N]
    jarvis mcp serve [--tools A,B] [--allow-confirm]

``tools`` starts each server (or the named ones), lists its tools with their policy, and keeps the listing,
so later commands register those tools without starting anything. ``serve`` speaks MCP on stdin/stdout and
exposes the named jarvis tools (default: ``[mcp] serve`` in the config), a plugin's included.
"""

from __future__ import annotations

import argparse
from typing import Any, Dict, List

from jarvis_core.commands import add_json_options

__all__ = ["add_parser", "run"]


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``mcp`` (``tools``, ``serve``) to the ``jarvis`` parser."""
    p: argparse.ArgumentParser = subparsers.add_parser(
        "mcp", help="MCP: list the configured servers' tools; serve jarvis tools over stdio",
        description="MCP servers configured in [mcp.servers.<name>] contribute their tools to every agent. "
        "'tools' starts them and lists (and remembers) their tools; 'serve' offers jarvis tools to any MCP client.")
    actions = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    t = actions.add_parser("tools", help="start the configured servers and list their tools (remembered for later)")
    t.add_argument("servers", nargs="*", metavar="SERVER", help="only these servers (default: all)")
    add_json_options(t)
    s = actions.add_parser("serve", help="serve jarvis tools over MCP on stdin/stdout")
    s.add_argument("--tools", default=None, metavar="A,B", help="the jarvis tools to expose (default: [mcp] serve)")
    s.add_argument("--allow-confirm", action="store_true",
                   help="run tools whose policy needs confirmation (the MCP client asks its user); default: refuse")
    return p


def run(args: argparse.Namespace) -> int:
    """Run ``jarvis mcp ACTION``."""
    if args.action == "serve":
        from jarvis_mcp.server import serve_stdio

        names = [n.strip() for n in (args.tools or "").split(",") if n.strip()]
        return serve_stdio(names or None, allow_confirm=args.allow_confirm)
    return _tools(args)


def _tools(args: argparse.Namespace) -> int:
    from jarvis_core.commands import write_result
    from jarvis_core.errors import ConfigError
    from jarvis_mcp.client import listing_of
    from jarvis_mcp.errors import McpError
    from jarvis_mcp.settings import mcp_config
    from jarvis_mcp.tool import policy_for

    servers = mcp_config().servers
    unknown = [s for s in args.servers if s not in servers]
    if unknown:
        raise ConfigError(f"no MCP server {unknown[0]!r} in the config; configured: {', '.join(sorted(servers)) or 'none'}",
                          key=f"mcp.servers.{unknown[0]}")
    doc: List[Dict[str, Any]] = []
    failed = 0
    for name in args.servers or sorted(servers):
        config = servers[name]
        entry: Dict[str, Any] = {"server": name, "transport": "http" if config.url else "stdio", "tools": []}
        try:
            listed = listing_of(name, config)
        except McpError as exc:
            entry["error"] = f"{type(exc).__name__}: {exc}"
            failed += 1
            doc.append(entry)
            continue
        wanted = set(config.tools)
        for tool in listed:
            policy = policy_for(config, tool["annotations"])
            entry["tools"].append({"key": config.prefix + tool["name"], "name": tool["name"],
                                   "offered": not wanted or tool["name"] in wanted, "confirm": policy.confirm,
                                   "side_effects": policy.side_effects, "open_world": policy.open_world,
                                   "annotations": tool["annotations"],
                                   "description": tool["description"]})
        doc.append(entry)
    write_result({"servers": doc}, args, _render_tools)
    return 1 if failed else 0


def _render_tools(doc: Dict[str, List[Dict[str, Any]]]) -> str:
    from jarvis_core.commands import cell, format_table

    rows = []
    for entry in doc["servers"]:
        if "error" in entry:
            rows.append([entry["server"], "-", "-", "-", "-", entry["error"]])
        for tool in entry["tools"]:
            key = tool["key"] if tool["offered"] else f"({tool['key']}: not in tools)"
            rows.append([entry["server"], key, tool["side_effects"], cell(tool["confirm"]), cell(tool["open_world"]),
                         (tool["description"].strip().splitlines() or [""])[0]])
    return format_table(["SERVER", "TOOL", "SIDE_EFFECTS", "CONFIRM", "OPEN_WORLD", "DESCRIPTION"], rows)
