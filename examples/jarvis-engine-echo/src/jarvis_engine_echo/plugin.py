"""The plugin module named by the entry point: hook implementations only, and nothing heavy.

Targets are ``"module:attribute"`` strings, so ``jarvis plugins`` lists this plugin without importing the
engine code.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from jarvis_core import hookimpl

if TYPE_CHECKING:
    from jarvis_core.plugins.registry import Register


@hookimpl
def jarvis_register_engines(register: Register) -> None:
    # discoverable=False: an engine that is always "healthy" must not be picked by discovery when the user
    # configured nothing; it is used only when asked for (--engine echo, [engine] default = "echo").
    register(
        "echo",
        "jarvis_engine_echo.engine:EchoEngine",
        description="repeats the last user message (example plugin)",
        discoverable=False,
    )


@hookimpl
def jarvis_register_config_sections(register: Register) -> None:
    # [engine.echo] in the user's config is checked against this class; its fields are EchoEngine's kwargs.
    register("engine.echo", "jarvis_engine_echo.config:EchoConfig")
