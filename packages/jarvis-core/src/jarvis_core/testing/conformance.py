"""The engine conformance suite: behaviour every engine plugin must show, run against its own engine.

Subclass :class:`EngineConformance` in a test module of your plugin (name the subclass ``Test…`` so pytest
collects it), implement :meth:`~EngineConformance.make_engine` and either
:meth:`~EngineConformance.exchanges` (recorded answers, replayed by a :class:`ReplayServer`) or
:meth:`~EngineConformance.serve` (a real server)::

    class TestOllamaConformance(EngineConformance):
        model = "llama3.2"
        api_key_param = None                      # the engine takes no key

        def make_engine(self, url, **options):
            return OllamaEngine(host=url, **options)

        def exchanges(self, scenario):
            return OLLAMA_EXCHANGES[scenario]     # "text", "tools", "models"

The checks are plain synchronous methods (streams run under ``asyncio.run``), so the suite needs no
pytest plugin; :func:`run_engine_conformance` runs them without pytest and returns the failures.

Scenarios a plugin answers (:meth:`exchanges` or :meth:`serve`):

``"text"``    a plain answer to :data:`PROMPT`, both non-streamed and streamed (match on the request
              body's ``stream`` flag when the engine uses one endpoint for both).
``"tools"``   an answer with at least one tool call to :data:`TOOL_PROMPT` with :data:`WEATHER_TOOL`,
              both non-streamed and streamed. Return ``None`` to skip the tool checks.
``"models"``  the engine's model listing and health probe.
``"embed"``, ``"structured"``  the optional verbs (:mod:`jarvis_core.testing.conformance_verbs`); an engine
              that declares it lacks one is checked for the typed error instead.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import socket
import sys
from typing import Any, Callable, Dict, Iterator, List, NoReturn, Optional, Sequence, Tuple

import attrs

from jarvis_core.engine.base import InferenceEngine
from jarvis_core.errors import EngineConnectionError, EngineError, EngineTimeoutError, InvalidOptionError, StreamError
from jarvis_core.testing import conformance_verbs
from jarvis_core.testing.replay import Exchange, ReplayServer
from jarvis_core.types import FINISH_REASONS, Completion, Message, StreamChunk, ToolSpec, Usage

__all__ = [
    "PROMPT",
    "SCENARIOS",
    "SECRET",
    "TOOL_PROMPT",
    "WEATHER_TOOL",
    "ConformanceSkip",
    "EngineConformance",
    "LiveServer",
    "closed_port_url",
    "run_engine_conformance",
]

#: The scenarios a plugin answers through exchanges() or serve().
SCENARIOS: Tuple[str, ...] = ("text", "tools", "models", "embed", "structured")
#: The conversation of the "text" scenario (a real SmolLM2 at temperature 0 answers "…Paris.").
PROMPT: Tuple[Message, ...] = (
    Message.system("You are a helpful assistant."),
    Message.user("What is the capital of France?"),
)
#: The conversation of the "tools" scenario.
TOOL_PROMPT: Tuple[Message, ...] = (Message.user("What is the weather in Paris? Use the get_weather tool."),)
WEATHER_TOOL = ToolSpec(
    name="get_weather",
    description="Get the current weather for a city.",
    parameters={"type": "object", "properties": {"location": {"type": "string"}}, "required": ["location"]},
)
#: The key the secrecy checks give the engine; it must never show up in a repr or an error.
SECRET = "sk-conformance-SECRET-0123456789"
_BAD_OPTION = "definitely_not_an_option"


class ConformanceSkip(Exception):
    """A check does not apply (raised instead of ``pytest.skip`` when pytest is not running)."""


def _skip(reason: str) -> NoReturn:
    if "pytest" in sys.modules and not _RUNNING_STANDALONE:
        import pytest

        pytest.skip(reason)
    raise ConformanceSkip(reason)


_RUNNING_STANDALONE = False


def closed_port_url() -> str:
    """The URL of a loopback port nothing listens on (bound, then released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


@attrs.frozen
class LiveServer:
    """A server the suite does not control (no recorded requests to inspect)."""

    url: str


def _as_dicts(messages: Sequence[Message]) -> List[Dict[str, Any]]:
    return [{"role": m.role.value, "content": m.content} for m in messages]


class EngineConformance:
    """Base class of an engine's conformance tests. See the module docs for how to use it."""

    #: The model name sent in every request.
    model: str = "test-model"
    #: The constructor keyword that takes an API key, or ``None`` when the engine has none.
    api_key_param: Optional[str] = "api_key"
    #: If set, the content the "text" scenario must produce (exactly).
    expected_text: Optional[str] = None
    #: If set, what ``list_models()`` must return in the "models" scenario.
    expected_models: Optional[Sequence[str]] = None
    #: ``max_tokens`` of every request.
    max_tokens: int = 32
    #: The protocol ends a stream with a finish or a marker (``data: [DONE]``, ``"done": true``,
    #: ``message_stop``) after its first chunk. ``False`` skips the truncated-stream check.
    stream_end_marker: bool = True

    # -- what a plugin provides ---------------------------------------------------------------------
    def make_engine(self, url: str, **options: Any) -> InferenceEngine:
        """Build the engine pointed at ``url``, passing ``options`` (``api_key=``, ``timeout=``) through."""
        raise NotImplementedError("implement make_engine(url, **options) in your EngineConformance subclass")

    def exchanges(self, scenario: str) -> Optional[Sequence[Exchange]]:
        """The recorded exchanges answering ``scenario`` (``None``: the scenario is not supported)."""
        raise NotImplementedError("implement exchanges(scenario) or serve(scenario) in your EngineConformance subclass")

    @contextlib.contextmanager
    def serve(self, scenario: str) -> Iterator[Any]:
        """Yield a server answering ``scenario``: an object with ``.url``. Default: a :class:`ReplayServer`
        over :meth:`exchanges`; override to point the suite at a real server (yield a :class:`LiveServer`).

        An override may be a context manager (decorated with ``@contextlib.contextmanager``), a plain
        generator that yields the server once (the code after ``yield`` runs as teardown), or a method that
        returns the server object itself."""
        exchanges = self.exchanges(scenario)
        if exchanges is None:
            _skip(f"the engine does not support the {scenario!r} scenario")
        with ReplayServer(list(exchanges or ())) as server:
            yield server

    @contextlib.contextmanager
    def _serving(self, scenario: str) -> Iterator[Any]:
        served: Any = self.serve(scenario)
        if hasattr(served, "__enter__"):
            with served as server:
                yield server
        elif inspect.isgenerator(served):
            with contextlib.contextmanager(lambda: served)() as server:
                yield server
        elif hasattr(served, "url"):
            yield served
        else:
            raise TypeError(
                f"{type(self).__name__}.serve({scenario!r}) returned {served!r}; yield (or return) an object "
                "with .url, such as a ReplayServer or LiveServer(url)"
            )

    # -- helpers ------------------------------------------------------------------------------------
    def _kwargs(self, **extra: Any) -> Dict[str, Any]:
        return {"model": self.model, "temperature": 0.0, "max_tokens": self.max_tokens, **extra}

    @staticmethod
    def _run(engine: InferenceEngine, body: Callable[[], Any]) -> Any:
        """Run an async body on a fresh loop and close the engine's async pool on that same loop."""

        async def main() -> Any:
            try:
                return await body()
            finally:
                await engine.aclose()

        return asyncio.run(main())

    async def _collect(self, engine: InferenceEngine, messages: Sequence[Any], **kw: Any) -> List[StreamChunk]:
        return [c async for c in engine.stream_full(messages, **self._kwargs(**kw))]

    async def _collect_text(self, engine: InferenceEngine, messages: Sequence[Any], **kw: Any) -> List[str]:
        return [t async for t in engine.stream(messages, **self._kwargs(**kw))]

    @staticmethod
    def _replay(server: Any) -> ReplayServer:
        if not isinstance(server, ReplayServer):
            _skip("needs a replay server (recorded requests)")
        return server

    # -- generate -----------------------------------------------------------------------------------
    def test_generate_returns_normalized_completion(self) -> None:
        with self._serving("text") as server, self.make_engine(server.url) as engine:
            result = engine.generate(list(PROMPT), **self._kwargs())
        assert isinstance(result, Completion), f"generate returned {type(result).__name__}, not Completion"
        assert result.finish_reason in FINISH_REASONS, f"finish_reason {result.finish_reason!r} is not normalized"
        assert isinstance(result.usage, Usage)
        assert all(isinstance(n, int) and n >= 0 for n in attrs.astuple(result.usage)), result.usage
        assert isinstance(result.content, str) and result.content, "a text answer has non-empty content"
        assert result.tool_calls == ()
        if self.expected_text is not None:
            assert result.content == self.expected_text

    def test_generate_accepts_messages_and_dicts(self) -> None:
        with self._serving("text") as server, self.make_engine(server.url) as engine:
            a = engine.generate(list(PROMPT), **self._kwargs())
            b = engine.generate(_as_dicts(PROMPT), **self._kwargs())
            assert a.content == b.content
            if isinstance(server, ReplayServer):
                sent = [r.body for r in server.requests[-2:]]
                assert sent[0] == sent[1], "Message objects and dicts must produce the same request"

    def test_agenerate_matches_generate(self) -> None:
        with self._serving("text") as server:
            engine = self.make_engine(server.url)
            try:
                sync = engine.generate(list(PROMPT), **self._kwargs())
                awaited = self._run(engine, lambda: engine.agenerate(list(PROMPT), **self._kwargs()))
            finally:
                engine.close()
            if isinstance(server, ReplayServer):
                sent = [r.body for r in server.requests[-2:]]
                assert sent[0] == sent[1], "agenerate must send the request generate sends"
        assert isinstance(awaited, Completion), f"agenerate returned {type(awaited).__name__}, not Completion"
        assert (awaited.content, awaited.finish_reason, awaited.tool_calls) == (
            sync.content, sync.finish_reason, sync.tool_calls), "agenerate must answer as generate does"

    # -- streaming ----------------------------------------------------------------------------------
    def test_stream_text_equals_stream_full_content(self) -> None:
        with self._serving("text") as server:
            engine = self.make_engine(server.url)

            async def both() -> Tuple[List[str], List[StreamChunk]]:
                return await self._collect_text(engine, PROMPT), await self._collect(engine, PROMPT)

            texts, chunks = self._run(engine, both)
            engine.close()
        assert all(isinstance(t, str) for t in texts)
        assert "".join(texts) == "".join(c.content or "" for c in chunks)
        assert "".join(texts), "the streamed answer is empty"
        if self.expected_text is not None:
            assert "".join(texts) == self.expected_text

    def test_stream_full_ends_with_one_finish_chunk(self) -> None:
        with self._serving("text") as server:
            engine = self.make_engine(server.url)
            chunks = self._run(engine, lambda: self._collect(engine, PROMPT))
            engine.close()
        assert chunks and all(isinstance(c, StreamChunk) for c in chunks)
        finishing = [c for c in chunks if c.finish_reason is not None]
        assert len(finishing) == 1, f"{len(finishing)} chunks carry a finish_reason; exactly one must"
        assert chunks[-1].finish_reason is not None, "the chunk with finish_reason must be the last"
        assert chunks[-1].finish_reason in FINISH_REASONS
        assert sum(c.usage is not None for c in chunks) <= 1, "usage arrives at most once"

    def test_abandoned_stream_leaves_engine_usable(self) -> None:
        with self._serving("text") as server:
            engine = self.make_engine(server.url)

            async def abandon_then_again() -> List[StreamChunk]:
                agen = engine.stream_full(list(PROMPT), **self._kwargs())
                async for _ in agen:
                    break
                await agen.aclose()  # type: ignore[attr-defined]
                return await self._collect(engine, PROMPT)

            chunks = self._run(engine, abandon_then_again)
            engine.close()
        assert chunks[-1].finish_reason is not None

    # -- tools --------------------------------------------------------------------------------------
    def _check_calls(self, calls: Sequence[Any]) -> None:
        assert calls, "the tools scenario must produce at least one tool call"
        for call in calls:
            assert isinstance(call.arguments, str), f"arguments must be a JSON string, got {type(call.arguments)}"
            assert isinstance(json.loads(call.arguments), dict), "arguments must decode to a JSON object"
            assert call.name and call.id, f"a tool call needs a name and an id: {call!r}"

    def test_generate_tool_calls(self) -> None:
        with self._serving("tools") as server, self.make_engine(server.url) as engine:
            result = engine.generate(list(TOOL_PROMPT), tools=[WEATHER_TOOL], **self._kwargs())
        self._check_calls(result.tool_calls)
        assert result.finish_reason == "tool_calls"

    def test_agenerate_tool_calls(self) -> None:
        with self._serving("tools") as server:
            engine = self.make_engine(server.url)
            try:
                result = self._run(engine, lambda: engine.agenerate(
                    list(TOOL_PROMPT), tools=[WEATHER_TOOL], **self._kwargs()))
            finally:
                engine.close()
        self._check_calls(result.tool_calls)
        assert result.finish_reason == "tool_calls"

    def test_stream_full_tool_calls_are_complete(self) -> None:
        with self._serving("tools") as server:
            engine = self.make_engine(server.url)
            chunks = self._run(engine, lambda: self._collect(engine, TOOL_PROMPT, tools=[WEATHER_TOOL]))
            engine.close()
        calls = [call for c in chunks for call in c.tool_calls]
        self._check_calls(calls)
        assert chunks[-1].finish_reason == "tool_calls"
        assert len({c.id for c in calls}) == len(calls), "each tool call is emitted once"

    def test_tool_dicts_are_accepted(self) -> None:
        with self._serving("tools") as server, self.make_engine(server.url) as engine:
            result = engine.generate(list(TOOL_PROMPT), tools=[WEATHER_TOOL.to_openai()], **self._kwargs())
        self._check_calls(result.tool_calls)

    # -- optional verbs (conformance_verbs) ---------------------------------------------------------------
    def test_embed_returns_one_vector_per_input(self) -> None:
        conformance_verbs.check_embed(self)

    def test_embed_without_embeddings_raises_typed_error(self) -> None:
        conformance_verbs.check_embed_unsupported(self)

    def test_structured_output_is_decoded(self) -> None:
        conformance_verbs.check_structured(self)

    def test_structured_output_without_support_raises_typed_error(self) -> None:
        conformance_verbs.check_structured_unsupported(self)

    # -- options and errors -------------------------------------------------------------------------
    def test_unknown_option_raises_invalid_option(self) -> None:
        with self._serving("text") as server:
            engine = self.make_engine(server.url)
            try:
                try:
                    engine.generate(list(PROMPT), **self._kwargs(**{_BAD_OPTION: 1}))
                except InvalidOptionError as exc:
                    assert _BAD_OPTION in str(exc)
                else:
                    raise AssertionError("an unknown option must raise InvalidOptionError")
                try:
                    self._run(engine, lambda: engine.agenerate(list(PROMPT), **self._kwargs(**{_BAD_OPTION: 1})))
                except InvalidOptionError:
                    pass
                else:
                    raise AssertionError("agenerate with an unknown option must raise InvalidOptionError")
                try:
                    self._run(engine, lambda: self._collect(engine, PROMPT, **{_BAD_OPTION: 1}))
                except InvalidOptionError:
                    pass
                else:
                    raise AssertionError("stream_full with an unknown option must raise InvalidOptionError")
                if isinstance(server, ReplayServer):
                    assert server.requests == [], "an invalid option must fail before any request is sent"
            finally:
                engine.close()

    def test_connection_refused_raises_connection_error(self) -> None:
        engine = self.make_engine(closed_port_url())
        try:
            for what, call in (
                ("generate", lambda: engine.generate(list(PROMPT), **self._kwargs())),
                ("agenerate", lambda: self._run(engine, lambda: engine.agenerate(list(PROMPT), **self._kwargs()))),
                ("stream_full", lambda: self._run(engine, lambda: self._collect(engine, PROMPT))),
                ("list_models", engine.list_models),
            ):
                try:
                    call()
                except EngineConnectionError:
                    pass
                else:
                    raise AssertionError(f"{what} on a closed port must raise EngineConnectionError")
            assert engine.health() is False
        finally:
            engine.close()

    def test_list_models_and_health(self) -> None:
        with self._serving("models") as server, self.make_engine(server.url) as engine:
            models = engine.list_models()
            healthy = engine.health()
        assert isinstance(models, list) and all(isinstance(m, str) for m in models)
        if self.expected_models is not None:
            assert models == list(self.expected_models)
        assert healthy is True

    def test_error_status_raises_typed_error(self) -> None:
        with ReplayServer([]) as server:  # every request gets HTTP 599
            engine = self.make_engine(server.url, **self._secret())
            try:
                for what, call in (
                    ("generate", lambda: engine.generate(list(PROMPT), **self._kwargs())),
                    ("agenerate", lambda: self._run(
                        engine, lambda: engine.agenerate(list(PROMPT), **self._kwargs()))),
                    ("stream_full", lambda: self._run(engine, lambda: self._collect(engine, PROMPT))),
                ):
                    try:
                        call()
                    except EngineError as exc:
                        assert SECRET not in str(exc) and SECRET not in repr(exc)
                    else:
                        raise AssertionError(f"{what} must raise an EngineError for an HTTP error status")
            finally:
                engine.close()

    def _own_exchanges(self, scenario: str) -> Sequence[Exchange]:
        try:
            exchanges = self.exchanges(scenario)
        except NotImplementedError:
            exchanges = None
        if exchanges is None:
            _skip(f"needs recorded exchanges for the {scenario!r} scenario (exchanges())")
        return list(exchanges or ())

    def _expect_stream_error(self, exchanges: Sequence[Exchange], failure: str) -> None:
        with ReplayServer(list(exchanges)) as server:
            engine = self.make_engine(server.url)
            try:
                self._run(engine, lambda: self._collect(engine, PROMPT))
            except StreamError:
                pass
            else:
                raise AssertionError(failure)
            finally:
                engine.close()

    def test_broken_stream_raises_stream_error(self) -> None:
        exchanges = self._own_exchanges("text")
        broken = [attrs.evolve(ex, break_after=1) if ex.streamed() else ex for ex in exchanges]
        if not any(ex.streamed() for ex in broken):
            _skip("the 'text' scenario has no streamed exchange")
        self._expect_stream_error(broken, "a stream cut off by the server must raise StreamError")

    def test_stream_ending_cleanly_without_end_marker_raises_stream_error(self) -> None:
        """The server sends the first chunk of the recorded stream, then ends the response *cleanly* (a
        proper end of the chunked body, no reset), before the finish and the protocol's end marker
        (``data: [DONE]``, a ``"done": true`` line, ``message_stop``). That is a truncated answer (a server
        restarted, a proxy that gave up), not a finished one: it must raise StreamError."""
        if not self.stream_end_marker:
            _skip("the protocol has no end marker (set stream_end_marker = False only when that is true)")
        exchanges = self._own_exchanges("text")
        cut = [_first_chunk_only(ex) if ex.streamed() else ex for ex in exchanges]
        if not any(ex.streamed() for ex in cut):
            _skip("the 'text' scenario has no streamed exchange")
        self._expect_stream_error(
            cut,
            "a stream that ends cleanly after its first chunk, without a finish or the protocol's end marker, "
            "must raise StreamError, not pass as a complete answer",
        )

    def test_timeout_raises_connection_error(self) -> None:
        with ReplayServer([Exchange("*", None, hang=True)]) as server:
            engine = self.make_engine(server.url, timeout=0.3)
            try:
                engine.generate(list(PROMPT), **self._kwargs())
            except EngineTimeoutError:
                pass
            except EngineConnectionError as exc:
                raise AssertionError(f"a server that never answers must raise EngineTimeoutError (a subclass of "
                                     f"EngineConnectionError), not {type(exc).__name__}: {exc}") from None
            else:
                raise AssertionError("a server that never answers must raise EngineTimeoutError on timeout")
            finally:
                engine.close()

    # -- lifecycle and secrets ----------------------------------------------------------------------
    def test_close_is_idempotent(self) -> None:
        with self._serving("text") as server:
            engine = self.make_engine(server.url)
            engine.generate(list(PROMPT), **self._kwargs())
            engine.close()
            engine.close()
            self._run(engine, engine.aclose)

    def test_context_manager_closes_connections(self) -> None:
        with self._serving("text") as server:
            with self.make_engine(server.url) as engine:
                assert isinstance(engine, InferenceEngine)
                engine.generate(list(PROMPT), **self._kwargs())
            replay = self._replay(server)
            assert replay.wait_until(lambda s: s.open_connections == 0, timeout=3), "leaving the with block must close the pool"

            async def async_block() -> None:
                async with self.make_engine(server.url) as aengine:
                    await self._collect(aengine, PROMPT)
                    assert replay.open_connections >= 1

            asyncio.run(async_block())
            assert replay.wait_until(lambda s: s.open_connections == 0, timeout=3), "leaving async with must close the pool"

    def _secret(self) -> Dict[str, Any]:
        return {self.api_key_param: SECRET} if self.api_key_param else {}

    def test_no_secret_in_repr_or_errors(self) -> None:
        if not self.api_key_param:
            _skip("the engine takes no API key")
        engine = self.make_engine(closed_port_url(), **self._secret())
        try:
            assert SECRET not in repr(engine) and SECRET not in str(engine)
            try:
                engine.generate(list(PROMPT), **self._kwargs())
            except EngineError as exc:
                assert SECRET not in str(exc) and SECRET not in repr(exc)
        finally:
            engine.close()


def _first_chunk_only(ex: Exchange) -> Exchange:
    headers = {"Content-Type": ex.content_type(), **dict(ex.headers)}
    return attrs.evolve(ex, ndjson=None, sse=None, raw=ex.chunks()[:1], headers=headers, break_after=None)


def run_engine_conformance(suite: EngineConformance) -> Dict[str, str]:
    """Run every check of ``suite`` without pytest. Returns ``{check: "ok" | "skipped: …" | "FAILED: …"}``."""
    global _RUNNING_STANDALONE
    results: Dict[str, str] = {}
    previous, _RUNNING_STANDALONE = _RUNNING_STANDALONE, True
    try:
        for name in sorted(n for n in dir(suite) if n.startswith("test_")):
            try:
                getattr(suite, name)()
            except ConformanceSkip as exc:
                results[name] = f"skipped: {exc}"
            except Exception as exc:
                results[name] = f"FAILED: {type(exc).__name__}: {exc}"
            else:
                results[name] = "ok"
    finally:
        _RUNNING_STANDALONE = previous
    return results
