"""``monitor_operative``: an operative whose memory and working method are set by four strategy axes.

Each value changes what the agent does (the extra model calls it makes and the rows it stores), not only
its prompt:

- ``memory_extraction``: what is kept from each tool result: ``scratchpad`` (a row per call), ``structured_json``
  (the parsed JSON), ``causality_graph`` (an extra call, a row per cause → effect relation), ``none``.
- ``observation_compression``: a tool output longer than ``compression_threshold`` characters is ``truncate``\\ d
  (with a marker), ``summarize``\\ d (an extra call whose summary replaces it) or left alone (``none``).
- ``retrieval_strategy``: stored items relevant to the instruction go into the system message: ``keyword``
  (shared words), ``semantic`` (embedding similarity: ``embedder`` when given, else the agent's engine's
  ``embed`` with ``embedding_model``, default the agent's model; an engine without embeddings is a
  :class:`~jarvis_core.errors.ConfigError` when the agent is created, never a fallback), ``hybrid_with_self_eval``
  (keyword, plus semantic when there is an embedder or the engine has embeddings, then an extra call keeps the
  relevant ones), ``none``.
- ``task_decomposition``: ``monolithic`` (no plan), ``phased`` (a plan call first; the numbered phases go into
  the system message), ``hierarchical`` (a plan call, then one sub-loop per phase with ``phase_max_turns``
  turns, then the final answer).

A value outside these is a :class:`~jarvis_core.errors.ConfigError` when the agent is created. Rows live in
the operator's keys (:mod:`.operator_memory`): ``scratchpad:…``, ``structured:…``, ``causality:…``, ``plan``.
The defaults (``scratchpad``, ``truncate``, ``keyword``, ``monolithic``) make no model call besides the loop's.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
from typing import Any, AsyncIterator, Callable, Dict, List, Optional, Sequence, Tuple

import attrs

from jarvis_agents.agents.operative import SECTIONS, OperativeAgent
from jarvis_agents.agents.strategies import compression, extraction, planning, retrieval
from jarvis_core.agents import AgentEvent, AgentRun, Notice
from jarvis_core.errors import ConfigError, EmbeddingsNotSupportedError, EngineError
from jarvis_core.types import Message, Role, ToolResult

__all__ = ["AXES", "DEFAULTS", "MonitorOperativeAgent"]

#: The allowed values of each strategy axis.
AXES: Dict[str, Tuple[str, ...]] = {
    "memory_extraction": ("causality_graph", "scratchpad", "structured_json", "none"),
    "observation_compression": ("summarize", "truncate", "none"),
    "retrieval_strategy": ("keyword", "semantic", "hybrid_with_self_eval", "none"),
    "task_decomposition": ("phased", "monolithic", "hierarchical"),
}
#: The documented default axes: causality graph, summarized observations, self-evaluated hybrid retrieval,
#: a phased plan (each costs extra model calls; choose cheaper axes per agent in ``[agents.monitor_operative]``).
DEFAULTS = {"memory_extraction": "causality_graph", "observation_compression": "summarize",
            "retrieval_strategy": "hybrid_with_self_eval", "task_decomposition": "phased"}

# The turn budget of a hierarchical phase: (agent, turns), read by ``max_turns`` while that phase runs.
_PHASE_BUDGET: contextvars.ContextVar[Optional[Tuple[int, int]]] = contextvars.ContextVar(
    "jarvis_agents_phase_budget", default=None)


def _embedder(value: Any) -> Optional[Callable[[List[str]], Sequence[Sequence[float]]]]:
    if value is None:
        return None
    if isinstance(value, str):
        from jarvis_core.plugins.registry import load_target

        try:
            value = load_target(value)
        except Exception as exc:
            raise ConfigError(f"embedder {value!r} could not be loaded: {type(exc).__name__}: {exc}",
                              key="agents.monitor_operative.embedder") from None
    embed: Callable[[List[str]], Sequence[Sequence[float]]] = getattr(value, "embed", value)
    if not callable(embed):
        raise ConfigError("embedder must be a callable (texts -> vectors), an object with embed(texts), or a "
                          "'module:attribute' naming one", key="agents.monitor_operative.embedder")
    return embed


def _storable(value: Any) -> bool:
    # JSON such as 1e999 parses to inf, which a state store refuses.
    try:
        json.dumps(value, allow_nan=False)
    except ValueError:
        return False
    return True


class MonitorOperativeAgent(OperativeAgent):
    """``MonitorOperativeAgent(engine, model=..., operator_id=..., memory_extraction=..., …)``.

    Besides the four axes: ``embedder`` (for ``semantic``/``hybrid_with_self_eval``: a callable turning a list
    of texts into vectors, or ``"module:attribute"``; default: the engine's ``embed`` when it has one),
    ``embedding_model`` (the model the engine embeds with; default: the agent's model), ``compression_threshold`` (2000), ``summary_input_chars``
    (8000), ``extraction_min_chars`` (50), ``max_relations`` (10), ``recall_top_k`` (5), ``max_phases`` (5),
    ``phase_max_turns`` (4), and the options of :class:`~.operative.OperativeAgent`.
    """

    agent_id = "monitor_operative"
    default_max_turns = 25
    default_max_tokens = 4096
    default_system_prompt = ("You are a monitoring operative agent. You are run again and again for the same "
                             "operator: check what you are asked to watch, use your tools, and keep what matters "
                             "between runs in your state.")

    def __init__(
        self,
        engine: Any,
        *,
        memory_extraction: str = DEFAULTS["memory_extraction"],
        observation_compression: str = DEFAULTS["observation_compression"],
        retrieval_strategy: str = DEFAULTS["retrieval_strategy"],
        task_decomposition: str = DEFAULTS["task_decomposition"],
        embedder: Any = None,
        embedding_model: str = "",
        compression_threshold: int = 2000,
        summary_input_chars: int = 8000,
        extraction_min_chars: int = 50,
        max_relations: int = 10,
        recall_top_k: int = 5,
        max_phases: int = 5,
        phase_max_turns: int = 4,
        **kwargs: Any,
    ) -> None:
        chosen = {"memory_extraction": memory_extraction, "observation_compression": observation_compression,
                  "retrieval_strategy": retrieval_strategy, "task_decomposition": task_decomposition}
        for axis, value in chosen.items():
            if value not in AXES[axis]:
                raise ConfigError(f"{self.agent_id} {axis} must be one of {', '.join(AXES[axis])}; got {value!r}",
                                  key=f"agents.{self.agent_id}.{axis}")
        numbers = {"compression_threshold": compression_threshold, "summary_input_chars": summary_input_chars,
                   "extraction_min_chars": extraction_min_chars, "max_relations": max_relations,
                   "recall_top_k": recall_top_k, "max_phases": max_phases, "phase_max_turns": phase_max_turns}
        for name, number in numbers.items():
            if isinstance(number, bool) or not isinstance(number, int) or number < 1:
                raise ConfigError(f"{name} must be a whole number of at least 1, got {number!r}",
                                  key=f"agents.{self.agent_id}.{name}")
        self.embedder = _embedder(embedder)
        self._engine_embedder = self.embedder is None
        if self.embedder is None and retrieval_strategy in ("semantic", "hybrid_with_self_eval"):
            try:
                self.embedder = retrieval.engine_embedder(engine, embedding_model or kwargs.get("model") or "")
            except EmbeddingsNotSupportedError as exc:
                if retrieval_strategy == "semantic":
                    raise ConfigError(f"{self.agent_id} retrieval_strategy 'semantic' needs embeddings, and {exc}: "
                                      "pass embedder=... (a callable turning texts into vectors, or "
                                      "'module:attribute'), use an engine with embeddings, or choose keyword or "
                                      "hybrid_with_self_eval", key=f"agents.{self.agent_id}.retrieval_strategy") from None
        self.memory_extraction = memory_extraction
        self.observation_compression = observation_compression
        self.retrieval_strategy = retrieval_strategy
        self.task_decomposition = task_decomposition
        self.compression_threshold = compression_threshold
        self.summary_input_chars = summary_input_chars
        self.extraction_min_chars = extraction_min_chars
        self.max_relations = max_relations
        self.recall_top_k = recall_top_k
        self.max_phases = max_phases
        self.phase_max_turns = phase_max_turns
        super().__init__(engine, **kwargs)

    @property
    def max_turns(self) -> int:
        budget = _PHASE_BUDGET.get()
        if budget is not None and budget[0] == id(self):
            return budget[1]
        return self.settings.max_turns

    async def _put(self, name: str, value: Any) -> None:
        await asyncio.to_thread(self.state.put, self.memory.key(name), value)

    def _row_name(self, run: AgentRun, kind: str) -> str:
        run.state["rows"] = n = run.state.get("rows", 0) + 1
        return f"{kind}:{run.run_id}:{n}"

    # -- before the first request: retrieval and planning -------------------------------------------
    async def prepare(self, run: AgentRun) -> AsyncIterator[AgentEvent]:
        async for event in self._recall(run):
            yield event
        async for event in self._plan(run):
            yield event

    async def _recall(self, run: AgentRun) -> AsyncIterator[AgentEvent]:
        strategy = self.retrieval_strategy
        if strategy == "none":
            return
        skip = {self.memory.state_key, self.memory.key("plan")}
        items = [kv for kv in await asyncio.to_thread(self.state.items, self.memory.prefix) if kv[0] not in skip]
        k = self.recall_top_k
        if strategy == "keyword":
            found = retrieval.keyword_rank(run.input, items, k)
        elif strategy == "semantic":
            assert self.embedder is not None
            found = await asyncio.to_thread(retrieval.semantic_rank, run.input, items, k, self.embedder)
        else:
            candidates = retrieval.keyword_rank(run.input, items, 2 * k)
            if self.embedder is not None:
                try:
                    more = await asyncio.to_thread(retrieval.semantic_rank, run.input, items, 2 * k, self.embedder)
                except EngineError as exc:
                    if not self._engine_embedder:
                        raise
                    # The engine has the verb but its model or server serves no embeddings: the hybrid keeps
                    # its keyword half and says so (semantic alone raises).
                    more = []
                    yield Notice(run.run_id, "retrieval", f"semantic recall skipped, keyword only: {exc}")
                candidates += [kv for kv in more if kv[0] not in {c[0] for c in candidates}]
            found = []
            if candidates:
                async for event in self.side_call(run, [Message.system(retrieval.SELF_EVAL_PROMPT),
                                                        Message.user(retrieval.candidates_prompt(run.input, candidates))]):
                    yield event
                assert run.completion is not None
                keep = retrieval.parse_selection(run.completion.content or "", len(candidates))
                if keep is None:
                    yield Notice(run.run_id, "retrieval", "the self-evaluation reply held no JSON array of item "
                                 "numbers; nothing recalled")
                    keep = []
                found = [candidates[i] for i in keep][:k]
        if found:
            lines = [f"- [{self.memory.short(key)}] {retrieval.item_text(value)[:500]}" for key, value in found]
            SECTIONS.get(run).append("## Recalled from memory\n" + "\n".join(lines))
        yield Notice(run.run_id, "retrieval", f"{strategy}: recalled {len(found)} of {len(items)} stored item(s)")

    async def _plan(self, run: AgentRun) -> AsyncIterator[AgentEvent]:
        if self.task_decomposition == "monolithic":
            return
        prompt = planning.PLAN_PROMPT.format(max_phases=self.max_phases)
        async for event in self.side_call(run, [Message.system(prompt), Message.user(f"Task: {run.input}")]):
            yield event
        assert run.completion is not None
        phases = planning.parse_phases(run.completion.content or "", self.max_phases)
        if not phases:
            yield Notice(run.run_id, "plan", "the plan reply had no numbered phases; working without a plan")
            return
        run.state["plan"] = {"run_id": run.run_id, "task": run.input, "mode": self.task_decomposition,
                             "status": "running", "phases": [{"phase": p, "status": "pending"} for p in phases]}
        await self._put("plan", run.state["plan"])
        if self.task_decomposition == "phased":
            SECTIONS.get(run).append(planning.plan_section(phases))
        yield Notice(run.run_id, "plan", f"{len(phases)} phase(s): " + "; ".join(phases))

    # -- the work: hierarchical phases --------------------------------------------------------------
    async def work(self, run: AgentRun) -> AsyncIterator[AgentEvent]:
        plan = run.state.get("plan")
        if self.task_decomposition != "hierarchical" or not plan:
            async for event in super().work(run):
                yield event
            return
        phases = plan["phases"]
        turns = 0
        for n, phase in enumerate(phases, start=1):
            run.messages.append(Message.user(f"Phase {n} of {len(phases)}: {phase['phase']}\nDo only this phase "
                                             f"(the whole task: {run.input}). End with what it found."))
            token = _PHASE_BUDGET.set((id(self), self.phase_max_turns))
            try:
                async for event in super().work(run):
                    yield event
            finally:
                try:
                    _PHASE_BUDGET.reset(token)
                except ValueError:  # closed from another context
                    _PHASE_BUDGET.set(None)
            assert run.result is not None
            turns += run.turns
            phase.update(status=run.result.stop_reason, result=run.result.content[:500])
            if run.result.stop_reason in ("loop_guard", "error"):
                run.turns = turns
                return
            yield Notice(run.run_id, "phase", f"phase {n} of {len(phases)} ended: {run.result.stop_reason}")
        run.messages.append(Message.user(f"All {len(phases)} phases are done. Now give the final answer to the "
                                         f"task: {run.input}"))
        async for event in super().work(run):
            yield event
        run.turns += turns

    # -- after each batch of tool results: compression and extraction -------------------------------
    def observe(self, run: AgentRun, results: Sequence[ToolResult]) -> None:
        super().observe(run, results)
        run.state.setdefault("pending", []).extend(results)

    async def decide(self, run: AgentRun) -> AsyncIterator[AgentEvent]:
        async for event in self._digest(run):
            yield event
        async for event in super().decide(run):
            yield event

    async def final_answer(self, run: AgentRun) -> AsyncIterator[AgentEvent]:
        async for event in self._digest(run):
            yield event
        async for event in super().final_answer(run):
            yield event

    async def after_work(self, run: AgentRun) -> AsyncIterator[AgentEvent]:
        async for event in self._digest(run):  # results the loop stopped after (loop guard, turn limit)
            yield event
        plan = run.state.get("plan")
        if plan:
            assert run.result is not None
            plan["status"] = run.result.stop_reason
            await self._put("plan", plan)

    async def _digest(self, run: AgentRun) -> AsyncIterator[AgentEvent]:
        pending: List[ToolResult] = run.state.pop("pending", [])
        for result in pending:
            async for event in self._compress(run, result):
                yield event
            async for event in self._extract(run, result):
                yield event

    async def _compress(self, run: AgentRun, result: ToolResult) -> AsyncIterator[AgentEvent]:
        text = result.content
        if self.observation_compression == "none" or len(text) <= self.compression_threshold:
            return
        shorter = compression.truncated(text, self.compression_threshold)
        if self.observation_compression == "summarize":
            async for event in self.side_call(run, [Message.system(compression.SUMMARY_PROMPT),
                                                    Message.user(text[:self.summary_input_chars])]):
                yield event
            assert run.completion is not None
            summary = (run.completion.content or "").strip()
            if summary:
                shorter = compression.summarized(summary, len(text))
            else:
                yield Notice(run.run_id, "compression", f"the summary of {result.name}'s output was empty; "
                             "truncated it instead", run.turns)
        # The output is a tool message (native, structured) or part of an "Observation:" message (text modes).
        for i in range(len(run.messages) - 1, -1, -1):
            msg = run.messages[i]
            if msg.role in (Role.TOOL, Role.USER) and isinstance(msg.content, str) and text in msg.content:
                run.messages[i] = attrs.evolve(msg, content=msg.content.replace(text, shorter, 1))
                break
        done = "summarized" if shorter.startswith("[summary") else "truncated"
        yield Notice(run.run_id, "compression", f"{result.name} output of {len(text)} characters {done} to "
                     f"{len(shorter)}", run.turns)

    async def _extract(self, run: AgentRun, result: ToolResult) -> AsyncIterator[AgentEvent]:
        mode, text = self.memory_extraction, result.content
        if mode == "scratchpad":
            await self._put(self._row_name(run, "scratchpad"), {"tool": result.name, "ok": result.ok,
                                                                "output": text[:extraction.SCRATCH_CHARS]})
        elif mode == "structured_json":
            parsed, value = extraction.parse_json_output(text)
            if parsed and _storable(value):
                await self._put(self._row_name(run, "structured"), {"tool": result.name, "data": value})
            else:
                yield Notice(run.run_id, "extraction", f"{result.name}'s output is not JSON; nothing stored", run.turns)
        elif mode == "causality_graph" and len(text) >= self.extraction_min_chars:
            async for event in self.side_call(run, [Message.system(extraction.CAUSALITY_PROMPT), Message.user(
                    f"Output of the tool {result.name}:\n{text[:self.summary_input_chars]}")]):
                yield event
            assert run.completion is not None
            relations = extraction.parse_relations(run.completion.content or "", self.max_relations)
            if relations is None:
                yield Notice(run.run_id, "extraction", "the causality reply was not a JSON array of relations; "
                             "nothing stored", run.turns)
                return
            for relation in relations:
                await self._put(self._row_name(run, "causality"), {**relation, "tool": result.name})
