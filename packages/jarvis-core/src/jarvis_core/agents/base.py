"""The agent contract: :class:`BaseAgent`.

Every agent shares one constructor signature::

    Agent(engine, *, model, tools=(), system_prompt=None, temperature=None, max_tokens=None, max_turns=None,
          approver=None, bus=None, config=None, **options)

``**options`` are engine options (``top_p``, ``stop``, …), checked against the engine's allow-list at
construction and sent with every model call; a subclass takes its own keyword options before passing
the rest on. Settings follow the precedence of :mod:`jarvis_core.agents.settings`.

An agent implements one async generator, :meth:`BaseAgent.loop`, which yields
:mod:`~jarvis_core.agents.events` and ends by calling :meth:`AgentRun.finish
<jarvis_core.agents.run.AgentRun.finish>`. :meth:`~BaseAgent.astream`, :meth:`~BaseAgent.arun` and
:meth:`~BaseAgent.run` are built on it and guarantee, for every run: one ``AGENT_TURN_START`` and one
``AGENT_TURN_END`` on the bus, both with the ``run_id``, END emitted in ``finally`` with the stop reason
(``error`` when the run raised, ``cancelled`` when it was cancelled).
"""

from __future__ import annotations

import asyncio
import threading
import time
from typing import TYPE_CHECKING, Any, AsyncIterator, ClassVar, Dict, List, Mapping, Optional, Sequence, Union

from jarvis_core.agents.events import AgentEvent, ReasoningDelta, RunFinished, RunStarted, TextDelta, TurnFinished
from jarvis_core.agents.run import AgentRun, add_usage, new_run_id
from jarvis_core.agents.settings import AgentSettings, resolve_settings
from jarvis_core.errors import ConfigError
from jarvis_core.events import EventBus, EventType
from jarvis_core.types import AgentContext, AgentResult, Completion, Message, Role, ToolCall, ToolSpec, Usage

if TYPE_CHECKING:
    from jarvis_core.config.schema import JarvisConfig
    from jarvis_core.tools.executor import Approver

__all__ = ["CONTINUE_PROMPT", "BaseAgent"]

#: The user message that asks a model cut off by ``max_tokens`` to go on.
CONTINUE_PROMPT = "Continue exactly where you left off."


class BaseAgent:
    """Base class of every agent. Subclasses set :attr:`agent_id` and implement :meth:`loop`.

    Class attributes ``default_temperature``, ``default_max_tokens``, ``default_max_turns`` and
    ``default_system_prompt`` are the class defaults of the precedence chain.
    """

    #: The registry key (names the ``[agents.<key>]`` config table).
    agent_id: ClassVar[str] = ""
    #: Whether the agent can use tools (an agent that cannot refuses ``tools=``).
    accepts_tools: ClassVar[bool] = False
    #: Whether the agent keeps memory between runs in stores it is given: its constructor takes
    #: ``operator_id=`` (whose memory, 1-64 letters, digits, ``_ . -``), ``sessions=`` (a
    #: :class:`~jarvis_core.stores.SessionStore`) and ``state=`` (a :class:`~jarvis_core.stores.StateStore`),
    #: and it appends each run to its session. A host with a database of its own (the server) passes its
    #: stores to such an agent, found by this attribute, without importing the agent's plugin.
    accepts_stores: ClassVar[bool] = False
    #: ``False`` for an agent that runs a model of its own (a wrapped runtime such as Claude Code): a host
    #: then picks, probes or starts no engine for it and passes ``engine=None``; the model is the request's
    #: ``model``, else ``[agents.<key>] model``, else :attr:`default_model`.
    uses_engine: ClassVar[bool] = True
    #: The model of an agent that does not use the engine when neither the request nor the config names one.
    default_model: ClassVar[Optional[str]] = None
    default_temperature: ClassVar[Optional[float]] = None
    default_max_tokens: ClassVar[Optional[int]] = None
    default_max_turns: ClassVar[Optional[int]] = None
    default_system_prompt: ClassVar[Optional[str]] = None
    #: How many times a reply cut off by ``max_tokens`` (``finish_reason="length"``) is continued.
    max_continuations: ClassVar[int] = 2

    def __init__(
        self,
        engine: Any,
        *,
        model: str,
        tools: Sequence[Any] = (),
        system_prompt: Optional[str] = None,
        temperature: Optional[float] = None,
        max_tokens: Optional[int] = None,
        max_turns: Optional[int] = None,
        approver: Optional[Approver] = None,
        bus: Optional[EventBus] = None,
        config: Union[JarvisConfig, Mapping[str, Any], None] = None,
        **options: Any,
    ) -> None:
        if tools and not self.accepts_tools:
            raise ConfigError(f"agent {self.agent_id or type(self).__name__!r} does not use tools; "
                              "pick an agent that does (e.g. orchestrator)")
        if not model:
            raise ConfigError("an agent needs a model id (model=...)")
        self.engine = engine
        self.model = model
        self.bus = bus
        self.approver = approver
        self.settings: AgentSettings = resolve_settings(
            type(self), self.agent_id,
            {"system_prompt": system_prompt, "temperature": temperature, "max_tokens": max_tokens,
             "max_turns": max_turns},
            config,
        )
        check = getattr(engine, "check_options", None)
        if callable(check):
            check(options)
        self.options: Dict[str, Any] = dict(options)
        self.tools = tuple(tools)

    # -- settings shortcuts -------------------------------------------------------------------------
    @property
    def temperature(self) -> Optional[float]:
        return self.settings.temperature

    @property
    def max_tokens(self) -> Optional[int]:
        return self.settings.max_tokens

    @property
    def max_turns(self) -> int:
        return self.settings.max_turns

    @property
    def system_prompt(self) -> Optional[str]:
        return self.settings.system_prompt

    # -- the loop a subclass writes -----------------------------------------------------------------
    async def loop(self, run: AgentRun) -> AsyncIterator[AgentEvent]:
        """Do the agent's work for ``run``: yield events and call ``run.finish(content, stop_reason)``.

        Must be an async generator. The default makes one model call and answers with it.
        """
        run.turns = 1
        async for event in self.call_model(run):
            yield event
        completion = run.completion or Completion()
        run.finish(completion.content or "", "final")

    # -- helpers for loops --------------------------------------------------------------------------
    def build_messages(self, input: str, context: Optional[AgentContext]) -> List[Message]:
        """The first request: one leading system message (the agent's prompt and any system messages of
        the context, joined; templates such as Qwen's reject a second or a late one), the context's other
        messages, then the user's input."""
        systems: List[str] = [self.system_prompt] if self.system_prompt else []
        rest: List[Message] = []
        for msg in (context.messages if context else ()):
            if msg.role is Role.SYSTEM:
                if msg.text:
                    systems.append(msg.text)
            else:
                rest.append(msg)
        head = [Message.system("\n\n".join(systems))] if systems else []
        return [*head, *rest, Message.user(input)]

    async def call_model(
        self,
        run: AgentRun,
        *,
        messages: Optional[Sequence[Message]] = None,
        tools: Optional[Sequence[ToolSpec]] = None,
        record: bool = True,
        continue_on_length: bool = False,
        **extra: Any,
    ) -> AsyncIterator[AgentEvent]:
        """One model call (streamed), yielding text and reasoning deltas and a :class:`TurnFinished`.

        Sets ``run.completion`` (content and usage of every continuation combined) and adds the usage to
        ``run.usage``. ``messages`` defaults to ``run.messages``; with ``record`` the assistant message(s)
        are appended there. ``continue_on_length`` asks a reply cut off by ``max_tokens`` (without tool
        calls) to go on, up to :attr:`max_continuations` times, on the run's own copy of the transcript.
        ``extra`` are per-call engine options (``stop``, ``response_format``, …) on top of the agent's; a
        per-call ``max_tokens`` or ``temperature`` wins over the agent's setting for that call.
        """
        sent: List[Message] = list(run.messages if messages is None else messages)
        parts: List[str] = []
        reasoning: List[str] = []
        usage = Usage()
        added: List[Message] = []
        completion = Completion()
        for attempt in range(self.max_continuations + 1):
            async for event in self._one_call(run, sent, tools, extra):
                if isinstance(event, Completion):
                    completion = event
                else:
                    yield event
            usage = add_usage(usage, completion.usage)
            parts.append(completion.content or "")
            if completion.reasoning:
                reasoning.append(completion.reasoning)
            more = (continue_on_length and completion.finish_reason == "length" and not completion.tool_calls
                    and attempt < self.max_continuations)
            if not more:
                break
            partial = Message.assistant(completion.content or "")
            prompt = Message.user(CONTINUE_PROMPT)
            sent.extend([partial, prompt])
            added.extend([partial, prompt])
        final = Completion(
            content="".join(parts), reasoning="".join(reasoning) or None, tool_calls=completion.tool_calls,
            usage=usage, model=completion.model, finish_reason=completion.finish_reason,
            metadata={**completion.metadata, "continuations": len(parts) - 1},
        )
        run.completion = final
        if record:
            text = completion.content if completion.content or not completion.tool_calls else None
            last = Message(Role.ASSISTANT, text, tool_calls=completion.tool_calls,
                           reasoning=completion.reasoning)
            run.messages.extend([*added, last])

    async def _one_call(self, run: AgentRun, messages: Sequence[Message], tools: Optional[Sequence[ToolSpec]],
                        extra: Mapping[str, Any]) -> AsyncIterator[Any]:
        # A per-call value beats the agent's setting: a step with its own budget (a structured retry
        # doubles max_tokens) must not be capped back to the setting it is growing from.
        kwargs: Dict[str, Any] = dict(self.options)
        if self.temperature is not None:
            kwargs["temperature"] = self.temperature
        if self.max_tokens is not None:
            kwargs["max_tokens"] = self.max_tokens
        kwargs.update(extra)
        content: List[str] = []
        reasoning: List[str] = []
        calls: List[ToolCall] = []
        usage: Optional[Usage] = None
        finish: Optional[str] = None
        metadata: Dict[str, Any] = {}
        run.model_calls += 1
        stream = self.engine.stream_full(messages, model=self.model, tools=list(tools) if tools else None, **kwargs)
        async for chunk in stream:
            if chunk.content:
                content.append(chunk.content)
                yield TextDelta(run.run_id, run.turns, chunk.content)
            if chunk.reasoning:
                reasoning.append(chunk.reasoning)
                yield ReasoningDelta(run.run_id, run.turns, chunk.reasoning)
            calls.extend(chunk.tool_calls)
            usage = chunk.usage or usage
            finish = chunk.finish_reason or finish
            if chunk.metadata:
                metadata.update(chunk.metadata)
        completion = Completion(
            content="".join(content), reasoning="".join(reasoning) or None, tool_calls=calls,
            usage=usage or Usage(), model=self.model, finish_reason=finish or "stop", metadata=metadata,
        )
        run.usage = add_usage(run.usage, completion.usage)
        yield TurnFinished(run.run_id, run.turns, completion.usage, completion.finish_reason)
        yield completion

    # -- entry points -------------------------------------------------------------------------------
    def new_run(self, input: str, context: Optional[AgentContext] = None) -> AgentRun:
        """The state object of a new run, its transcript started with :meth:`build_messages`."""
        run = AgentRun(new_run_id(), input, context)
        run.messages = self.build_messages(input, context)
        return run

    def _publish(self, event_type: EventType, **data: Any) -> None:
        if self.bus is not None:
            self.bus.publish(event_type, **data)

    async def astream(self, input: str, context: Optional[AgentContext] = None) -> AsyncIterator[AgentEvent]:
        """Run the agent, yielding :mod:`~jarvis_core.agents.events` as they happen.

        The first event is :class:`RunStarted`, the last :class:`RunFinished`. An engine error propagates
        out of the stream (after ``AGENT_TURN_END`` with ``stop_reason="error"``).
        """
        run = self.new_run(input, context)
        stop_reason = "error"
        error = ""
        self._publish(EventType.AGENT_TURN_START, run_id=run.run_id, agent=self.agent_id, model=self.model)
        try:
            yield RunStarted(run.run_id, self.agent_id, self.model)
            async for event in self.loop(run):
                yield event
            if run.result is None:
                raise RuntimeError(f"{type(self).__name__}.loop ended without calling run.finish()")
            stop_reason = run.result.stop_reason
            yield RunFinished(run.run_id, run.result)
        except (asyncio.CancelledError, GeneratorExit):
            stop_reason = "cancelled"
            raise
        except BaseException as exc:
            error = type(exc).__name__
            raise
        finally:
            self._publish(
                EventType.AGENT_TURN_END, run_id=run.run_id, agent=self.agent_id, model=self.model,
                stop_reason=stop_reason, turns=run.turns, model_calls=run.model_calls,
                tool_calls=len(run.tool_results), usage=run.usage,
                duration_s=time.monotonic() - run.started, **({"error": error} if error else {}),
            )

    async def arun(self, input: str, context: Optional[AgentContext] = None) -> AgentResult:
        """Run the agent to the end and return its result."""
        result: Optional[AgentResult] = None
        stream = self.astream(input, context)
        try:
            async for event in stream:
                if isinstance(event, RunFinished):
                    result = event.result
        finally:
            await stream.aclose()  # type: ignore[attr-defined]
        assert result is not None
        return result

    async def _arun_into(self, box: List[Any], input: str, context: Optional[AgentContext]) -> None:
        # The result goes into ``box``, not out of the task: on the main thread asyncio.run() restores its
        # SIGINT handler at the end, and that repr()s the main task with its result (the whole transcript).
        box.append(await self.arun(input, context))

    def run(self, input: str, context: Optional[AgentContext] = None) -> AgentResult:
        """Synchronous :meth:`arun`. Works from a thread that already runs an event loop, too."""
        box: List[Any] = []
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            asyncio.run(self._arun_into(box, input, context))
            result: AgentResult = box[0]
            return result

        def target() -> None:
            try:
                asyncio.run(self._arun_into(box, input, context))
            except BaseException as exc:
                box.append(exc)

        thread = threading.Thread(target=target, name=f"agent-{self.agent_id}", daemon=True)
        thread.start()
        thread.join()
        if isinstance(box[0], BaseException):
            raise box[0]
        done: AgentResult = box[0]
        return done

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.agent_id!r} model={self.model!r}>"
