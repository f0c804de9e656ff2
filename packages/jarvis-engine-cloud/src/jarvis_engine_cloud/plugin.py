"""Registers engine ``cloud`` and its ``[engine.cloud]`` config table (string targets: nothing heavy is
imported until the engine is used)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from jarvis_core import hookimpl

if TYPE_CHECKING:
    from jarvis_core.plugins.registry import Register


@hookimpl
def jarvis_register_engines(register: Register) -> None:
    register(
        "cloud",
        "jarvis_engine_cloud.engine:CloudEngine",
        description="OpenAI, Anthropic and Google Gemini over their REST APIs (routed by model name)",
        discoverable=False,
    )


@hookimpl
def jarvis_register_config_sections(register: Register) -> None:
    register("engine.cloud", "jarvis_engine_cloud.config:CloudConfig")
