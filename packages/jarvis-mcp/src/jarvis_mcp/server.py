"""jarvis tools served over MCP: ``jarvis mcp serve`` (stdio).

The chosen tools (any registered tool, a plugin's included) are built as an agent would build them, with
their ``[tools.<key>]`` options, and every call goes through the one
:class:`~jarvis_core.tools.ToolExecutor`: validation, isolation, timeouts and output caps hold for an MCP
client as for jarvis's own agents. A tool whose policy needs confirmation is refused unless the server was
started with ``--allow-confirm`` (the MCP client then asks its user, guided by the annotations: a tool with
``side_effects = "write"`` is announced as not read-only and destructive, and the policy's ``open_world`` is the
``openWorldHint``).
"""

from __future__ import annotations

import json
import sys
from typing import Any, List, Optional, Sequence

from jarvis_core.tools import ToolExecutor, policy_of
from jarvis_core.types import ToolCall

__all__ = ["build_server", "serve_stdio"]


def _annotations(tool: Any) -> Any:
    from mcp.types import ToolAnnotations

    policy = policy_of(tool)
    return ToolAnnotations(read_only_hint=policy.side_effects != "write", destructive_hint=policy.side_effects == "write",
                           open_world_hint=policy.open_world)


def build_server(tools: Sequence[Any], *, allow_confirm: bool = False) -> Any:
    """An MCP low-level ``Server`` offering ``tools`` (built tool objects) through a :class:`ToolExecutor`."""
    from mcp.server.lowlevel import Server
    from mcp.types import CallToolResult, ListToolsResult, TextContent, Tool

    executor = ToolExecutor(tools, approver=(lambda call, tool: True) if allow_confirm else None)
    listed = [Tool(name=t.spec.name, description=t.spec.description, input_schema=dict(t.spec.parameters),
                   annotations=_annotations(t)) for t in tools]
    counter = iter(range(1, 1 << 62))

    async def list_tools(ctx: Any, params: Any) -> ListToolsResult:
        return ListToolsResult(tools=listed)

    async def call_tool(ctx: Any, params: Any) -> CallToolResult:
        call = ToolCall(f"mcp-{next(counter)}", params.name, json.dumps(params.arguments or {}))
        result = await executor.aexecute(call)
        return CallToolResult(content=[TextContent(text=result.content)], is_error=not result.ok)

    from jarvis_core import __version__

    return Server("jarvis", version=__version__, on_list_tools=list_tools, on_call_tool=call_tool)


def _tools(names: Optional[List[str]]) -> List[Any]:
    from jarvis_core.config import load_config
    from jarvis_core.errors import UsageError
    from jarvis_core.tools import create_tool
    from jarvis_mcp.settings import mcp_config

    config = load_config()
    chosen = names or list(mcp_config().serve)
    if not chosen:
        raise UsageError("no tools to serve: name them with --tools A,B or in the config ([mcp] serve = [...])",
                         argument="--tools")
    return [create_tool(name, config=config) for name in chosen]


def serve_stdio(names: Optional[List[str]] = None, *, allow_confirm: bool = False) -> int:
    """Serve the named tools (default: ``[mcp] serve``) on stdin/stdout until the client closes; exit 0."""
    import anyio
    from mcp.server.stdio import stdio_server

    tools = _tools(names)
    server = build_server(tools, allow_confirm=allow_confirm)

    async def main() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    print(f"jarvis mcp serve: {', '.join(t.spec.name for t in tools)} on stdio", file=sys.stderr)
    anyio.run(main)
    return 0
