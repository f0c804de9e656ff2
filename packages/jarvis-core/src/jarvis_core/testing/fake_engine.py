"""A scripted engine for testing code that *uses* engines (agents, the SDK, the CLI).

:class:`FakeEngine` answers each call with the next item of its script and records every call::

    engine = FakeEngine([
        Completion(content="", tool_calls=[ToolCall("c1", "add", '{"a": 1, "b": 2}')]),
        "The answer is 3.",                                   # a str is a plain Completion
    ])
    result = my_agent(engine).run("what is 1+2?")
    assert engine.calls[1].messages[-1].role is Role.TOOL

Script items: a :class:`~jarvis_core.types.Completion`; a ``str``; a list of
:class:`~jarvis_core.types.StreamChunk` / ``str`` pieces (a scripted stream; an exception inside the list
is raised at that point of the stream); an exception instance or class (raised); or a callable taking the
:class:`EngineCall` and returning any of these. Either kind of item answers either kind of call: a stream
script given to ``generate`` is assembled into one Completion, a Completion given to ``stream_full`` is
cut into a content chunk and a final chunk.
"""

from __future__ import annotations

from typing import Any, AsyncIterator, Callable, FrozenSet, Iterable, List, Mapping, Optional, Sequence, Union

import attrs

from jarvis_core.embeddings import Embedding, EmbeddingResult, check_inputs
from jarvis_core.engine.base import SAMPLING_OPTIONS, InferenceEngine, ToolLike
from jarvis_core.engine.messages import coerce_messages
from jarvis_core.types import Completion, Message, MessageLike, StreamChunk, ToolCall, Usage

__all__ = ["EngineCall", "FakeEngine", "ScriptItem"]

ScriptItem = Union[
    Completion, str, Sequence[Union[StreamChunk, str, BaseException]], BaseException, type, Callable[..., Any]
]

#: The sampling options (``temperature`` is a named parameter), ``seed`` and ``stop``.
_DEFAULT_OPTIONS = (SAMPLING_OPTIONS - {"temperature"}) | {"seed", "stop"}


@attrs.frozen
class EngineCall:
    """One recorded call: which method, and the arguments it got (messages as :class:`Message`)."""

    method: str
    messages: List[Message]
    model: str
    temperature: Optional[float]
    max_tokens: int
    tools: Optional[List[Any]]
    options: Mapping[str, Any]


def _raise_if_exception(item: Any) -> None:
    if isinstance(item, BaseException):
        raise item
    if isinstance(item, type) and issubclass(item, BaseException):
        raise item()


def _as_chunks(item: Any) -> List[Any]:
    if isinstance(item, Completion):
        out: List[Any] = []
        if item.reasoning:
            out.append(StreamChunk(reasoning=item.reasoning))
        if item.content:
            out.append(StreamChunk(content=item.content))
        out.append(StreamChunk(tool_calls=item.tool_calls, finish_reason=item.finish_reason, usage=item.usage))
        return out
    if isinstance(item, str):
        return [StreamChunk(content=item), StreamChunk(finish_reason="stop")]
    pieces = [StreamChunk(content=p) if isinstance(p, str) else p for p in item]
    if not any(isinstance(p, StreamChunk) and p.finish_reason for p in pieces):
        pieces.append(StreamChunk(finish_reason="stop"))
    return pieces


def _assemble(chunks: Iterable[Any], model: str) -> Completion:
    content: List[str] = []
    reasoning: List[str] = []
    calls: List[ToolCall] = []
    finish: Optional[str] = None
    usage: Optional[Usage] = None
    for chunk in chunks:
        _raise_if_exception(chunk)
        content.append(chunk.content or "")
        reasoning.append(chunk.reasoning or "")
        calls.extend(chunk.tool_calls)
        finish = chunk.finish_reason or finish
        usage = chunk.usage or usage
    return Completion(
        content="".join(content),
        reasoning="".join(reasoning) or None,
        tool_calls=calls,
        usage=usage or Usage(),
        model=model,
        finish_reason=finish or "stop",
    )


class FakeEngine(InferenceEngine):
    """An :class:`InferenceEngine` that replays a script and records its calls.

    :param script: the answers, in order (see the module docs for what an item may be).
    :param default: the answer once the script is used up; without one, an exhausted script raises
        :class:`AssertionError` naming the call (a test asked more often than it expected).
    :param models: what :meth:`list_models` returns.
    :param healthy: what :meth:`health` returns.
    :param engine_id: the id to report (``"fake"``).
    :param allowed_options: extra options accepted; anything else raises
        :class:`~jarvis_core.errors.InvalidOptionError` like a real engine.
    :param embedder: ``text -> vector``: the engine serves embeddings with it (each call recorded in
        :attr:`embed_calls`); ``None``: it has none, and ``embed`` raises
        :class:`~jarvis_core.errors.EmbeddingsNotSupportedError` like any engine without them.
    """

    engine_id = "fake"

    def __init__(
        self,
        script: Iterable[ScriptItem] = (),
        *,
        default: Optional[ScriptItem] = None,
        models: Sequence[str] = ("fake-model",),
        healthy: bool = True,
        engine_id: str = "fake",
        allowed_options: Iterable[str] = _DEFAULT_OPTIONS,
        embedder: Optional[Callable[[str], Sequence[float]]] = None,
    ) -> None:
        self.embedder = embedder
        self.supports_embeddings = embedder is not None
        self.embed_calls: List[Any] = []
        self.engine_id = engine_id  # type: ignore[misc]
        self.allowed_options: FrozenSet[str] = frozenset(allowed_options)  # type: ignore[misc]
        self.script: List[ScriptItem] = list(script)
        self.default = default
        self.models = list(models)
        self.healthy = healthy
        self.calls: List[EngineCall] = []
        self.prepared: List[str] = []
        self.close_count = 0

    @property
    def closed(self) -> bool:
        return self.close_count > 0

    def push(self, *items: ScriptItem) -> FakeEngine:
        """Append answers to the script; returns ``self``."""
        self.script.extend(items)
        return self

    # -- calls --------------------------------------------------------------------------------------
    def _next(self, method: str, messages: Sequence[MessageLike], model: str, temperature: Optional[float],
              max_tokens: int, tools: Optional[Sequence[ToolLike]], options: Mapping[str, Any]) -> Any:
        self.check_options(options)
        call = EngineCall(
            method=method,
            messages=coerce_messages(messages),
            model=model,
            temperature=temperature,
            max_tokens=max_tokens,
            tools=list(tools) if tools is not None else None,
            options=dict(options),
        )
        self.calls.append(call)
        if self.script:
            item = self.script.pop(0)
        elif self.default is not None:
            item = self.default
        else:
            raise AssertionError(
                f"FakeEngine script is used up: call #{len(self.calls)} ({method}, model={model!r}) has no answer"
            )
        if callable(item) and not isinstance(item, type):
            item = item(call)
        _raise_if_exception(item)
        return item

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
        item = self._next("generate", messages, model, temperature, max_tokens, tools, options)
        if isinstance(item, Completion):
            return item if item.model else attrs.evolve(item, model=model)
        if isinstance(item, str):
            return Completion(content=item, model=model)
        return _assemble(_as_chunks(item), model)

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
        item = self._next("stream_full", messages, model, temperature, max_tokens, tools, options)
        for piece in _as_chunks(item):
            _raise_if_exception(piece)
            yield piece

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
        item = self._next("stream", messages, model, temperature, max_tokens, tools, options)
        for piece in _as_chunks(item):
            _raise_if_exception(piece)
            if piece.content:
                yield piece.content

    def embed(self, inputs: Union[str, Sequence[str]], *, model: str, **options: Any) -> EmbeddingResult:
        if self.embedder is None:
            return super().embed(inputs, model=model, **options)
        texts = check_inputs(inputs, engine_id=self.engine_id)
        self.embed_calls.append((texts, model, dict(options)))
        vectors = [Embedding(self.embedder(t), i) for i, t in enumerate(texts)]
        return EmbeddingResult(vectors, model=model, usage=Usage(prompt_tokens=sum(len(t.split()) for t in texts)))

    # -- management ---------------------------------------------------------------------------------
    def list_models(self) -> List[str]:
        return list(self.models)

    def health(self) -> bool:
        return self.healthy

    def prepare(self, model: str) -> None:
        self.prepared.append(model)

    def close(self) -> None:
        self.close_count += 1
