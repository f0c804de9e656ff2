"""Bounded retries with exponential backoff and jitter, for rate limits (429) and server errors (5xx).

Only errors that a later attempt can fix are retried: :class:`~jarvis_core.errors.RateLimitError` and
HTTP 5xx (Anthropic's 529 "overloaded" included). Every other 4xx is raised at once. A ``Retry-After``
the server sent is honoured; one longer than ``max_retry_after`` (a daily quota, say) is not waited
for: the error is raised so the caller can decide. Each retry is announced with a ``REQUEST_RETRY``
event and a log record that carry no secrets. The sleeps are injectable so tests never wait.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from typing import Any, Awaitable, Callable, Optional

from jarvis_core.errors import ContextLengthError, EngineHTTPError, RateLimitError
from jarvis_core.events import EventType, publish

__all__ = ["RetryPolicy", "is_retryable"]

log = logging.getLogger("jarvis_engine_cloud")


def is_retryable(exc: BaseException) -> bool:
    """True for rate limits and server-side (5xx) failures."""
    if isinstance(exc, ContextLengthError):
        return False
    if isinstance(exc, RateLimitError):
        return True
    return isinstance(exc, EngineHTTPError) and exc.status_code >= 500


class RetryPolicy:
    """How often and how long to wait before retrying.

    :param max_retries: retries after the first attempt (``0`` disables retrying).
    :param base_delay: the first backoff in seconds; it doubles on every retry, up to ``max_delay``.
    :param max_retry_after: the longest ``Retry-After`` worth waiting for.
    :param sleep: / :param async_sleep: how to wait (``time.sleep`` / ``asyncio.sleep``; tests inject
        recorders).
    :param jitter: returns a float in ``[0, 1)``; the backoff is scaled by ``0.5 + jitter() / 2``.
    """

    def __init__(
        self,
        *,
        max_retries: int = 3,
        base_delay: float = 0.5,
        max_delay: float = 20.0,
        max_retry_after: float = 60.0,
        sleep: Optional[Callable[[float], Any]] = None,
        async_sleep: Optional[Callable[[float], Awaitable[Any]]] = None,
        jitter: Callable[[], float] = random.random,
    ) -> None:
        if max_retries < 0:
            raise ValueError("max_retries must be >= 0")
        self.max_retries = int(max_retries)
        self.base_delay = float(base_delay)
        self.max_delay = float(max_delay)
        self.max_retry_after = float(max_retry_after)
        self.sleep = sleep or time.sleep
        self.async_sleep = async_sleep or asyncio.sleep
        self.jitter = jitter

    def delay_for(self, exc: BaseException, attempt: int) -> Optional[float]:
        """Seconds to wait before retry number ``attempt + 1`` after ``exc``, or ``None``: do not retry."""
        if attempt >= self.max_retries or not is_retryable(exc):
            return None
        retry_after = getattr(exc, "retry_after", None)
        if retry_after is not None:
            return float(retry_after) if retry_after <= self.max_retry_after else None
        backoff = min(self.max_delay, self.base_delay * 2.0**attempt)
        return backoff * (0.5 + self.jitter() / 2)

    def announce(self, exc: BaseException, *, attempt: int, delay: float, provider: str, model: str) -> None:
        """Publish ``REQUEST_RETRY`` and log the retry (status and error type only, never the message)."""
        status = getattr(exc, "status_code", 0)
        log.warning(
            "cloud (%s): %s (HTTP %s) for model %s; retry %d of %d in %.2fs",
            provider, type(exc).__name__, status, model, attempt + 1, self.max_retries, delay,
        )
        publish(
            EventType.REQUEST_RETRY,
            engine="cloud",
            provider=provider,
            model=model,
            attempt=attempt + 1,
            max_retries=self.max_retries,
            delay=delay,
            status=status,
            error=type(exc).__name__,
        )
