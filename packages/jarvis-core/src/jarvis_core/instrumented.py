"""Observing any engine through the event bus.

:class:`InstrumentedEngine` wraps an :class:`~jarvis_core.engine.base.InferenceEngine` and publishes
``INFERENCE_START`` before and ``INFERENCE_END`` after every ``generate``, ``agenerate``, ``stream`` and
``stream_full`` call. END is published on every path: success, an exception from the engine, and a stream the consumer
stopped early (``status="cancelled"``). Both events share a ``request_id``.

Event data (never message text, never headers or keys):

START: ``request_id``, ``engine``, ``model``, ``method``, ``stream``, ``messages`` (count), ``tools``
(count), ``max_tokens``, ``temperature``.

END: the same ids plus ``status`` (``"ok"``, ``"error"``, ``"cancelled"``), ``ok``, ``latency_s``,
``finish_reason``, ``usage`` (a dict, when the engine reported it), ``tool_calls`` (count),
``content_chars``; streams add ``chunks`` and ``ttft_s`` (seconds to the first chunk, ``None`` when none
arrived); failures add ``error_type`` and ``error`` (the message, with any key the engine holds masked).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import time
from typing import Any, AsyncIterator, Callable, Dict, Iterator, Optional, Sequence, Tuple

from jarvis_core.engine.base import InferenceEngine, ToolLike
from jarvis_core.events import EventBus, EventType, default_bus
from jarvis_core.types import Completion, MessageLike, StreamChunk, Usage
from jarvis_core.wrapped_engine import WrappedEngine

__all__ = ["InstrumentedEngine"]

_ids = itertools.count(1)


def _usage_dict(usage: Optional[Usage]) -> Optional[Dict[str, int]]:
    if usage is None:
        return None
    return {
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
        "total_tokens": usage.total_tokens,
    }


class _Tally:
    """What one call produced, gathered as it happens."""

    __slots__ = ("chunks", "content_chars", "finish_reason", "first_chunk_at", "tool_calls", "usage")

    def __init__(self) -> None:
        self.chunks = 0
        self.content_chars = 0
        self.tool_calls = 0
        self.finish_reason: Optional[str] = None
        self.usage: Optional[Usage] = None
        self.first_chunk_at: Optional[float] = None

    def completed(self, result: Completion) -> Completion:
        """``result``, counted (a non-streamed call)."""
        self.finish_reason = result.finish_reason
        self.usage = result.usage
        self.tool_calls = len(result.tool_calls)
        self.content_chars = len(result.content or "")
        return result

    def chunk(self, now: float) -> None:
        self.chunks += 1
        if self.first_chunk_at is None:
            self.first_chunk_at = now


class InstrumentedEngine(WrappedEngine):
    """An engine that reports every inference call on an :class:`~jarvis_core.events.EventBus`.

    :param engine: the engine to wrap; everything else (``list_models``, ``health``, ``prepare``,
        ``close``, context managers and any engine-specific attribute) is forwarded to it.
    :param bus: where to publish; ``None`` means :func:`~jarvis_core.events.default_bus`.
    """

    def __init__(self, engine: InferenceEngine, bus: Optional[EventBus] = None) -> None:
        super().__init__(engine)
        self.bus = bus if bus is not None else default_bus()

    def __repr__(self) -> str:
        return f"<InstrumentedEngine {self.engine!r}>"

    # -- events -------------------------------------------------------------------------------------
    def _start(
        self, method: str, messages: Sequence[MessageLike], model: str, temperature: Optional[float],
        max_tokens: int, tools: Optional[Sequence[ToolLike]],
    ) -> Dict[str, Any]:
        ids = {"request_id": f"inf-{next(_ids)}", "engine": self.engine_id, "model": model, "method": method}
        self.bus.publish(
            EventType.INFERENCE_START,
            **ids,
            stream=method in ("stream", "stream_full"),
            messages=len(messages),
            tools=len(tools or ()),
            max_tokens=max_tokens,
            temperature=temperature,
        )
        return ids

    def _end(
        self, ids: Dict[str, Any], started: float, tally: _Tally, status: str, *,
        error: Optional[BaseException] = None, streamed: bool,
    ) -> None:
        data: Dict[str, Any] = {
            **ids,
            "status": status,
            "ok": status == "ok",
            "latency_s": time.perf_counter() - started,
            "finish_reason": tally.finish_reason,
            "usage": _usage_dict(tally.usage),
            "tool_calls": tally.tool_calls,
            "content_chars": tally.content_chars,
        }
        if streamed:
            data["chunks"] = tally.chunks
            data["ttft_s"] = None if tally.first_chunk_at is None else tally.first_chunk_at - started
        if error is not None:
            data["error_type"] = type(error).__name__
            data["error"] = self.redact(str(error))[:500]
        self.bus.publish(EventType.INFERENCE_END, **data)

    # -- instrumented calls -------------------------------------------------------------------------
    @contextlib.contextmanager
    def _call(
        self, method: str, messages: Sequence[MessageLike], model: str, temperature: Optional[float],
        max_tokens: int, tools: Optional[Sequence[ToolLike]],
    ) -> Iterator[_Tally]:
        """START, then END with the status of the non-streamed call made inside the block."""
        ids = self._start(method, messages, model, temperature, max_tokens, tools)
        started = time.perf_counter()
        tally = _Tally()
        status, error = "error", None
        try:
            yield tally
            status = "ok"
        except BaseException as exc:
            status, error = ("cancelled", None) if _is_cancel(exc) else ("error", exc)
            raise
        finally:
            self._end(ids, started, tally, status, error=error, streamed=False)

    def generate(
        self,
        messages: Sequence[MessageLike],
        *,
        model: str,
        temperature: Optional[float] = None,
        max_tokens: int = 1024,
        tools: Optional[Sequence[ToolLike]] = None,
        **options: Any,
    ) -> Completion:
        with self._call("generate", messages, model, temperature, max_tokens, tools) as tally:
            return tally.completed(self.engine.generate(
                messages, model=model, temperature=temperature, max_tokens=max_tokens, tools=tools, **options))

    async def agenerate(
        self,
        messages: Sequence[MessageLike],
        *,
        model: str,
        temperature: Optional[float] = None,
        max_tokens: int = 1024,
        tools: Optional[Sequence[ToolLike]] = None,
        **options: Any,
    ) -> Completion:
        """The wrapped engine's :meth:`~InferenceEngine.agenerate` (its async client, or its default thread)."""
        with self._call("agenerate", messages, model, temperature, max_tokens, tools) as tally:
            return tally.completed(await self.engine.agenerate(
                messages, model=model, temperature=temperature, max_tokens=max_tokens, tools=tools, **options))

    def stream(
        self,
        messages: Sequence[MessageLike],
        *,
        model: str,
        temperature: Optional[float] = None,
        max_tokens: int = 1024,
        tools: Optional[Sequence[ToolLike]] = None,
        **options: Any,
    ) -> AsyncIterator[str]:
        """The wrapped engine's text stream, between START and END events."""
        return self._stream("stream", _count_text, messages, model, temperature, max_tokens, tools, options)

    def stream_full(
        self,
        messages: Sequence[MessageLike],
        *,
        model: str,
        temperature: Optional[float] = None,
        max_tokens: int = 1024,
        tools: Optional[Sequence[ToolLike]] = None,
        **options: Any,
    ) -> AsyncIterator[StreamChunk]:
        """The wrapped engine's chunk stream, between START and END events (OpenJarvis left it bare)."""
        return self._stream("stream_full", _count_chunk, messages, model, temperature, max_tokens, tools, options)

    def _stream(self, method: str, count: Callable[[_Tally, Any], None], messages: Sequence[MessageLike], model: str,
                temperature: Optional[float], max_tokens: int, tools: Optional[Sequence[ToolLike]],
                options: Dict[str, Any]) -> AsyncIterator[Any]:
        source = getattr(self.engine, method)(
            messages, model=model, temperature=temperature, max_tokens=max_tokens, tools=tools, **options
        )
        return self._watched(source, (method, messages, model, temperature, max_tokens, tools), count)

    async def _watched(
        self, source: AsyncIterator[Any], call: Tuple[Any, ...], count: Callable[[_Tally, Any], None]
    ) -> AsyncIterator[Any]:
        # Returned (not wrapped) by stream/stream_full, so closing the consumer's iterator closes this one
        # at once and END is published then; START waits for the first iteration, like the request.
        ids = self._start(*call)
        started = time.perf_counter()
        tally = _Tally()
        status, error = "cancelled", None
        try:
            async for item in source:
                tally.chunk(time.perf_counter())
                count(tally, item)
                yield item
            status = "ok"
        except GeneratorExit:
            raise  # the consumer stopped early: status stays "cancelled"
        except BaseException as exc:
            status, error = ("cancelled", None) if _is_cancel(exc) else ("error", exc)
            raise
        finally:
            self._end(ids, started, tally, status, error=error, streamed=True)


def _count_text(tally: _Tally, text: str) -> None:
    tally.content_chars += len(text)


def _count_chunk(tally: _Tally, chunk: StreamChunk) -> None:
    tally.content_chars += len(chunk.content or "")
    tally.tool_calls += len(chunk.tool_calls)
    if chunk.finish_reason is not None:
        tally.finish_reason = chunk.finish_reason
    if chunk.usage is not None:
        tally.usage = chunk.usage


def _is_cancel(exc: BaseException) -> bool:
    return isinstance(exc, (asyncio.CancelledError, KeyboardInterrupt))
