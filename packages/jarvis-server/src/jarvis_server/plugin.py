"""The jarvis-server plugin: registers the ``serve`` command (imported only when it runs)."""

from __future__ import annotations

from typing import Any

from jarvis_core import hookimpl


@hookimpl
def jarvis_register_commands(register: Any) -> None:
    register("serve", "jarvis_server.cli", description="serve an OpenAI-compatible API (and managed agents) over HTTP")


@hookimpl
def jarvis_register_config_sections(register: Any) -> None:
    register("server", "jarvis_server.settings:ServerSettings")
