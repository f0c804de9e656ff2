"""Building engines by registry key."""

from __future__ import annotations

import inspect
from typing import Any

from jarvis_core.engine.base import InferenceEngine
from jarvis_core.errors import InvalidOptionError, PluginError

__all__ = ["create_engine", "engine_class"]


def engine_class(key: str) -> type:
    """The engine class registered under ``key`` (imports it); unknown keys list the available ones."""
    from jarvis_core.plugins.registry import get_registry

    cls = get_registry().load("engine", key)
    if not (isinstance(cls, type) and issubclass(cls, InferenceEngine)):
        raise PluginError(f"engine {key!r} is registered as {cls!r}, which is not an InferenceEngine subclass")
    return cls


def create_engine(key: str, **options: Any) -> InferenceEngine:
    """Build the engine registered as ``key``.

    Common options: ``host=`` / ``base_url=``, ``api_key=``, ``timeout=`` (where the engine has them);
    an option the engine's constructor does not take raises :class:`InvalidOptionError` naming it.
    """
    cls = engine_class(key)
    params = inspect.signature(cls.__init__).parameters
    if not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        accepted = [n for n, p in params.items() if n != "self" and p.kind is not inspect.Parameter.VAR_POSITIONAL]
        unknown = [k for k in options if k not in accepted]
        if unknown:
            raise InvalidOptionError(key, unknown, accepted)
    return cls(**options)
