"""``operative``: a tool-using agent that is run again and again for one operator and remembers between runs.

A run is a *tick*:

1. load the operator's state (``operator:<id>:state``) and the last ``history_limit`` messages of its session
   (``operator:<id>``), cut so that no tool-call group is split (:func:`~jarvis_core.stores.whole_groups`);
2. show the state in the system message, then the history, the context and the instruction;
3. run the tool loop; the model has ``memory_store``/``memory_retrieve``/``memory_search`` over its operator's
   keys (:mod:`.operator_memory`), and ``memory_store(key="state", …)`` replaces its state;
4. append the tick's messages (the instruction, every tool call and result, the answer) to the session;
5. when the model did not write its state itself during the tick and the answer is not empty, store the
   answer (its first ``state_max_chars`` characters) as the state. An empty answer never replaces the state.

The stores are :class:`~jarvis_core.stores.SessionStore` and :class:`~jarvis_core.stores.StateStore` objects
(``sessions=``, ``state=``), or the SQLite file ``db=`` (default ``operators.db`` in the jarvis home). A store
that fails raises :class:`~jarvis_core.stores.StoreError` out of the run (``AGENT_TURN_END`` carries the
error); nothing is logged and ignored. ``result.metadata["state_write"]`` says what happened to the state:
``model`` (the model wrote it), ``auto`` (the answer was stored) or ``kept`` (unchanged).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any, AsyncIterator, List, Optional, Sequence, Tuple, Union

from jarvis_agents.agents.operator_memory import MEMORY_TOOL_NAMES, OperatorMemory
from jarvis_agents.agents.orchestrator import OrchestratorAgent
from jarvis_agents.agents.strategies.retrieval import item_text
from jarvis_agents.run_keys import RunKey
from jarvis_core.agents import AgentEvent, AgentRun, Notice, ToolCallsRequested, TurnFinished
from jarvis_core.errors import ConfigError
from jarvis_core.stores import SessionStore, SQLiteStore, StateStore, whole_groups
from jarvis_core.types import Message, Role

__all__ = ["DEFAULT_OPERATOR", "SECTIONS", "OperativeAgent", "default_db_path", "refinish"]

#: The operator id an operative agent remembers as when none is given (``jarvis ask --agent operative``).
DEFAULT_OPERATOR = "default"

STATE_HELP = ('(Replace it with memory_store(key="state", content=...). If you do not, your final answer is '
              "saved as your state.)")
#: The run's system-message sections (its state first); :meth:`OperativeAgent.prepare` may append more.
SECTIONS: RunKey[List[str]] = RunKey("sections")


def default_db_path() -> Path:
    """``operators.db`` in the jarvis home."""
    from jarvis_core.config import jarvis_home

    return jarvis_home() / "operators.db"


def refinish(run: AgentRun, **metadata: Any) -> None:
    """Finish ``run`` again with its content and stop reason, adding ``metadata`` and taking in the turns and
    usage counted since it was first finished."""
    assert run.result is not None
    kept = {k: v for k, v in run.result.metadata.items() if k not in ("run_id", "model_calls")}
    run.finish(run.result.content, run.result.stop_reason, **{**kept, **metadata})


class OperativeAgent(OrchestratorAgent):
    """``OperativeAgent(engine, model=..., operator_id="daily-report", db="ops.db", tools=[...])``.

    :param operator_id: whose memory this agent uses (1-64 letters, digits, ``_ . -``).
    :param sessions: a :class:`~jarvis_core.stores.SessionStore` (with ``state``; else ``db`` is opened).
    :param state: a :class:`~jarvis_core.stores.StateStore`.
    :param db: the SQLite file used when no stores are given (default ``operators.db`` in the jarvis home).
    :param history_limit: how many past messages a tick loads at most.
    :param state_max_chars: how much of an answer is kept as the state.

    The tool loop is the orchestrator's: ``mode`` (``auto`` by default: native tool calls when the model has them,
    else one JSON-schema-constrained action per turn, else the ReAct text protocol), ``structured_answer`` and
    ``max_string_length`` work as there.
    """

    agent_id = "operative"
    accepts_stores = True  # a host with its own database (the server) passes operator_id, sessions and state
    default_temperature = 0.3
    default_max_turns = 20
    default_max_tokens = 2048
    default_system_prompt = ("You are an operative agent. You are run again and again for the same operator, and you "
                             "keep what matters between runs in your state. Use your tools when they help.")

    def __init__(
        self,
        engine: Any,
        *,
        operator_id: Optional[str] = None,
        sessions: Optional[SessionStore] = None,
        state: Optional[StateStore] = None,
        db: Union[str, Path, None] = None,
        history_limit: int = 20,
        state_max_chars: int = 4000,
        tools: Sequence[Any] = (),
        **kwargs: Any,
    ) -> None:
        #: Set when no operator id was given and :data:`DEFAULT_OPERATOR` is used; announced on every run.
        self.default_operator = operator_id is None
        if operator_id is None:
            operator_id = DEFAULT_OPERATOR
        for name, value, least in (("history_limit", history_limit, 0), ("state_max_chars", state_max_chars, 1)):
            if isinstance(value, bool) or not isinstance(value, int) or value < least:
                raise ConfigError(f"{name} must be a whole number of at least {least}, got {value!r}",
                                  key=f"agents.{self.agent_id}.{name}")
        clash = sorted({str(getattr(getattr(t, "spec", None), "name", "")) for t in tools} & set(MEMORY_TOOL_NAMES))
        if clash:
            raise ConfigError(f"the {self.agent_id} agent gives its model its own {', '.join(clash)} (over the "
                              "operator's state); do not add tools of the same name")
        if (sessions is None) != (state is None):
            raise ConfigError(f"the {self.agent_id} agent needs both stores (sessions= and state=), or neither "
                              "(db= or the default file)")
        self._owned: Optional[SQLiteStore] = None
        if sessions is None or state is None:
            self._owned = SQLiteStore(db if db is not None else default_db_path())
            sessions, state = self._owned.sessions, self._owned.state
        self.sessions: SessionStore = sessions
        self.state: StateStore = state
        self.memory = OperatorMemory(state, operator_id)
        self.operator_id = self.memory.operator_id
        self.history_limit = history_limit
        self.state_max_chars = state_max_chars
        try:
            super().__init__(engine, tools=(*tools, *self.memory.tools()), **kwargs)
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        """Close the SQLite file this agent opened itself (stores passed in are the caller's to close)."""
        if self._owned is not None:
            self._owned.close()
            self._owned = None

    # -- a tick -------------------------------------------------------------------------------------
    async def loop(self, run: AgentRun) -> AsyncIterator[AgentEvent]:
        if self.default_operator:
            yield Notice(run.run_id, "operator",
                         f"no operator id given: remembering as operator {DEFAULT_OPERATOR!r} (operator_id=..., "
                         f"[agents.{self.agent_id}] operator_id, or 'jarvis operators run ID' for another)")
        saved, history = await asyncio.to_thread(self._load)
        run.state["saved_state"] = saved
        SECTIONS.set(run, [self.state_section(saved)])
        async for event in self.prepare(run):
            yield event
        self._assemble(run, history)
        async for event in self.work(run):
            yield event
        async for event in self.after_work(run):
            yield event
        await self._save(run)

    def _load(self) -> Tuple[Any, List[Message]]:
        saved = self.state.get(self.memory.state_key)
        history = self.sessions.tail(self.memory.session_id, self.history_limit) if self.history_limit else []
        return saved, whole_groups(history)

    def state_section(self, saved: Any) -> str:
        """The system-message section that shows the state."""
        shown = "(empty: nothing saved yet)" if saved in (None, "") else item_text(saved)
        return f"## Your state\n{shown}\n{STATE_HELP}"

    def _assemble(self, run: AgentRun, history: Sequence[Message]) -> None:
        first = run.messages[0] if run.messages else None
        base = first.text if first is not None and first.role is Role.SYSTEM else None
        rest = run.messages[1:] if base is not None else run.messages
        system = "\n\n".join(part for part in (base, *SECTIONS.get(run)) if part)
        run.messages = [Message.system(system), *history, *rest]
        run.state["tick_start"] = len(run.messages) - 1  # the instruction: the tick's first message

    async def _save(self, run: AgentRun) -> None:
        assert run.result is not None
        tick = run.messages[run.state["tick_start"]:]
        if self._model_wrote_state(run):
            how, value = "model", None
        elif run.result.content.strip():
            how, value = "auto", run.result.content[:self.state_max_chars]
        else:
            how, value = "kept", None

        def write() -> None:
            self.sessions.append(self.memory.session_id, tick)
            if value is not None:
                self.state.put(self.memory.state_key, value)

        await asyncio.to_thread(write)
        refinish(run, operator_id=self.operator_id, state_write=how)

    def _model_wrote_state(self, run: AgentRun) -> bool:
        ok = {r.tool_call_id for r in run.tool_results if r.ok and r.name == "memory_store"}
        for call in run.state.get("requested", ()):
            if call.name != "memory_store" or call.id not in ok:
                continue
            try:
                key = json.loads(call.arguments or "{}").get("key")
            except (ValueError, AttributeError):
                continue
            if isinstance(key, str) and key.strip() and self.memory.key(key) == self.memory.state_key:
                return True
        return False

    # -- steps a subclass changes -------------------------------------------------------------------
    async def prepare(self, run: AgentRun) -> AsyncIterator[AgentEvent]:
        """Before the first request: add system-message sections to the run's :data:`SECTIONS`. Default: none."""
        return
        yield  # pragma: no cover - makes this an async generator

    async def work(self, run: AgentRun) -> AsyncIterator[AgentEvent]:
        """The tick's work on the assembled transcript. Default: the orchestrator's tool loop."""
        async for event in OrchestratorAgent.loop(self, run):
            if isinstance(event, ToolCallsRequested):  # what the model asked for, whatever the protocol
                run.state.setdefault("requested", []).extend(event.calls)
            yield event

    async def after_work(self, run: AgentRun) -> AsyncIterator[AgentEvent]:
        """After the loop, before the tick is saved. Default: nothing."""
        return
        yield  # pragma: no cover

    async def side_call(self, run: AgentRun, messages: Sequence[Message]) -> AsyncIterator[AgentEvent]:
        """A model call that is not part of the conversation (a plan, a summary, a selection): no tools, not
        recorded, its text not streamed as answer text; its usage is the run's. The reply is in
        ``run.completion``."""
        async for event in self.call_model(run, messages=messages, record=False):
            if isinstance(event, TurnFinished):
                yield event
