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
from typing import (
    TYPE_CHECKING,
    Any,
    AsyncIterator,
    ClassVar,
    FrozenSet,
    Iterator,
    List,
    Mapping,
    Optional,
    Sequence,
    Tuple,
    Union,
)

from jarvis_core.engine.redaction import scrub_error, scrub_value
from jarvis_core.errors import (
    EmbeddingsNotSupportedError,
    InvalidOptionError,
    JarvisError,
    StructuredOutputNotSupportedError,
)
from jarvis_core.types import Completion, MessageLike, StreamChunk, ToolSpec

if TYPE_CHECKING:
    from jarvis_core.embeddings import EmbeddingResult

__all__ = ["InferenceEngine", "ToolLike", "SAMPLING_FIELDS", "SAMPLING_OPTIONS", "supports_embeddings",
           "supports_structured_output"]

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

    def __init_subclass__(cls, **kwargs: Any) -> None:
        # Structured output is decoded here, once for every engine: an engine translates ``response_format`` to
        # its wire form, and the generate/agenerate/stream_full it defines return the decoded object with it.
        # A text that does not decode is not an error here (agents and prompt providers that ask for JSON
        # recover from it themselves); parsed stays None and metadata["parse_error"] says why.
        super().__init_subclass__(**kwargs)
        own = cls.__dict__
        for name, wrap in (("generate", _decoded), ("agenerate", _adecoded), ("stream_full", _decoded_stream)):
            method = own.get(name)
            if method is not None and not getattr(method, "__isabstractmethod__", False) \
                    and not getattr(method, "_jarvis_decodes", False):
                setattr(cls, name, wrap(method))

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

    # -- embeddings -------------------------------------------------------------------------------
    #: Inputs sent per embeddings request; :meth:`embed` splits longer lists (servers cap a request's size).
    embed_batch_size: ClassVar[int] = 256
    #: Extra keyword options ``embed`` accepts (``dimensions``, ``encoding_format`` where the backend takes them).
    embed_options: ClassVar[FrozenSet[str]] = frozenset()

    def embed(self, inputs: Union[str, Sequence[str]], *, model: str, **options: Any) -> EmbeddingResult:
        """The embeddings of ``inputs`` (one string or many): one vector per input, in order, with the model
        and the token usage. Optional: the default raises
        :class:`~jarvis_core.errors.EmbeddingsNotSupportedError` naming the engine."""
        raise EmbeddingsNotSupportedError(engine_id=self.engine_id or type(self).__name__)

    async def aembed(self, inputs: Union[str, Sequence[str]], *, model: str, **options: Any) -> EmbeddingResult:
        """Async twin of :meth:`embed`. Default: :meth:`embed` in a worker thread (an engine without
        embeddings raises at once)."""
        if not supports_embeddings(self):
            return self.embed(inputs, model=model, **options)
        import anyio.to_thread

        return await anyio.to_thread.run_sync(functools.partial(self.embed, inputs, model=model, **options))

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
        """Raise :class:`InvalidOptionError` for any option not in :attr:`allowed_options`
        (:class:`~jarvis_core.errors.StructuredOutputNotSupportedError` for ``response_format``)."""
        unknown = [k for k in options if k not in self.allowed_options]
        if "response_format" in unknown:
            raise StructuredOutputNotSupportedError(engine_id=self.engine_id or type(self).__name__)
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


def supports_embeddings(engine: InferenceEngine) -> bool:
    """True when ``engine``'s class implements :meth:`InferenceEngine.embed` (a wrapper answers for the engine it
    wraps through its own ``supports_embeddings`` attribute). The engine may still find that a model has none."""
    declared = getattr(engine, "supports_embeddings", None)
    if isinstance(declared, bool):
        return declared
    return type(engine).embed is not InferenceEngine.embed


def supports_structured_output(engine: InferenceEngine) -> bool:
    """True when ``engine`` takes the ``response_format`` option (it lists it in ``allowed_options``)."""
    return "response_format" in engine.allowed_options


def _parsed(engine: InferenceEngine, result: Completion, kwargs: Mapping[str, Any]) -> Completion:
    """``result`` with its parsed value when the call asked for a ``response_format``."""
    response_format = kwargs.get("response_format")
    if not response_format:
        return result
    from jarvis_core.structured import with_parsed

    return with_parsed(result, response_format, engine_id=engine.engine_id, strict=False)


def _decoded(fn: Any) -> Any:
    @functools.wraps(fn)
    def generate(self: InferenceEngine, *args: Any, **kwargs: Any) -> Completion:
        return _parsed(self, fn(self, *args, **kwargs), kwargs)

    generate._jarvis_decodes = True  # type: ignore[attr-defined]
    return generate


def _adecoded(fn: Any) -> Any:
    @functools.wraps(fn)
    async def agenerate(self: InferenceEngine, *args: Any, **kwargs: Any) -> Completion:
        return _parsed(self, await fn(self, *args, **kwargs), kwargs)

    agenerate._jarvis_decodes = True  # type: ignore[attr-defined]
    return agenerate


def _decoded_stream(fn: Any) -> Any:
    @functools.wraps(fn)
    def stream_full(self: InferenceEngine, *args: Any, **kwargs: Any) -> AsyncIterator[StreamChunk]:
        chunks = fn(self, *args, **kwargs)
        response_format = kwargs.get("response_format")
        if not response_format or response_format.get("type") == "text":
            return chunks  # type: ignore[no-any-return]
        from jarvis_core.structured import parsed_stream

        return parsed_stream(chunks, response_format, engine_id=self.engine_id, strict=False)

    stream_full._jarvis_decodes = True  # type: ignore[attr-defined]
    return stream_full
