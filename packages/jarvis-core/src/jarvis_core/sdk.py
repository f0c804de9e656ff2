"""The ``Jarvis`` facade: ask a question in one line, with the engine, model and agent picked for you.

::

    from jarvis_core import Jarvis

    with Jarvis() as j:                      # engine from the config, else discovered, else embedded
        print(j.ask("What is the capital of France?"))
        for text in j.ask_stream_sync("Tell me a joke"):
            print(text, end="", flush=True)

    async with Jarvis(engine="ollama", model="qwen3:8b") as j:
        async for text in j.ask_stream("Hi"):
            ...

Constructing a ``Jarvis`` loads no config and contacts no server. :meth:`Jarvis.connect` picks the engine
and the model (it may probe servers, list models or start the embedded llama.cpp server) and returns them as a
:class:`Connection`; it is idempotent and thread-safe. The ``ask`` methods connect on first use, so calling
``connect()`` first is only needed to choose (and announce) before the first question, or to read what was
chosen: the ``engine``, ``engine_key`` and ``model`` properties are plain reads that never pick anything, and
raise :class:`~jarvis_core.errors.UsageError` while nothing is chosen yet::

    j = Jarvis()
    conn = j.connect()                       # Connection(engine_key='ollama', engine=..., model='qwen3:8b', how=...)
    print(j.model)                           # the same model, read

How the engine and model are picked is described in :mod:`jarvis_core.engine_choice`; every choice the caller
did not make is passed to ``announce`` (default: logging). With ``agent=`` (or ``[agent] default`` in the
config) the question goes to that agent from the registry; otherwise straight to the engine.
"""

from __future__ import annotations

import asyncio
import contextvars
import os
import sys
import threading
from typing import (
    TYPE_CHECKING,
    Any,
    AsyncGenerator,
    Callable,
    Dict,
    Iterator,
    List,
    Mapping,
    Optional,
    Sequence,
    Tuple,
    Type,
    TypeVar,
    Union,
    overload,
)

import attrs

from jarvis_core.answer import Answer
from jarvis_core.request_scope import DEFAULT_MAX_TOKENS, DEFAULT_SYSTEM_PROMPT, Prompt, RequestScope
from jarvis_core.sdk_agents import (
    agent_failure,
    agent_for_request,
    ask_with_provider,
    role_of,
    run_agent,
    split_prompt,
)
from jarvis_core.sdk_verbs import answer_for

if TYPE_CHECKING:
    from jarvis_core.aliases import ModelAlias
    from jarvis_core.config import JarvisConfig
    from jarvis_core.embeddings import EmbeddingResult
    from jarvis_core.engine.base import InferenceEngine
    from jarvis_core.engine_choice import Announce
    from jarvis_core.events import EventBus
    from jarvis_core.tools.executor import Approver
    from jarvis_core.types import MessageLike

__all__ = ["DEFAULT_MAX_TOKENS", "DEFAULT_SYSTEM_PROMPT", "Connection", "Jarvis"]

_T = TypeVar("_T")


@attrs.frozen
class Connection:
    """What :meth:`Jarvis.connect` chose: the engine's registry key, the engine, the model, and how the engine
    was picked: ``given`` (passed in), ``explicit`` (named), ``configured``, ``fallback``, ``discovered`` or
    ``embedded`` (see :mod:`jarvis_core.engine_choice`)."""

    engine_key: str
    engine: InferenceEngine = attrs.field(repr=False)
    model: str
    how: str


class Jarvis:
    """Ask questions of an engine (or of an agent running on it).

    :param config: a :class:`~jarvis_core.config.JarvisConfig`, a path to a TOML file, or ``None`` for the
        default config (``$JARVIS_CONFIG``, ``~/.jarvis/config.toml``, environment).
    :param engine: a registry key (``"ollama"``) or a ready :class:`InferenceEngine`. An engine passed in is
        borrowed: :meth:`close` leaves it open. ``None`` picks one (config, discovery, embedded).
    :param model: the model id; ``None`` uses the config's, else the first the engine offers.
    :param host: address override for the engine (``http://host:port``).
    :param agent: a registered agent key; ``None`` uses ``[agent] default`` from the config, if set.
    :param tools: registered tool keys the agent may use (needs an agent).
    :param system_prompt: prepended to text prompts; ``None`` sends none.
    :param bus: an :class:`~jarvis_core.events.EventBus`; when given, the engine is wrapped in an
        :class:`~jarvis_core.instrumented.InstrumentedEngine` publishing to it.
    :param announce: receives one line per choice made for the caller (which engine, which model).
    :param approver: decides on tool calls that need confirmation (``file_write``): ``(call, tool) -> bool``.
        ``None`` denies them (fails closed).
    """

    def __init__(
        self,
        config: Union[JarvisConfig, str, os.PathLike[str], None] = None,
        *,
        engine: Union[str, InferenceEngine, None] = None,
        model: Optional[str] = None,
        host: Optional[str] = None,
        agent: Optional[str] = None,
        tools: Optional[Sequence[str]] = None,
        system_prompt: Optional[str] = DEFAULT_SYSTEM_PROMPT,
        bus: Optional[EventBus] = None,
        announce: Optional[Announce] = None,
        approver: Optional[Approver] = None,
    ) -> None:
        from jarvis_core.engine.base import InferenceEngine

        self._config_arg = config
        self._config: Optional[JarvisConfig] = None
        self._engine_arg = engine
        self._engine: Optional[InferenceEngine] = None
        self._engine_key: Optional[str] = None
        self._engine_how = "given"
        self._owns_engine = False
        self._lock = threading.RLock()
        self._connection: Optional[Connection] = None
        self._bus = bus
        if isinstance(engine, InferenceEngine):  # nothing to pick: known at once, no side effect
            self._engine, self._engine_key = self._observed(engine), engine.engine_id or type(engine).__name__
        self._model = model
        self._model_given = model  # what the caller chose, as opposed to what connect() resolved
        self._alias: Optional[ModelAlias] = None  # the [aliases] entry ``model`` named, once resolved
        self._alias_checked = False
        self._host = host
        self._agent_key = agent
        self._tool_keys = list(tools or ())
        self.system_prompt = system_prompt
        self._announce = announce
        self._approver = approver
        self._loop: Optional[asyncio.AbstractEventLoop] = None
        self._closed = False

    # -- lazily built parts -----------------------------------------------------------------------
    @property
    def config(self) -> JarvisConfig:
        """The configuration (loaded on first use)."""
        if self._config is None:
            from jarvis_core.config import JarvisConfig, load_config

            arg = self._config_arg
            self._config = arg if isinstance(arg, JarvisConfig) else load_config(arg)
        return self._config

    def _observed(self, engine: InferenceEngine) -> InferenceEngine:
        if self._bus is None:
            return engine
        from jarvis_core.instrumented import InstrumentedEngine

        return InstrumentedEngine(engine, self._bus)

    def _check_open(self) -> None:
        if self._closed:
            from jarvis_core.errors import UsageError

            raise UsageError("this Jarvis is closed; create a new one")

    def _resolve_own_alias(self) -> None:
        """When the model this object was given is an alias: use its model, and its engine unless one was
        named (done once; a borrowed engine with no config reads no config)."""
        with self._lock:
            if self._alias_checked:
                return
            self._alias_checked = True
            if self._engine_is_borrowed():
                return
            if not self._model_given:
                self._use_agent_alias_engine()
                return
            from jarvis_core.aliases import resolve_alias

            alias = resolve_alias(self.config, self._model_given)
            if alias is None:
                return
            self._alias = alias
            self._model = self._model_given = alias.model
            if alias.engine and self._engine_arg is None:
                self._engine_arg = alias.engine

    def _agent_model(self) -> Tuple[Optional[str], Optional[ModelAlias]]:
        """The model this object's agent (``agent=``, else ``[agent] default``) is configured to run
        (``[agents.<key>] model``, an alias resolved) and the alias, when it names one."""
        key = self.scope().requested_agent()
        if not key:
            return None, None
        from jarvis_core.agents.factory import agent_model_alias

        return agent_model_alias(key, self.config)

    def _use_agent_alias_engine(self) -> None:
        """When this object's agent runs an alias naming an engine and no engine was named: that engine, as
        for an alias given as ``model``."""
        if self._engine_arg is not None:
            return
        alias = self._agent_model()[1]
        if alias is not None and alias.engine:
            self._engine_arg = alias.engine

    def _aliased(
        self, model: Optional[str], temperature: Optional[float], max_tokens: Optional[int], options: Dict[str, Any],
    ) -> Tuple[Optional[str], Optional[float], Optional[int], Dict[str, Any]]:
        """One request's model (an alias becomes its model), ``temperature``, ``max_tokens`` and options, the
        alias's options filling in what the caller left out."""
        from jarvis_core.aliases import apply_alias_options, resolve_alias

        self._resolve_own_alias()
        alias = self._alias
        if model:
            alias = resolve_alias(None if self._engine_is_borrowed() else self.config, model)
            if alias is not None:
                model = alias.model
                if alias.engine:
                    self._use_alias_engine(model, alias.engine)
        return (model, *apply_alias_options(alias, temperature, max_tokens, options))

    def _use_alias_engine(self, model: str, engine: str) -> None:
        with self._lock:
            if self._engine is None and self._engine_arg is None:
                self._engine_arg = engine
                return
            current = self._engine_key or (self._engine_arg if isinstance(self._engine_arg, str) else None)
            if current != engine:
                from jarvis_core.errors import UsageError

                raise UsageError(f"the alias for {model!r} names engine {engine!r}, but this Jarvis uses "
                                 f"{current!r}; create a Jarvis with that alias as its model instead",
                                 argument="model")

    def _pick_engine(self) -> InferenceEngine:
        """The engine, picked (and announced) if it was not yet: config, discovery or the embedded server."""
        self._resolve_own_alias()
        with self._lock:
            self._check_open()
            if self._engine is None:
                from jarvis_core.engine_choice import choose_engine

                arg = self._engine_arg
                choice = choose_engine(self.config, arg if isinstance(arg, str) else None, host=self._host,
                                       announce=self._announce)
                if self._closed:  # closed from another thread while picking (close() does not wait for us)
                    choice.engine.close()
                    self._check_open()
                self._owns_engine, self._engine_how = True, choice.how
                from jarvis_core.retry import with_retries

                retrying = with_retries(choice.engine, choice.key, self.config, bus=self._bus, announce=self._announce)
                self._engine, self._engine_key = self._observed(retrying), choice.key
            return self._engine

    def connect(self) -> Connection:
        """Pick the engine and the model now (announcing every choice the caller did not make) and return
        them. Picking may probe servers, list the engine's models or start the embedded llama.cpp server.
        Idempotent (later calls return the same :class:`Connection`) and thread-safe; the ``ask`` methods
        call it on first use.

        :raises UsageError: this ``Jarvis`` is closed.
        :raises EngineConnectionError: no engine is reachable (the message says what to do).
        :raises ModelNotFoundError: no model was named and the engine offers none.
        """
        self._resolve_own_alias()
        with self._lock:
            if self._connection is not None and not self._closed:
                return self._connection
            engine = self._pick_engine()
            key = self._engine_key
            assert key is not None
            if self._model is None:
                from jarvis_core.engine_choice import resolve_model

                # A borrowed engine with no config given: do not read the user's config file behind their back.
                # The configured model belongs to the configured engine, not to a stand-in for it.
                substitute = self._engine_how in ("fallback", "embedded")
                config = None if self._engine_is_borrowed() or substitute else self.config
                # The model this object's agent is configured to run, when it has one: not a listed model.
                agent_model = self._agent_model()[0] if config is not None else None
                self._model = resolve_model(engine, key, config, agent_model, announce=self._announce)
            self._connection = Connection(key, engine, self._model, self._engine_how)
            return self._connection

    @property
    def connection(self) -> Optional[Connection]:
        """What :meth:`connect` chose, or ``None`` before it ran. A plain read."""
        return self._connection

    def _chosen(self, what: str, value: Optional[_T]) -> _T:
        self._check_open()
        if value is None:
            from jarvis_core.errors import UsageError

            raise UsageError(f"no {what} is chosen yet: call connect() first (ask() and the other ask methods "
                             "connect on first use)")
        return value

    @property
    def engine(self) -> InferenceEngine:
        """The engine in use: the one passed in, or the one :meth:`connect` picked. A plain read: it never
        picks one; :class:`~jarvis_core.errors.UsageError` before that."""
        return self._chosen("engine", self._engine)

    @property
    def engine_key(self) -> str:
        """The registry key of the engine in use (a plain read, like :attr:`engine`)."""
        return self._chosen("engine", self._engine_key)

    @property
    def model(self) -> str:
        """The model in use: the one passed in, or the one :meth:`connect` resolved (a plain read, like
        :attr:`engine`)."""
        return self._chosen("model", self._model)

    def _use(self, model: Optional[str]) -> Tuple[InferenceEngine, str, str]:
        """Engine, engine key and model for one request: ``model`` when given (the engine is picked, the
        default model is not resolved), else the connection's."""
        if model:
            engine = self._pick_engine()
            assert self._engine_key is not None
            return engine, self._engine_key, model
        conn = self.connect()
        return conn.engine, conn.engine_key, conn.model

    def _engine_is_borrowed(self) -> bool:
        from jarvis_core.engine.base import InferenceEngine

        return isinstance(self._engine_arg, InferenceEngine) and self._config_arg is None

    def scope(self) -> RequestScope:
        """What a request made now is built from: how to get the engine, and what this object was given
        (the config, unless the engine is borrowed and no config was given; the agent, tools, system prompt,
        bus, approver and announcer). Reading it loads the config; it picks no engine."""
        return RequestScope(
            self._use, None if self._engine_is_borrowed() else self.config, system_prompt=self.system_prompt,
            agent_key=self._agent_key, tool_keys=tuple(self._tool_keys), model_given=self._model_given, bus=self._bus,
            approver=self._approver, announce=self._announce, use_engine=self._use_alias_engine)

    def check_names(self) -> None:
        """Raise :class:`~jarvis_core.errors.UnknownNameError` now for an unknown agent or tool (the message
        lists the available ones), before any engine is contacted or started."""
        from jarvis_core.errors import UnknownNameError
        from jarvis_core.plugins.registry import get_registry

        registry = get_registry()
        for key in self._tool_keys:
            registry.get("tool", key)
        agent = self.scope().requested_agent()
        if agent and agent not in registry.items("agent"):
            raise UnknownNameError("agent", agent, list(registry.items("agent")))

    # -- building requests ------------------------------------------------------------------------
    def messages(self, prompt: Prompt, *, system: Optional[str] = None) -> List[MessageLike]:
        """The messages sent for ``prompt``: the system prompt (unless the conversation has one), then it."""
        from jarvis_core.types import Message, Role

        system_text = self.system_prompt if system is None else system
        if isinstance(prompt, str):
            convo: List[MessageLike] = [Message.user(prompt)]
        else:
            convo = list(prompt)
        has_system = any(role_of(m) == Role.SYSTEM.value for m in convo)
        if system_text and not has_system:
            convo.insert(0, Message.system(system_text))
        return convo

    # -- asking -----------------------------------------------------------------------------------
    @overload
    def ask(self, prompt: Prompt, *, schema: None = None, **kwargs: Any) -> str: ...
    @overload
    def ask(self, prompt: Prompt, *, schema: Type[_T], **kwargs: Any) -> _T: ...
    @overload
    def ask(self, prompt: Prompt, *, schema: Union[str, Mapping[str, Any]], **kwargs: Any) -> Any: ...

    def ask(self, prompt: Prompt, *, schema: Any = None, **kwargs: Any) -> Any:
        """Ask and return the answer text. Keyword arguments as for :meth:`ask_full`.

        With ``schema`` the answer is structured output (``response_format``, on every engine): ``schema`` is an
        attrs class (or another type: ``list[Person]``), a JSON-schema dict, or llm's concise form
        (``"name, age int"``). The decoded answer comes back: an instance for a type (through cattrs), a dict
        for the others. A wrong answer raises :class:`~jarvis_core.errors.StructuredOutputError`; an engine that
        cannot honour it :class:`~jarvis_core.errors.StructuredOutputNotSupportedError`.
        """
        if schema is None:
            return self.ask_full(prompt, **kwargs).content
        from jarvis_core.sdk_verbs import structured_answer
        from jarvis_core.structured import response_format_for

        response_format = response_format_for(schema)
        return structured_answer(self.ask_full(prompt, response_format=response_format, **kwargs), schema,
                                 response_format)

    def embed(self, texts: Union[str, Sequence[str]], *, model: Optional[str] = None, **options: Any) -> EmbeddingResult:
        """The embeddings of ``texts`` (one string or many) from the engine: one vector per text, in order.
        ``options`` go to :meth:`InferenceEngine.embed <jarvis_core.engine.base.InferenceEngine.embed>`
        (``dimensions`` where the backend takes it). An engine without embeddings raises
        :class:`~jarvis_core.errors.EmbeddingsNotSupportedError`."""
        from jarvis_core.embeddings import check_inputs

        engine, engine_key, use_model = self._use(model)
        return engine.embed(check_inputs(texts, engine_id=engine_key), model=use_model, **options)

    def ask_full(
        self,
        prompt: Prompt,
        *,
        model: Optional[str] = None,
        system: Optional[str] = None,
        temperature: Optional[float] = None,
        max_tokens: Optional[int] = None,
        agent: Optional[str] = None,
        tools: Optional[Sequence[str]] = None,
        prompt_provider: Optional[str] = None,
        node_context: Optional[Mapping[str, Any]] = None,
        timezone: Optional[str] = None,
        available_commands: Optional[Sequence[Mapping[str, Any]]] = None,
        **options: Any,
    ) -> Answer:
        """Ask and return the whole :class:`~jarvis_core.answer.Answer` (``answer.to_dict()`` for JSON).

        Straight to the engine: ``content``, ``usage``, ``model``, ``finish_reason``, ``tool_calls``,
        ``reasoning`` and ``engine``. Through an agent: ``content``, ``turns``, ``tool_results``, ``usage``
        (every model call of the run), ``stop_reason`` (``final``, ``max_turns``, ``loop_guard``, ``error``,
        ``cancelled``), ``model``, ``engine`` and ``agent``. ``max_tokens`` ``None`` means 1024 for a direct request and the agent's own setting
        for an agent. Other keyword ``options`` go to the engine or, through an agent, to the agent (its own
        options such as ``mode``, or engine options it sends with every model call); one that neither takes
        is an :class:`~jarvis_core.errors.InvalidOptionError` naming it, never dropped.

        With ``prompt_provider`` (a registered name, any case, or ``"auto"`` to pick by model id) the provider
        builds the system prompt from ``node_context``, ``timezone``, ``tools`` and ``available_commands`` and
        reads the reply (see :class:`~jarvis_core.prompts.PromptSession`); the tools are not run, their calls
        come back in ``jarvis_json`` (the parsed reply), beside ``prompt_provider``, ``model_calls`` and
        ``tools_loaded``. With ``agent`` as well, the agent must accept a prompt session
        (``accepts_prompt_session``) and runs the tools; the answer is the agent's, with ``prompt_provider``. ``[agent] default`` is not used here.
        """
        from jarvis_core.types import AgentContext

        model, temperature, max_tokens, options = self._aliased(model, temperature, max_tokens, options)
        if prompt_provider:
            return ask_with_provider(
                self.scope(), prompt, prompt_provider, model=model, system=system, agent=agent, tools=tools,
                node_context=node_context, timezone=timezone, available_commands=available_commands,
                temperature=temperature, max_tokens=max_tokens, options=options,
            )
        agent_key, runner = agent_for_request(self.scope(), agent, tools, model=model, system=system,
                                              temperature=temperature, max_tokens=max_tokens, options=options)
        if runner is None:
            engine, engine_key, use_model = self._use(model)
            completion = engine.generate(
                self.messages(prompt, system=system), model=use_model, temperature=temperature,
                max_tokens=DEFAULT_MAX_TOKENS if max_tokens is None else max_tokens, **options,
            )
            return answer_for(completion, engine_key, options)
        text, history = split_prompt(prompt)
        result = run_agent(str(agent_key), runner, text, AgentContext(messages=tuple(history)))
        used_engine = self._use(model)[1] if getattr(runner, "uses_engine", True) else None
        return Answer.from_agent_result(result, model=getattr(runner, "model", None) or self._use(model)[2],
                                        engine=used_engine, agent=str(agent_key))

    async def ask_stream(
        self,
        prompt: Prompt,
        *,
        model: Optional[str] = None,
        system: Optional[str] = None,
        temperature: Optional[float] = None,
        max_tokens: Optional[int] = None,
        agent: Optional[str] = None,
        tools: Optional[Sequence[str]] = None,
        on_event: Optional[Callable[[Any], None]] = None,
        prompt_provider: Optional[str] = None,
        **options: Any,
    ) -> AsyncGenerator[str, None]:
        """Yield the answer text as it arrives.

        Through an agent the text is the run's answer text as the model writes it; every other agent event
        (tool calls requested, tool results, notices such as the mode ``auto`` picked, the final
        ``RunFinished`` with the result) goes to ``on_event`` when given. Straight to the engine, ``on_event``
        gets the model's reasoning as ``ReasoningDelta`` events and, at the end, one ``TurnFinished`` with the
        usage and finish reason (the request is then made with ``stream_full``). A prompt provider's reply is read
        whole (its message is the one piece).
        """
        if prompt_provider:
            full = await asyncio.to_thread(
                self.ask_full, prompt, model=model, system=system, temperature=temperature, max_tokens=max_tokens,
                agent=agent, tools=tools, prompt_provider=prompt_provider, **options,
            )
            if full.content:
                yield full.content
            return
        model, temperature, max_tokens, options = self._aliased(model, temperature, max_tokens, options)
        # Connecting may probe servers, list models or start one: keep that off the event loop (an agent
        # with a model of its own connects nowhere).
        def build() -> Tuple[Optional[str], Optional[Any]]:  # the config is read there too
            return agent_for_request(self.scope(), agent, tools, model=model, system=system, temperature=temperature,
                                     max_tokens=max_tokens, options=options)

        _agent_key, runner = await asyncio.to_thread(build)
        if runner is None and (self._engine is None or (self._model is None and not model)):
            await asyncio.to_thread(self._use, model)
        if runner is not None:
            from jarvis_core.agents.events import TextDelta
            from jarvis_core.types import AgentContext

            text, history = split_prompt(prompt)
            events = runner.astream(text, AgentContext(messages=tuple(history)))
            try:
                while True:
                    try:
                        event = await events.__anext__()
                    except StopAsyncIteration:
                        break
                    except Exception as exc:  # only the agent's own failures: not what our consumer raises
                        failure = agent_failure(str(_agent_key), exc)
                        if failure is exc:
                            raise
                        raise failure from exc
                    if isinstance(event, TextDelta):
                        if event.text:
                            yield event.text
                    elif on_event is not None:
                        on_event(event)
            finally:
                await events.aclose()
            return
        engine, _key, use_model = self._use(model)
        messages = self.messages(prompt, system=system)
        limit = DEFAULT_MAX_TOKENS if max_tokens is None else max_tokens
        if on_event is None:
            async for text in engine.stream(messages, model=use_model, temperature=temperature, max_tokens=limit,
                                            **options):
                yield text
            return
        async for text in _direct_with_events(engine, messages, use_model, temperature, limit, options, on_event):
            yield text

    def ask_stream_sync(self, prompt: Prompt, **kwargs: Any) -> Iterator[str]:
        """:meth:`ask_stream` for synchronous code. One private event loop serves every call, so the engine's
        connection pool is reused; Ctrl-C (or leaving the loop early) cancels the request."""
        agen = self.ask_stream(prompt, **kwargs)
        # Every piece runs in a task of its own: they share one context, so what the stream sets there (the
        # OpenTelemetry span an agent run opened, for one) lasts from one piece to the next.
        context = contextvars.copy_context()

        async def next_piece() -> str:
            return await agen.__anext__()

        try:
            while True:
                try:
                    yield self._run(next_piece(), context)
                except StopAsyncIteration:
                    return
        finally:
            try:
                self._run(agen.aclose(), context)
            except Exception:  # the generator already failed or was cancelled; nothing left to release
                pass

    def _run(self, coro: Any, context: Optional[contextvars.Context] = None) -> Any:
        if self._loop is None or self._loop.is_closed():
            self._loop = asyncio.new_event_loop()
        loop = self._loop
        if context is None:
            task = loop.create_task(coro)
        elif sys.version_info >= (3, 11):
            task = loop.create_task(coro, context=context)
        else:  # Python 3.10 takes no context: the task runs in a copy of it
            task = context.run(loop.create_task, coro)
        try:
            return loop.run_until_complete(task)
        except BaseException:
            if not task.done():
                # Interrupted (Ctrl-C): cancel the request so its connection is released before we go on.
                task.cancel()
                try:
                    loop.run_until_complete(task)
                except BaseException:
                    pass
            raise

    # -- lifetime ---------------------------------------------------------------------------------
    def close(self) -> None:
        """Close the engine this object built (stopping a managed server) and its event loop. Idempotent."""
        if self._closed:
            return
        self._closed = True
        self._connection = None
        engine, self._engine = self._engine, None
        loop, self._loop = self._loop, None
        try:
            if engine is not None and self._owns_engine:
                if loop is not None and not loop.is_closed():
                    loop.run_until_complete(engine.aclose())
                else:
                    engine.close()
        finally:
            if loop is not None and not loop.is_closed():
                loop.run_until_complete(loop.shutdown_asyncgens())
                loop.close()

    async def aclose(self) -> None:
        """Async twin of :meth:`close` (for ``async with``)."""
        if self._closed:
            return
        self._closed = True
        self._connection = None
        engine, self._engine = self._engine, None
        loop, self._loop = self._loop, None
        try:
            if engine is not None and self._owns_engine:
                await engine.aclose()
        finally:
            if loop is not None and not loop.is_closed():
                loop.close()

    def __enter__(self) -> Jarvis:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> Jarvis:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        engine = self._engine_key or (self._engine_arg if isinstance(self._engine_arg, str) else None)
        return f"<Jarvis engine={engine!r} model={self._model!r}>"


async def _direct_with_events(
    engine: InferenceEngine, messages: Sequence[MessageLike], model: str, temperature: Optional[float],
    max_tokens: int, options: Mapping[str, Any], on_event: Callable[[Any], None],
) -> AsyncGenerator[str, None]:
    """A direct request's text, its reasoning and usage reported to ``on_event`` as an agent's would be."""
    from jarvis_core.agents.events import ReasoningDelta, TurnFinished
    from jarvis_core.types import Usage

    usage, finish = Usage(), "stop"
    chunks = engine.stream_full(messages, model=model, temperature=temperature, max_tokens=max_tokens, **options)
    try:
        async for chunk in chunks:
            if chunk.reasoning:
                on_event(ReasoningDelta(run_id="", turn=1, text=chunk.reasoning))
            if chunk.usage is not None:
                usage = chunk.usage
            if chunk.finish_reason is not None:
                finish = chunk.finish_reason
            if chunk.content:
                yield chunk.content
    finally:
        await chunks.aclose()  # type: ignore[attr-defined]
    on_event(TurnFinished(run_id="", turn=1, usage=usage, finish_reason=finish))
