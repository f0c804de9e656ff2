"""jarvis-engine-cloud: engine ``cloud``, reaching OpenAI, Anthropic and Google Gemini over their REST APIs.

Importing this package imports nothing heavy; ``jarvis_engine_cloud.engine.CloudEngine`` is the engine.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from jarvis_core.lazy import lazy_exports

_LAZY = {
    "CloudEngine": "jarvis_engine_cloud.engine",
}

__all__ = ["CloudEngine"]

__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals())

if TYPE_CHECKING:  # pragma: no cover
    from jarvis_engine_cloud.engine import CloudEngine
