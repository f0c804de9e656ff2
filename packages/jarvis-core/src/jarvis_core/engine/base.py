"""The engine interface every inference backend implements (docs/contract.md §4).

An engine implements :meth:`InferenceEngine.generate` and at least one of :meth:`~InferenceEngine.stream`
or :meth:`~InferenceEngine.stream_full`; each streaming method has a default built on the other.
:meth:`~InferenceEngine.agenerate`, the async twin of ``generate``, runs ``generate`` in a worker thread
unless the engine has an async client of its own and overrides it.

Sampling arguments left as ``None`` are *unset*: the engine fills them from the backend defaults of the
model's family (:mod:`jarvis_core.defaults`), then from its own defaults (temperature 0.7). A literal
``temperature=0.7`` default would make "the caller did not say" and "the caller said 0.7" the same thing
(see docs/architecture.md); an explicit ``0`` is always kept.
"""

from __future__ import annotations

import abc
import contextlib
import functools
from typing import Any, AsyncIterator, ClassVar, FrozenSet, Iterator, List, Mapping, Optional, Sequence, Tuple, Union

from jarvis_core.engine.redaction import scrub_error, scrub_value
from jarvis_core.errors import InvalidOptionError, JarvisError
from jarvis_core.types import Completion, MessageLike, StreamChunk, ToolSpec

__all__ = ["InferenceEngine", "ToolLike", "SAMPLING_FIELDS", "SAMPLING_OPTIONS"]

#: A tool as engines accept it: a :class:`ToolSpec` or an OpenAI-style dict.
ToolLike = Union[ToolSpec, Mapping[str, Any]]

#: The sampling fields: what a family rule or the user's ``[model_defaults]`` may set
#: (:class:`~jarvis_core.config.ModelDefaultsRule` has exactly these besides its two parser names), what the
#: backend-defaults machinery fills, and the sampling options engines take. The one list; in this order.
SAMPLING_FIELDS: Tuple[str, ...] = ("temperature", "top_p", "top_k", "min_p", "repeat_penalty", "presence_penalty")
#: :data:`SAMPLING_FIELDS` as a set, for membership tests and set arithmetic.
SAMPLING_OPTIONS: FrozenSet[str] = frozenset(SAMPLING_FIELDS)


class InferenceEngine(abc.ABC):
    """Base class of every engine.

    Subclasses set :attr:`engine_id` (the registry key) and :attr:`allowed_options` (the keyword options
    ``generate`` and the stream methods accept beyond the named parameters). An engine is a context
    manager; :meth:`close` releases its connection pool.
    """

    #: The registry key of this engine (``"ollama"``, ``"vllm"``, …).
    engine_id: ClassVar[str] = ""
    #: Extra keyword options accepted by ``generate``/``stream``/``stream_full``; anything else is an error.
    allowed_options: ClassVar[FrozenSet[str]] = frozenset()

    # -- generation -------------------------------------------------------------------------------
    @abc.abstractmethod
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
        """Run one request and return the whole response."""

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
        """Async twin of :meth:`generate`: the same request, the same result and errors, awaited.

        Default: :meth:`generate` in a worker thread (anyio's, so the threads an application allows for
        blocking calls bound it; cancelling waits for the call to end). An engine with an async HTTP client
        overrides it, so that a request in flight costs no thread: under a server answering many
        non-streamed requests at once, each thread hop also waits for the GIL.
        """
        import anyio.to_thread  # off import time: registering a plugin stays cheap

        call = functools.partial(self.generate, messages, model=model, temperature=temperature,
                                 max_tokens=max_tokens, tools=tools, **options)
        return await anyio.to_thread.run_sync(call)

    async def stream(
        self,
        messages: Sequence[MessageLike],
        *,
        model: str,
        temperature: Optional[float] = None,
        max_tokens: int = 1024,
        tools: Optional[Sequence[ToolLike]] = None,
        **options: Any,
    ) -> AsyncIterator[str]:
        """Yield the response text as it arrives. Default: the ``content`` deltas of :meth:`stream_full`."""
        if type(self).stream_full is InferenceEngine.stream_full:
            raise NotImplementedError(f"{type(self).__name__} implements neither stream nor stream_full")
        async for chunk in self.stream_full(
            messages, model=model, temperature=temperature, max_tokens=max_tokens, tools=tools, **options
        ):
            if chunk.content:
                yield chunk.content

    async def stream_full(
        self,
        messages: Sequence[MessageLike],
        *,
        model: str,
        temperature: Optional[float] = None,
        max_tokens: int = 1024,
        tools: Optional[Sequence[ToolLike]] = None,
        **options: Any,
    ) -> AsyncIterator[StreamChunk]:
        """Yield :class:`StreamChunk` objects: content and reasoning deltas, then complete tool calls,
        usage and the finish reason. Default: wraps :meth:`stream` (text only) and ends with ``stop``."""
        if type(self).stream is InferenceEngine.stream:
            raise NotImplementedError(f"{type(self).__name__} implements neither stream nor stream_full")
        async for text in self.stream(
            messages, model=model, temperature=temperature, max_tokens=max_tokens, tools=tools, **options
        ):
            yield StreamChunk(content=text)
        yield StreamChunk(finish_reason="stop")

    # -- management -------------------------------------------------------------------------------
    @abc.abstractmethod
    def list_models(self) -> List[str]:
        """The model ids the server offers."""

    @abc.abstractmethod
    def health(self) -> bool:
        """True when the server answers within a short timeout. Never raises."""

    def prepare(self, model: str) -> None:
        """Make ``model`` ready (load it) without generating. Default: nothing to do."""

    def close(self) -> None:
        """Release connections. Safe to call more than once."""

    async def aclose(self) -> None:
        """Async twin of :meth:`close`."""
        self.close()

    # -- secrets ----------------------------------------------------------------------------------
    def secret_values(self) -> Sequence[Any]:
        """The secrets (``str`` or :class:`~jarvis_core.engine.redaction.Secret`) this engine holds. Every text
        that leaves the engine (an error, an event, a log record) has them masked with
        :data:`~jarvis_core.engine.redaction.MASK`. The one override point: an engine holding several keys
        returns them all. Default: its ``_api_key`` or ``api_key`` attribute, when set."""
        return tuple(v for v in (getattr(self, "_api_key", None), getattr(self, "api_key", None)) if v)

    def redact(self, value: Any) -> Any:
        """``value`` (text or decoded JSON) with the engine's secrets masked: servers sometimes echo the key
        they rejected, in a status body, an error payload, a malformed line or a header."""
        secrets = self.secret_values()
        return scrub_value(value, secrets) if secrets else value

    def scrub(self, exc: BaseException) -> BaseException:
        """``exc`` (a jarvis error and its chain) with the engine's secrets masked, in place; returned."""
        secrets = self.secret_values()
        if secrets:
            scrub_error(exc, secrets)
        return exc

    @contextlib.contextmanager
    def scrubbed(self) -> Iterator[None]:
        """Mask the engine's secrets in any jarvis error raised inside the block."""
        try:
            yield
        except JarvisError as exc:
            self.scrub(exc)
            raise

    def check_options(self, options: Mapping[str, Any]) -> None:
        """Raise :class:`InvalidOptionError` for any option not in :attr:`allowed_options`."""
        unknown = [k for k in options if k not in self.allowed_options]
        if unknown:
            raise InvalidOptionError(self.engine_id or type(self).__name__, unknown, self.allowed_options)

    def __enter__(self) -> InferenceEngine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> InferenceEngine:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.engine_id!r}>"
