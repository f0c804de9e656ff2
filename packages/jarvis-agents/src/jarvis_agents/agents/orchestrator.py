"""``orchestrator``: the tool loop, in the mode that suits the engine and model.

``mode``:

- ``function_calling``: native tool calls through the engine (the core's loop as is).
- ``structured``: one JSON-schema-constrained action per turn (:mod:`.structured`), for models without
  native tool calls (SmolLM2-class models, templates without tools).
- ``text``: OpenJarvis's ``THOUGHT/TOOL/INPUT/FINAL_ANSWER`` text protocol, with stop sequences and reasoning
  stripped before parsing (:mod:`.react`).
- ``auto`` (default): native when the engine takes tools (it says the model supports them, or it is an
  OpenAI-compatible server such as vLLM or SGLang, which report nothing), else structured when the engine
  takes a JSON schema, else the ReAct text protocol (:func:`.modes.choose_mode`). The choice is made once per
  agent object, on its first run, and announced on every run: a ``Notice(kind="mode")`` event, an
  ``AGENT_MODE_CHOSEN`` bus event and a log line. When a server then refuses the tools (the engine retried
  without them), the turn is redone with structured actions and ``auto`` keeps structured, announced the
  same way.

Other options: ``structured_answer`` (``free`` or ``constrained``, see :mod:`.structured`),
``max_string_length`` (the ``maxLength`` given to every free string of the action schema), and those of
:class:`~jarvis_core.agents.ToolUsingAgent` (``parallel_tools``, ``max_calls_per_turn``, ``loop_guard``,
``final_answer_on_max_turns``).
"""

from __future__ import annotations

import asyncio
import logging
import threading
from typing import Any, AsyncIterator, Dict, Optional, Sequence, Tuple

from jarvis_agents.agents import structured
from jarvis_agents.agents.modes import MODES, choose_mode
from jarvis_agents.agents.react import observe_text, require_stop, text_turn
from jarvis_agents.agents.text_protocol import OJ_TEXT, REACT, Protocol
from jarvis_agents.agents.tool_loop import LoopAgent
from jarvis_core.agents import FINAL_ANSWER_PROMPT, AgentEvent, AgentRun, Notice
from jarvis_core.errors import ConfigError
from jarvis_core.events import EventType
from jarvis_core.types import Message, Role, ToolResult

__all__ = ["OrchestratorAgent"]

log = logging.getLogger("jarvis_agents")


class OrchestratorAgent(LoopAgent):
    """``OrchestratorAgent(engine, model=..., tools=[...], mode="auto")``."""

    agent_id = "orchestrator"

    def __init__(self, engine: Any, *, mode: str = "auto", structured_answer: str = "free",
                 max_string_length: int = 256, **kwargs: Any) -> None:
        if mode not in MODES:
            raise ConfigError(f"orchestrator mode must be one of {', '.join(MODES)}, got {mode!r}",
                              key="agents.orchestrator.mode")
        if structured_answer not in structured.ANSWERS:
            raise ConfigError(f"structured_answer must be one of {', '.join(structured.ANSWERS)}, "
                              f"got {structured_answer!r}", key="agents.orchestrator.structured_answer")
        if isinstance(max_string_length, bool) or not isinstance(max_string_length, int) or max_string_length < 1:
            raise ConfigError(f"max_string_length must be a whole number of at least 1, got {max_string_length!r}",
                              key="agents.orchestrator.max_string_length")
        super().__init__(engine, **kwargs)
        self.mode = mode
        self.structured_answer = structured_answer
        self.max_string_length = max_string_length
        problem = structured.engine_problem(engine, structured_answer) if mode == "structured" else ""
        if problem:
            raise ConfigError(problem, key="agents.orchestrator.mode")
        if mode in ("text", "react"):
            require_stop(engine, f"orchestrator mode {mode!r}")
        self._chosen: Optional[Tuple[str, str]] = None if mode == "auto" else (mode, "configured")
        self._choose_lock = threading.Lock()

    # -- the mode -----------------------------------------------------------------------------------
    def resolved_mode(self) -> Tuple[str, str]:
        """``(mode, reason)``: the configured mode, or what ``auto`` picked (asked once per agent object)."""
        with self._choose_lock:
            if self._chosen is None:
                self._chosen = choose_mode(self.engine, self.model)
            return self._chosen

    def _protocol(self, run: AgentRun) -> Protocol:
        return OJ_TEXT if run.state["mode"] == "text" else REACT

    async def loop(self, run: AgentRun) -> AsyncIterator[AgentEvent]:
        # auto asks the server once, off the loop; afterwards (and for a configured mode) the answer is known,
        # and a thread hand-off per run would cost more than a fast model's turn.
        chosen = self._chosen
        mode, reason = chosen if chosen is not None else await asyncio.to_thread(self.resolved_mode)
        run.state["mode"] = mode
        if self.mode == "auto":
            message = f"orchestrator mode auto chose {mode}: {reason}"
            log.info("%s (model %s)", message, self.model)
            if self.bus is not None:
                self.bus.publish(EventType.AGENT_MODE_CHOSEN, run_id=run.run_id, agent=self.agent_id,
                                 model=self.model, mode=mode, reason=reason)
            yield Notice(run.run_id, "mode", message)
        async for event in super().loop(run):
            yield event

    # -- the turn, by mode ----------------------------------------------------------------------------
    async def decide(self, run: AgentRun) -> AsyncIterator[AgentEvent]:
        mode = run.state["mode"]
        if mode == "function_calling":
            async for event in super().decide(run):
                yield event
            async for event in self._fall_back_if_tools_refused(run):
                yield event
            return
        if mode == "structured":
            steps = structured.answer_turn(self, run) if structured.ANSWER_NEXT.pop(run, False) \
                else structured.decision_turn(self, run)
        else:
            steps = text_turn(self, run, self._protocol(run))
        async for event in steps:
            yield event

    async def _fall_back_if_tools_refused(self, run: AgentRun) -> AsyncIterator[AgentEvent]:
        """The server refused the tools (the engine retried without them: ``tools_dropped``): in ``auto``, redo
        the turn with JSON-schema actions and keep that mode for this agent, announced; a configured
        ``function_calling`` keeps the tool-less answer (the engine has warned)."""
        completion = run.completion
        if self.mode != "auto" or completion is None or not completion.metadata.get("tools_dropped"):
            return
        if structured.engine_problem(self.engine, self.structured_answer):
            return
        if run.messages and run.messages[-1].role is Role.ASSISTANT:
            run.messages.pop()  # the answer given without the tools is replaced by the structured turn
        reason = "the server refused native tools for this model"
        with self._choose_lock:
            self._chosen = ("structured", f"JSON-schema-constrained actions: {reason}")
        run.state["mode"] = "structured"
        message = f"orchestrator mode auto falls back to structured: {reason}"
        log.warning("%s (model %s)", message, self.model)
        if self.bus is not None:
            self.bus.publish(EventType.AGENT_MODE_CHOSEN, run_id=run.run_id, agent=self.agent_id,
                             model=self.model, mode="structured", reason=reason)
        yield Notice(run.run_id, "mode", message)
        async for event in structured.decision_turn(self, run):
            yield event

    def observe(self, run: AgentRun, results: Sequence[ToolResult]) -> None:
        mode = run.state["mode"]
        if mode in ("text", "react"):
            observe_text(run, results, self._protocol(run))
            return
        super().observe(run, results)
        if mode == "structured":
            structured.after_results(run, results)

    async def final_answer(self, run: AgentRun) -> AsyncIterator[AgentEvent]:
        mode = run.state["mode"]
        if mode == "function_calling":
            async for event in super().final_answer(run):
                yield event
            return
        run.messages.append(Message.user(FINAL_ANSWER_PROMPT))
        messages = structured.plain_history(run.messages)
        extra: Dict[str, Any] = {"stop": self._protocol(run).stop} if mode in ("text", "react") else {}
        async for event in self.call_model(run, messages=messages, record=False, **extra):
            yield event
        completion = run.completion
        assert completion is not None
        run.messages.append(Message.assistant(completion.content or ""))
