"""jarvis-core: the plugin framework for LLM inference.

Importing this package is cheap: it imports neither httpx nor any plugin. Public names are loaded on
first access (PEP 562), so ``from jarvis_core import Jarvis`` pulls in only what ``Jarvis`` needs.

Plugin authors need only :data:`hookimpl` (see :mod:`jarvis_core.hookspecs`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from jarvis_core.hookspecs import hookimpl
from jarvis_core.lazy import lazy_exports

__version__ = "0.2.0"

# name -> module that defines it; imported on first attribute access.
_LAZY = {
    # types
    "Message": "jarvis_core.types",
    "Role": "jarvis_core.types",
    "ToolCall": "jarvis_core.types",
    "Usage": "jarvis_core.types",
    "Completion": "jarvis_core.types",
    "StreamChunk": "jarvis_core.types",
    "ToolSpec": "jarvis_core.types",
    "ToolResult": "jarvis_core.types",
    "AgentContext": "jarvis_core.types",
    "AgentResult": "jarvis_core.types",
    # errors
    "JarvisError": "jarvis_core.errors",
    "ConfigError": "jarvis_core.errors",
    "EngineError": "jarvis_core.errors",
    "EngineConnectionError": "jarvis_core.errors",
    # engines
    "InferenceEngine": "jarvis_core.engine.base",
    "create_engine": "jarvis_core.engine.factory",
    "get_engine": "jarvis_core.discovery",
    "discover_engines": "jarvis_core.discovery",
    "discover_models": "jarvis_core.discovery",
    # config, hardware
    "load_config": "jarvis_core.config",
    "JarvisConfig": "jarvis_core.config",
    "detect_hardware": "jarvis_core.hardware",
    "recommend_engine": "jarvis_core.hardware",
    # plugins
    "get_registry": "jarvis_core.plugins.registry",
    "make_plugin_manager": "jarvis_core.plugins.manager",
    # events
    "EventBus": "jarvis_core.events",
    "EventType": "jarvis_core.events",
    "InstrumentedEngine": "jarvis_core.instrumented",
    # SDK
    "Jarvis": "jarvis_core.sdk",
    "Connection": "jarvis_core.sdk",
    "Answer": "jarvis_core.answer",
}

__all__ = [
    "hookimpl",
    "__version__",
    "Message",
    "Role",
    "ToolCall",
    "Usage",
    "Completion",
    "StreamChunk",
    "ToolSpec",
    "ToolResult",
    "AgentContext",
    "AgentResult",
    "JarvisError",
    "ConfigError",
    "EngineError",
    "EngineConnectionError",
    "InferenceEngine",
    "create_engine",
    "get_engine",
    "discover_engines",
    "discover_models",
    "load_config",
    "JarvisConfig",
    "detect_hardware",
    "recommend_engine",
    "get_registry",
    "make_plugin_manager",
    "EventBus",
    "EventType",
    "InstrumentedEngine",
    "Jarvis",
    "Connection",
    "Answer",
]

__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals())


if TYPE_CHECKING:  # pragma: no cover
    from jarvis_core.answer import Answer
    from jarvis_core.config import JarvisConfig, load_config
    from jarvis_core.discovery import discover_engines, discover_models, get_engine
    from jarvis_core.engine.base import InferenceEngine
    from jarvis_core.engine.factory import create_engine
    from jarvis_core.errors import ConfigError, EngineConnectionError, EngineError, JarvisError
    from jarvis_core.events import EventBus, EventType
    from jarvis_core.hardware import detect_hardware, recommend_engine
    from jarvis_core.instrumented import InstrumentedEngine
    from jarvis_core.plugins.manager import make_plugin_manager
    from jarvis_core.plugins.registry import get_registry
    from jarvis_core.sdk import Connection, Jarvis
    from jarvis_core.types import (
        AgentContext,
        AgentResult,
        Completion,
        Message,
        Role,
        StreamChunk,
        ToolCall,
        ToolResult,
        ToolSpec,
        Usage,
    )
