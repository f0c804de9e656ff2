"""``[server]``: the limits ``jarvis serve`` puts on its clients, and what an API client may ask of it.

Every key has a default, so a config without the table gets a server that one hostile client cannot hold:

================================ ================= ==========================================================
key                              default           meaning
================================ ================= ==========================================================
``head_timeout``                 10                seconds a connection has to send a complete request head,
                                                   from connecting and after each response (then closed)
``keep_alive_timeout``           5                 seconds an idle keep-alive connection stays open
                                                   (uvicorn's ``timeout_keep_alive``)
``max_connections``              file limit - 64   open connections at most; past it a new one is closed at
                                                   once (the 64 descriptors left serve the engine, the
                                                   database and worker threads)
``max_connections_per_client``   64                open connections at most from one client address
                                                   (``0``: no bound, e.g. behind a reverse proxy)
``max_body_bytes``               8 MiB             a request body larger than this is a 413, counted while
                                                   it is read (chunked bodies too)
``body_timeout``                 60                seconds to receive a whole request body (then 408)
``agent_types``                  the agents that   agent types an API client may name (managed agents, the
                                 run no code       ``agent`` field of a chat completion); ``"*"``: any
``tools``                        the tools that    tools a managed agent may be given; ``"*"``: any
                                 run no code
``agent_options``                see below         keys a managed agent's ``config`` may hold; ``"*"``: any
================================ ================= ==========================================================

The allow-lists are the server's side of the API: an agent option such as ``prefetch_options`` (the SSRF
guard's settings) or ``cell_timeout_s`` belongs to whoever runs the server, so a config holding a key that
is not listed is a 400 naming it. Code-running agents (``codeact``, ``native_openhands``, ``rlm``,
``claude_code``, ``openhands``) and code tools (``code_interpreter``, ``shell_exec``) are not in the
defaults: a server that wants them lists them.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence, Tuple

import attrs

try:
    import resource
except ImportError:  # not on Windows: no file limit to read
    resource = None  # type: ignore[assignment]

from jarvis_core.engine.limits import check_count, check_seconds, validator

__all__ = ["DEFAULT_AGENT_OPTIONS", "DEFAULT_AGENT_TYPES", "DEFAULT_TOOLS", "ServerSettings", "server_settings"]

#: Agent types API clients may use by default: none of them runs model-written code.
DEFAULT_AGENT_TYPES: Tuple[str, ...] = ("simple", "orchestrator", "native_react", "react", "operative",
                                        "monitor_operative")
#: Tools managed agents may be given by default: none of them runs code.
DEFAULT_TOOLS: Tuple[str, ...] = ("calculator", "think", "llm", "memory_store", "memory_retrieve", "memory_search",
                                  "web_fetch", "web_search", "file_read", "file_write")
#: Keys of a managed agent's ``config`` an API client may set by default: what the agent says and how it
#: samples, never how it is confined.
DEFAULT_AGENT_OPTIONS: Tuple[str, ...] = ("tools", "approved_tools", "model", "system_prompt", "temperature",
                                          "top_p", "top_k", "max_tokens", "max_turns", "parallel_tools", "stop",
                                          "seed")

#: File descriptors kept free of client connections.
_RESERVED_FDS = 64


def _names(key: str, value: object) -> Tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, Sequence) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"{key} must be a list of names, got {value!r}")
    return tuple(value)


def _agent_types(value: object) -> Tuple[str, ...]:
    return _names("agent_types", value)


def _tools(value: object) -> Tuple[str, ...]:
    return _names("tools", value)


def _agent_options(value: object) -> Tuple[str, ...]:
    return _names("agent_options", value)


@attrs.frozen
class ServerSettings:
    """The ``[server]`` table (see the module's documentation for each key)."""

    head_timeout: float = attrs.field(default=10.0, validator=validator(check_seconds, allow_none=False))
    keep_alive_timeout: float = attrs.field(default=5.0, validator=validator(check_seconds, allow_none=False))
    max_connections: Optional[int] = attrs.field(default=None, validator=validator(check_count))
    max_connections_per_client: int = attrs.field(default=64, validator=validator(check_count, minimum=0))
    max_body_bytes: int = attrs.field(default=8 * 1024 * 1024, validator=validator(check_count))
    body_timeout: float = attrs.field(default=60.0, validator=validator(check_seconds, allow_none=False))
    # Annotated Any so that the config loader hands the TOML value to _names as written: for a tuple type it
    # would make ("s", "i", "m", ...) of a string.
    agent_types: Any = attrs.field(default=DEFAULT_AGENT_TYPES, converter=_agent_types)
    tools: Any = attrs.field(default=DEFAULT_TOOLS, converter=_tools)
    agent_options: Any = attrs.field(default=DEFAULT_AGENT_OPTIONS, converter=_agent_options)

    def connection_limit(self) -> int:
        """``max_connections``, or (unset) the process's file limit less what the server keeps for itself."""
        if self.max_connections is not None:
            return self.max_connections
        if resource is None:
            return 1 << 20
        soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if soft == resource.RLIM_INFINITY:
            return 1 << 20
        return max(16, soft - _RESERVED_FDS)

    def allows(self, kind: str, name: str) -> bool:
        """Whether ``name`` is on the allow-list ``kind`` (``agent_types``, ``tools``, ``agent_options``)."""
        listed: Tuple[str, ...] = getattr(self, kind)
        return "*" in listed or name in listed


def server_settings(config: object) -> ServerSettings:
    """The ``[server]`` table of a loaded jarvis config (the defaults when it has none)."""
    sections = getattr(config, "plugin_sections", None) or {}
    found = sections.get("server")
    return found if isinstance(found, ServerSettings) else ServerSettings()
