"""Entry point of jarvis-engine-ollama: registers the ``ollama`` engine and its config section.

Targets are strings, so listing plugins imports none of the engine code.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from jarvis_core import hookimpl

if TYPE_CHECKING:
    from jarvis_core.plugins.registry import Register


@hookimpl
def jarvis_register_engines(register: Register) -> None:
    register(
        "ollama",
        "jarvis_engine_ollama.engine:OllamaEngine",
        description="Ollama's native API (/api/chat; default http://localhost:11434 or OLLAMA_HOST)",
    )


@hookimpl
def jarvis_register_config_sections(register: Register) -> None:
    register("engine.ollama", "jarvis_engine_ollama.config:OllamaConfig")
