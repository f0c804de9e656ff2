"""The user's ``[mcp]`` section, read through the jarvis config loader (checked, with file and line in
errors)."""

from __future__ import annotations

from jarvis_core.errors import ConfigError
from jarvis_mcp.config import McpConfig, McpServerConfig

__all__ = ["mcp_config", "server_config"]


def mcp_config() -> McpConfig:
    """The ``[mcp]`` section of the config file (empty when it has none)."""
    from jarvis_core.config import load_config

    section = load_config().plugin_sections.get("mcp")
    return section if isinstance(section, McpConfig) else McpConfig()


def server_config(name: str) -> McpServerConfig:
    """``[mcp.servers.<name>]``.

    :raises ConfigError: no such server is configured.
    """
    servers = mcp_config().servers
    if name not in servers:
        known = ", ".join(sorted(servers)) or "none"
        raise ConfigError(f"no MCP server {name!r} in the config ([mcp.servers.{name}]); configured: {known}",
                          key=f"mcp.servers.{name}")
    return servers[name]
