"""jarvis-mcp: the tools of MCP servers as jarvis tools, and jarvis tools as an MCP server.

- :mod:`jarvis_mcp.config`: the ``[mcp]`` config section (``[mcp.servers.<name>]``).
- :mod:`jarvis_mcp.catalog`: which tools each server offers (the config's list, or the cached listing).
- :mod:`jarvis_mcp.discovery`: starting the servers not listed yet, when every tool is wanted.
- :mod:`jarvis_mcp.client`: one shared connection per server, started on first use, stopped at exit.
- :mod:`jarvis_mcp.tool`: :class:`~jarvis_mcp.tool.McpTool`, an MCP server's tool as a jarvis tool.
- :mod:`jarvis_mcp.server`: jarvis tools served over MCP (``jarvis mcp serve``).
"""

from jarvis_mcp.errors import McpError, McpServerCrashedError, McpServerTimeoutError, McpStartError, McpToolError

__all__ = ["McpError", "McpServerCrashedError", "McpServerTimeoutError", "McpStartError", "McpToolError"]
