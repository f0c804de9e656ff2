"""The ``[mcp]`` config section: the MCP servers whose tools jarvis offers, and what ``jarvis mcp serve``
exposes.

.. code-block:: toml

    [mcp.servers.files]                 # a stdio server: jarvis starts the command
    command = "npx"
    args = ["-y", "@modelcontextprotocol/server-filesystem", "/srv/notes"]
    env = { LOG_LEVEL = "warn" }
    tools = ["read_file", "list_directory"]   # offer only these (default: every tool it lists)

    [mcp.servers.search]                # a streamable HTTP server
    url = "https://mcp.example.com/mcp"
    token = "..."                       # sent as "Authorization: Bearer ..."; masked by jarvis config show
    headers = { X-Api-Key = "..." }    # every value masked by jarvis config show
    confirm = false                     # its tools run without approval even if not read-only
"""

from __future__ import annotations

from typing import Dict, List, Optional

import attrs

from jarvis_core.config.schema import METADATA_SECRET, is_secret_field

__all__ = ["McpConfig", "McpServerConfig"]


def _positive(_: object, attribute: attrs.Attribute[float], value: float) -> None:
    if not value > 0:
        raise ValueError(f"{attribute.name} must be a positive number of seconds, got {value!r}")


def _not_negative(_: object, attribute: attrs.Attribute[float], value: float) -> None:
    if not value >= 0:
        raise ValueError(f"{attribute.name} must be a number of seconds, 0 or more, got {value!r}")


@attrs.frozen
class McpServerConfig:
    """One ``[mcp.servers.<name>]`` table: ``command`` (stdio) or ``url`` (streamable HTTP).

    :param command: the program that runs a stdio server; ``args``, ``env`` (added to a minimal
        environment, as the MCP SDK builds it) and ``cwd`` go with it.
    :param url: a streamable HTTP endpoint; ``headers`` are sent with every request and ``token`` as
        ``Authorization: Bearer <token>``. Both are secrets: every header value is masked by ``jarvis config
        show`` and kept out of errors, results and logs.
    :param tools: the server's tools jarvis offers (empty: all it lists).
    :param prefix: put before each tool's name (``"fs_"`` makes ``read_file`` the jarvis tool ``fs_read_file``).
    :param confirm: ``true``: every call needs approval; ``false``: none does; unset: a tool needs approval
        unless the server marks it read-only (``readOnlyHint``).
    :param timeout: seconds a call may take before it fails with ``McpServerTimeoutError``.
    :param startup_timeout: seconds for the server to start and finish the handshake.
    :param max_output_chars: a call's result is cut to this many characters.
    :param retry_after: seconds during which a server that failed to start (with this same command line,
        ``env``, ``cwd`` or URL) is not started again to discover its tools; ``jarvis mcp tools`` always
        tries it. ``0``: every command that needs its tools tries it.
    """

    command: str = ""
    args: List[str] = attrs.Factory(list)
    env: Dict[str, str] = attrs.field(factory=dict, repr=False)
    cwd: str = ""
    url: str = ""
    # Every header value counts as a secret (Authorization, API keys and cookies travel here): masked by
    # jarvis config show, and scrubbed from errors, results and logs, whatever the header's name.
    headers: Dict[str, str] = attrs.field(factory=dict, repr=False, metadata={METADATA_SECRET: True})
    token: str = attrs.field(default="", repr=False)
    tools: List[str] = attrs.Factory(list)
    prefix: str = ""
    confirm: Optional[bool] = None
    timeout: float = attrs.field(default=60.0, validator=_positive)
    startup_timeout: float = attrs.field(default=30.0, validator=_positive)
    max_output_chars: int = 16_000
    retry_after: float = attrs.field(default=300.0, validator=_not_negative)

    def __attrs_post_init__(self) -> None:
        if bool(self.command) == bool(self.url):
            raise ValueError("an MCP server needs exactly one of command (stdio) or url (streamable HTTP)")

    def secret_values(self) -> List[str]:
        """What must never be shown: the token, every header value, and the ``env`` values named like
        secrets (``API_TOKEN``)."""
        return [self.token, *self.headers.values(), *(v for k, v in self.env.items() if is_secret_field(k))]


@attrs.frozen
class McpConfig:
    """The ``[mcp]`` table: ``servers`` by name, and ``serve`` (the tools ``jarvis mcp serve`` exposes when
    ``--tools`` is not given, and ``jarvis serve`` at ``/mcp``)."""

    servers: Dict[str, McpServerConfig] = attrs.Factory(dict)
    serve: List[str] = attrs.Factory(list)
