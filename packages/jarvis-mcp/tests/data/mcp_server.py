"""A real MCP server written with the official SDK, for the tests: ``python mcp_server.py [stdio|http PORT]
[--hang-at-start] [--count-starts FILE] [--fail-while FILE]`` (``--count-starts``: append a line to FILE
each time it starts; ``--fail-while``: exit at once, status 1, while FILE exists).

Its tools: ``add`` (read-only, closed world), ``note`` (destructive), ``shout`` (open world, not read-only), ``big`` (a
result of ``n`` characters), ``crash`` (the process exits mid-call), ``hang`` (never answers), ``failing``
(an MCP tool error), ``env`` (reads an environment variable the config passes), and over HTTP ``headers``
(the request's headers, quoted back) and ``reject`` (an error quoting the credentials it was sent).
"""

from __future__ import annotations

import os
import sys
import time

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations

server = MCPServer("jarvis-test-server")


@server.tool(annotations=ToolAnnotations(read_only_hint=True, open_world_hint=False))
def add(a: int, b: int) -> str:
    """Add two integers."""
    return str(a + b)


@server.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True))
def note(text: str) -> str:
    """Write a note (destructive)."""
    return f"noted: {text}"


@server.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=True))
def shout(text: str) -> str:
    """Say it loud."""
    return text.upper()


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def big(n: int) -> str:
    """n characters."""
    return "x" * n


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def crash() -> str:
    """The server dies."""
    os._exit(3)


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def hang() -> str:
    """Never answers."""
    time.sleep(3600)
    return "never"


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def failing() -> str:
    """Raises."""
    raise ValueError("the database is locked")


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def env(name: str) -> str:
    """An environment variable of the server process."""
    return os.environ.get(name, "<unset>")


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def headers(ctx: Context) -> str:
    """The request's headers, as a careless server might quote them."""
    return "\n".join(f"{k}: {v}" for k, v in sorted((ctx.headers or {}).items()))


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def reject(ctx: Context) -> str:
    """Refuses, quoting the credentials it was sent."""
    sent = ctx.headers or {}
    raise ToolError(f"invalid credentials: {sent.get('authorization')} {sent.get('x-api-key')} {sent.get('cookie')}")


def _option(name: str) -> str:
    return sys.argv[sys.argv.index(name) + 1] if name in sys.argv else ""


if __name__ == "__main__":
    if _option("--count-starts"):
        with open(_option("--count-starts"), "a", encoding="utf-8") as starts:
            starts.write("started\n")
    if _option("--fail-while") and os.path.exists(_option("--fail-while")):
        print("refusing to start: the broken-flag file is there", file=sys.stderr)
        sys.exit(1)
    if "--hang-at-start" in sys.argv:
        time.sleep(3600)
    if len(sys.argv) > 2 and sys.argv[1] == "http":
        import uvicorn

        uvicorn.run(server.streamable_http_app(), host="127.0.0.1", port=int(sys.argv[2]), log_level="warning")
    else:
        server.run("stdio")
