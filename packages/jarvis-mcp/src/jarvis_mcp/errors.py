"""The typed errors of MCP tools. Raised inside a tool call, each becomes a failed tool result naming its
type (the agent keeps running); raised by ``jarvis mcp`` commands, one error line."""

from __future__ import annotations

from jarvis_core.errors import JarvisError

__all__ = ["McpError", "McpServerCrashedError", "McpServerTimeoutError", "McpStartError", "McpToolError"]


class McpError(JarvisError):
    """Something went wrong talking to an MCP server; the message names the server."""


class McpStartError(McpError):
    """The server could not be started or did not finish the MCP handshake in time."""


class McpServerCrashedError(McpError):
    """The server's connection closed (the process exited, the HTTP endpoint went away) during a call; the
    next call starts it again."""


class McpServerTimeoutError(McpError):
    """The server did not answer a call within its ``timeout``."""


class McpToolError(McpError):
    """The server answered with an error for this call (the tool failed, or refused the arguments)."""
