"""Retries and fallbacks for any engine: :class:`RetryingEngine` wraps it, above the HTTP layer, and acts on
the typed errors engines raise.

A request is retried on a rate limit (429), a 502, 503 or 504, and a connection that failed before any
reply (:class:`~jarvis_core.errors.EngineConnectionError`, a timeout excepted: the server may still be
working on it). The wait doubles from ``base_delay`` up to ``max_delay`` (with jitter), or is the server's
``Retry-After`` when it sent one (one longer than ``max_retry_after`` is not waited for). At most
``attempts`` tries, and none that would start later than ``max_time`` after the first. A stream is retried
only until its first piece arrived: once output has started, an error is the caller's. Each retry is
published as ``REQUEST_RETRY`` and logged at INFO (logger ``jarvis_core.retry``; ``jarvis ask -v`` shows it).

When the retries are spent (or the error is a connection failure, a timeout or any 5xx), the configured
fallbacks are tried in order, each announced (``ENGINE_FALLBACK`` and the ``announce`` callback) and each
with its own engine's retry settings; the last error is raised when every one failed. A mistake in the
request (400, an unknown option, a refused key) is never retried nor sent elsewhere.

An engine that retries by itself (``retries_itself = True``, as the cloud engine does inside its provider
clients) gets the fallbacks only, so attempts are not multiplied.
"""

from __future__ import annotations

import logging
import random
import time
from typing import Any, AsyncIterator, Callable, Dict, Generator, List, NoReturn, Optional, Sequence, Tuple

import anyio
import attrs

from jarvis_core.engine.base import InferenceEngine, ToolLike
from jarvis_core.errors import (
    ContextLengthError,
    EngineConnectionError,
    EngineHTTPError,
    EngineTimeoutError,
    RateLimitError,
)
from jarvis_core.events import EventBus, EventType, default_bus
from jarvis_core.retry.settings import FallbackTarget, RetrySettings
from jarvis_core.types import Completion, MessageLike, StreamChunk
from jarvis_core.wrapped_engine import WrappedEngine

__all__ = ["RETRY_STATUSES", "RetryingEngine", "can_fall_back", "is_retryable"]

log = logging.getLogger("jarvis_core.retry")

#: HTTP statuses a later attempt can fix.
RETRY_STATUSES = frozenset({429, 502, 503, 504})


def is_retryable(exc: BaseException) -> bool:
    """A rate limit, a 502/503/504, or a connection that failed before any reply (not a timeout)."""
    if isinstance(exc, ContextLengthError):
        return False
    if isinstance(exc, RateLimitError):
        return True
    if isinstance(exc, EngineHTTPError):
        return exc.status_code in RETRY_STATUSES
    return isinstance(exc, EngineConnectionError) and not isinstance(exc, EngineTimeoutError)


def can_fall_back(exc: BaseException) -> bool:
    """An error another engine may not have: what :func:`is_retryable` takes, any 5xx, a timeout."""
    if is_retryable(exc) or isinstance(exc, EngineConnectionError):
        return True
    return isinstance(exc, EngineHTTPError) and exc.status_code >= 500


#: Makes the engine for a fallback target's key.
EngineMaker = Callable[[str], InferenceEngine]
#: Settings for an engine key.
SettingsFor = Callable[[str], RetrySettings]


class RetryingEngine(WrappedEngine):
    """``engine`` with retries and fallbacks.

    :param engine: the engine to wrap; ``key`` its registry key.
    :param settings: its :class:`RetrySettings`; ``settings_for`` gives a fallback engine's (default: the same).
    :param make_engine: builds a fallback's engine from its key (they are built on first use, closed with
        this one); ``None``: fallbacks are not used.
    :param bus: where retries and fallbacks are published (default :func:`default_bus`).
    :param announce: receives one line per fallback (and per retry when ``announce_retries``).
    :param jitter: injectable for tests.
    """

    def __init__(
        self,
        engine: InferenceEngine,
        key: str,
        settings: RetrySettings,
        *,
        settings_for: Optional[SettingsFor] = None,
        make_engine: Optional[EngineMaker] = None,
        bus: Optional[EventBus] = None,
        announce: Optional[Callable[[str], None]] = None,
        jitter: Callable[[], float] = random.random,
    ) -> None:
        super().__init__(engine)
        self.key = key
        self.settings = settings
        self._settings_for = settings_for or (lambda _key: settings)
        self._make_engine = make_engine
        self.bus = bus if bus is not None else default_bus()
        self._announce = announce
        self._jitter = jitter
        self._fallback_engines: Dict[str, InferenceEngine] = {}

    # -- the plan: this engine, then each fallback ------------------------------------------------
    def _plan(self, model: str) -> List[Tuple[str, InferenceEngine, str, RetrySettings]]:
        plan = [(self.key, self.engine, model, self.settings)]
        if self._make_engine is not None:
            for target in self.settings.fallbacks:
                plan.append((target.engine, self._fallback(target), target.model or model,
                             self._settings_for(target.engine)))
        return plan

    def _fallback(self, target: FallbackTarget) -> InferenceEngine:
        # Built lazily, when the plan reaches it (see _Lazy): a fallback never used costs nothing.
        return _Lazy(self, target.engine)

    def _engine_for(self, key: str) -> InferenceEngine:
        engine = self._fallback_engines.get(key)
        if engine is None:
            assert self._make_engine is not None
            engine = self._fallback_engines[key] = self._make_engine(key)
        return engine

    def _delay(self, exc: BaseException, attempt: int, settings: RetrySettings, started: float,
               engine: InferenceEngine) -> Optional[float]:
        """Seconds to wait before try ``attempt + 2``, or ``None``: do not retry."""
        if getattr(engine, "retries_itself", False) or attempt + 1 >= settings.attempts or not is_retryable(exc):
            return None
        retry_after = getattr(exc, "retry_after", None)
        if retry_after is not None:
            if retry_after > settings.max_retry_after:
                return None
            delay = float(retry_after)
        else:
            delay = min(settings.max_delay, settings.base_delay * (2 ** attempt)) * (0.5 + self._jitter() / 2)
        if time.monotonic() - started + delay > settings.max_time:
            return None
        return delay

    def _announce_retry(self, key: str, model: str, exc: BaseException, attempt: int, attempts: int,
                        delay: float) -> None:
        status = getattr(exc, "status_code", 0) or None
        message = (f"{key}: {type(exc).__name__}{f' (HTTP {status})' if status else ''} for model {model}; "
                   f"retry {attempt + 1} of {attempts - 1} in {delay:.2f}s")
        log.info("%s", message)
        self.bus.publish(EventType.REQUEST_RETRY, engine=key, model=model, attempt=attempt + 1,
                         max_retries=attempts - 1, delay=delay, status=status, error=type(exc).__name__)

    def _announce_fallback(self, failed: str, exc: BaseException, key: str, model: str) -> None:
        message = f"{failed} failed ({type(exc).__name__}); falling back to {key} with model {model}"
        log.info("%s", message)
        self.bus.publish(EventType.ENGINE_FALLBACK, requested=failed, used=key, model=model,
                         reason=type(exc).__name__)
        if self._announce is not None:
            self._announce(message)

    # -- the decisions: which engine to call next, after how long ---------------------------------
    def _tries(self, model: str) -> Generator[_Try, BaseException, NoReturn]:
        """The tries of one call, in order: send it each try's error for the next one (retries, then each
        fallback's tries); the last error is raised from it when no try is left. The sync and async calls
        drive it, so both decide alike."""
        last: Optional[BaseException] = None
        plan = self._plan(model)
        for n, (key, engine, use_model, settings) in enumerate(plan):
            if n:
                assert last is not None
                self._announce_fallback(plan[n - 1][0], last, key, use_model)
            started = time.monotonic()
            delay: Optional[float] = None
            for attempt in range(settings.attempts):
                last = yield _Try(engine, use_model, delay)
                delay = self._delay(last, attempt, settings, started, engine)
                if delay is None:
                    break
                self._announce_retry(key, use_model, last, attempt, settings.attempts, delay)
            assert last is not None
            if not can_fall_back(last):
                raise last
        assert last is not None
        raise last

    # -- calls ------------------------------------------------------------------------------------
    def generate(self, messages: Sequence[MessageLike], *, model: str, temperature: Optional[float] = None,
                 max_tokens: int = 1024, tools: Optional[Sequence[ToolLike]] = None, **options: Any) -> Completion:
        tries = self._tries(model)
        step = next(tries)
        while True:
            if step.delay is not None:
                time.sleep(step.delay)
            try:
                return step.engine.generate(messages, model=step.model, temperature=temperature,
                                            max_tokens=max_tokens, tools=tools, **options)
            except Exception as exc:
                step = tries.send(exc)

    async def agenerate(self, messages: Sequence[MessageLike], *, model: str, temperature: Optional[float] = None,
                        max_tokens: int = 1024, tools: Optional[Sequence[ToolLike]] = None,
                        **options: Any) -> Completion:
        tries = self._tries(model)
        step = next(tries)
        while True:
            if step.delay is not None:
                await anyio.sleep(step.delay)
            try:
                return await step.engine.agenerate(messages, model=step.model, temperature=temperature,
                                                   max_tokens=max_tokens, tools=tools, **options)
            except Exception as exc:
                step = tries.send(exc)

    def stream(self, messages: Sequence[MessageLike], *, model: str, temperature: Optional[float] = None,
               max_tokens: int = 1024, tools: Optional[Sequence[ToolLike]] = None, **options: Any) -> AsyncIterator[str]:
        return self._streamed("stream", messages, model, dict(temperature=temperature, max_tokens=max_tokens,
                                                              tools=tools, **options))

    def stream_full(self, messages: Sequence[MessageLike], *, model: str, temperature: Optional[float] = None,
                    max_tokens: int = 1024, tools: Optional[Sequence[ToolLike]] = None,
                    **options: Any) -> AsyncIterator[StreamChunk]:
        return self._streamed("stream_full", messages, model, dict(temperature=temperature, max_tokens=max_tokens,
                                                                   tools=tools, **options))

    async def _streamed(self, method: str, messages: Sequence[MessageLike], model: str,
                        kwargs: Dict[str, Any]) -> AsyncIterator[Any]:
        tries = self._tries(model)
        step = next(tries)
        while True:
            if step.delay is not None:
                await anyio.sleep(step.delay)
            source = getattr(step.engine, method)(messages, model=step.model, **kwargs)
            try:
                first = await source.__anext__()
            except StopAsyncIteration:
                return
            except Exception as exc:
                await _aclose(source)
                step = tries.send(exc)
                continue
            # Output has started: from here on an error is the caller's, never retried.
            try:
                yield first
                async for item in source:
                    yield item
            finally:
                await _aclose(source)
            return

    # -- lifetime ---------------------------------------------------------------------------------
    def close(self) -> None:
        try:
            for engine in self._fallback_engines.values():
                engine.close()
        finally:
            self.engine.close()

    async def aclose(self) -> None:
        try:
            for engine in self._fallback_engines.values():
                await engine.aclose()
        finally:
            await self.engine.aclose()


@attrs.frozen
class _Try:
    """One try of a call: ``engine`` asked for ``model`` after waiting ``delay`` seconds (``None``: at once)."""

    engine: InferenceEngine
    model: str
    delay: Optional[float]


class _Lazy(WrappedEngine):
    """A fallback engine that is built when a call first reaches it."""

    def __init__(self, owner: RetryingEngine, key: str) -> None:
        self._owner, self._key = owner, key

    @property
    def engine(self) -> InferenceEngine:  # type: ignore[override]
        return self._owner._engine_for(self._key)

    def generate(self, *args: Any, **kwargs: Any) -> Completion:
        return self.engine.generate(*args, **kwargs)

    async def agenerate(self, *args: Any, **kwargs: Any) -> Completion:
        return await self.engine.agenerate(*args, **kwargs)

    def stream(self, *args: Any, **kwargs: Any) -> AsyncIterator[str]:
        return self.engine.stream(*args, **kwargs)

    def stream_full(self, *args: Any, **kwargs: Any) -> AsyncIterator[StreamChunk]:
        return self.engine.stream_full(*args, **kwargs)


async def _aclose(source: Any) -> None:
    close = getattr(source, "aclose", None)
    if close is not None:
        await close()
