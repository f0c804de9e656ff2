"""An MCP server's tool as a jarvis tool: :class:`McpTool`.

It goes through the one :class:`~jarvis_core.tools.ToolExecutor` like any tool: its arguments are checked
against the server's input schema, its policy comes from the server's annotations (a tool not marked
``readOnlyHint`` needs approval unless ``confirm = false``; ``openWorldHint`` is the policy's ``open_world``), and the server's ``timeout`` and
``max_output_chars`` bound each call.
"""

from __future__ import annotations

from typing import Any, Dict, Optional

from jarvis_core.tools import ToolPolicy
from jarvis_core.types import ToolSpec
from jarvis_mcp.client import connection
from jarvis_mcp.config import McpServerConfig

__all__ = ["McpTool", "policy_for"]


def policy_for(config: McpServerConfig, annotations: Dict[str, Any]) -> ToolPolicy:
    """The policy of a tool with these MCP annotations on a server with this config. A hint the server
    leaves out takes the MCP specification's default: not read-only, open world."""
    read_only = bool(annotations.get("readOnlyHint", False))
    confirm = (not read_only) if config.confirm is None else config.confirm
    # The executor's own timeout is a backstop: the connection's (the server's timeout) fires first, typed.
    return ToolPolicy(confirm=confirm, timeout=config.timeout + 10.0, max_output_chars=max(64, config.max_output_chars),
                      isolation="thread", side_effects="read" if read_only else "write",
                      open_world=bool(annotations.get("openWorldHint", True)))


class McpTool:
    """The tool ``remote`` of MCP server ``server``, offered to the model as ``key``.

    :param listed: the server's listing of the tool (``name``, ``description``, ``input_schema``,
        ``annotations``).
    """

    def __init__(self, key: str, server: str, config: McpServerConfig, listed: Dict[str, Any]) -> None:
        self.server = server
        self.remote = str(listed["name"])
        self.annotations = dict(listed.get("annotations") or {})
        schema = dict(listed.get("input_schema") or {"type": "object", "properties": {}})
        schema.pop("title", None)  # pydantic's "<name>Arguments" tells the model nothing
        self.spec = ToolSpec(key, str(listed.get("description") or f"the {self.remote} tool of MCP server {server}"),
                             schema)
        self.policy = policy_for(config, self.annotations)
        self._config = config

    async def arun(self, **arguments: Any) -> str:
        """Call the tool on its server (started on first use); a typed error when the server fails."""
        return await connection(self.server, self._config).acall(self.remote, arguments)

    def __repr__(self) -> str:
        return f"<MCP tool {self.spec.name!r} of server {self.server!r}>"


def build(key: str, server: str, remote: str, config: McpServerConfig, listed: Optional[Dict[str, Any]]) -> McpTool:
    """The tool, listing the server first when the cached listing does not have it."""
    if listed is None:
        from jarvis_mcp.client import listing_of
        from jarvis_mcp.errors import McpToolError

        found = [t for t in listing_of(server, config) if t["name"] == remote]
        if not found:
            raise McpToolError(f"MCP server {server!r} has no tool {remote!r} (its config's tools list names it)")
        listed = found[0]
    return McpTool(key, server, config, listed)
