"""Retries and fallbacks for every engine (``[retry]`` in the config): :class:`RetryingEngine` and
:func:`with_retries`, which ``Jarvis`` and ``jarvis serve`` apply to the engine they pick."""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Optional

from jarvis_core.retry.engine import RETRY_STATUSES, RetryingEngine, can_fall_back, is_retryable
from jarvis_core.retry.settings import FallbackTarget, RetryConfig, RetrySettings

if TYPE_CHECKING:
    from jarvis_core.config import JarvisConfig
    from jarvis_core.engine.base import InferenceEngine
    from jarvis_core.events import EventBus

__all__ = ["RETRY_STATUSES", "FallbackTarget", "RetryConfig", "RetrySettings", "RetryingEngine", "can_fall_back",
           "is_retryable", "with_retries"]


def with_retries(
    engine: InferenceEngine, key: str, config: Optional[JarvisConfig], *, bus: Optional[EventBus] = None,
    announce: Optional[Callable[[str], None]] = None,
) -> RetryingEngine:
    """``engine`` (registry key ``key``) wrapped with the retry settings ``config`` gives it (the defaults
    without a config); fallback engines are built from the same config on first use."""
    retry = config.retry if config is not None else RetryConfig()

    def make_engine(fallback_key: str) -> InferenceEngine:
        from jarvis_core.discovery import get_engine

        return get_engine(config, fallback_key)

    return RetryingEngine(engine, key, retry.for_engine(key), settings_for=retry.for_engine,
                          make_engine=make_engine, bus=bus, announce=announce)
