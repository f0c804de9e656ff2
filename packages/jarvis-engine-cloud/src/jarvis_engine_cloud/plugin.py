"""Registers engine ``cloud`` and its ``[engine.cloud]`` config table (string targets: nothing heavy is
imported until the engine is used)."""

from __future__ import annotations

from jarvis_core import hookimpl


@hookimpl
def jarvis_register_engines(register):
    register(
        "cloud",
        "jarvis_engine_cloud.engine:CloudEngine",
        description="OpenAI, Anthropic and Google Gemini over their REST APIs (routed by model name)",
        discoverable=False,
    )


@hookimpl
def jarvis_register_config_sections(register):
    register("engine.cloud", "jarvis_engine_cloud.config:CloudConfig")
