"""What the RLM agent's REPL asks of its parent: ``llm_query``, ``llm_batch`` and ``tool_call``.

- ``llm_query(prompt)``: one call of the sub-model (``sub_model``, else the agent's model) with
  ``sub_temperature`` and ``sub_max_tokens`` and the agent's engine options. Its usage is added to the
  run's, and it counts as a model call of the run. With a bus, it publishes ``INFERENCE_START``/``END``
  (through :class:`~jarvis_core.instrumented.InstrumentedEngine`, unless the engine already reports).
- ``llm_batch(prompts)``: the same for each prompt, concurrently, at most ``max_concurrent_sub_calls`` at
  a time; the answers come back in prompt order. When any prompt failed, the cell gets one error naming
  them, after all have ended (so every usage is counted).
- ``tool_call(name, **arguments)``: one call of the agent's tools through its executor (validation,
  approval, timeout, events); the result is added to the run's tool results. A failed call is an error
  in the cell.

**Caps.** Sub-model calls are counted per cell and per run (``max_sub_calls_per_cell``,
``max_sub_calls_per_run``), and so are their tokens (``max_sub_tokens_per_cell``,
``max_sub_tokens_per_run``: prompt and completion, as the engine reports them, else about four characters
a token). A call past a count cap, or once a token cap is spent, is refused with
:class:`SubCallLimitError`, which the cell reads as ``RuntimeError: llm_query failed: SubCallLimitError:
…``; a batch that would pass a count cap is refused whole, before any of it runs. Their time counts
against the cell's deadline (:class:`~jarvis_agents.sandbox.repl.PythonRepl`).
"""

from __future__ import annotations

import asyncio
import json
from typing import TYPE_CHECKING, Any, Dict, List

from jarvis_agents.model_call import complete_text
from jarvis_agents.run_keys import RunKey
from jarvis_core.agents import AgentRun
from jarvis_core.agents.run import add_usage
from jarvis_core.errors import JarvisError
from jarvis_core.types import Message, ToolCall, new_call_id

if TYPE_CHECKING:
    from jarvis_core.tools import ToolExecutor

__all__ = ["SUB_CALLS", "SubCallLimitError", "SubCalls", "reporting_engine"]

#: Sub-model calls the run made (its result's ``metadata["sub_calls"]``).
SUB_CALLS: RunKey[int] = RunKey("sub_calls")
#: Sub-model calls and tokens of the current cell, and tokens of the run.
_CELL_CALLS: RunKey[int] = RunKey("cell_sub_calls")
_CELL_TOKENS: RunKey[int] = RunKey("cell_sub_tokens")
_RUN_TOKENS: RunKey[int] = RunKey("sub_tokens")


class SubCallLimitError(JarvisError):
    """A cell asked for more sub-model calls, or tokens, than the rlm agent's caps allow."""


def reporting_engine(engine: Any, bus: Any) -> Any:
    """``engine`` publishing inference events on ``bus`` (as it is when there is no bus, or it already does)."""
    from jarvis_core.instrumented import InstrumentedEngine

    if bus is None or isinstance(engine, InstrumentedEngine):
        return engine
    return InstrumentedEngine(engine, bus)


class SubCalls:
    """The REPL call handler of one RLM run (``await calls(fn, args)``)."""

    def __init__(self, agent: Any, run: AgentRun) -> None:
        self.agent = agent
        self.run = run
        self.engine = reporting_engine(agent.engine, agent.bus)
        self.limit = asyncio.Semaphore(agent.max_concurrent_sub_calls)
        self.tools: ToolExecutor = agent.executor.with_run(run.run_id)
        for key in (SUB_CALLS, _RUN_TOKENS):
            key.set(run, key.get(run, 0))
        self.new_cell()

    def new_cell(self) -> None:
        """Start the per-cell counts afresh (the agent calls this before each cell)."""
        _CELL_CALLS.set(self.run, 0)
        _CELL_TOKENS.set(self.run, 0)

    def _reserve(self, count: int) -> None:
        """Count ``count`` calls against the caps, or refuse them all with :class:`SubCallLimitError`."""
        run, agent = self.run, self.agent
        hint = "answer with what you have (FINAL) or make fewer, larger calls"
        for used, cap, scope in ((_CELL_CALLS.get(run), agent.max_sub_calls_per_cell, "cell"),
                                 (SUB_CALLS.get(run), agent.max_sub_calls_per_run, "run")):
            if used + count > cap:
                raise SubCallLimitError(f"at most {cap} sub-model calls per {scope}: {used} made, {count} more asked; "
                                        f"{hint}")
        for used, cap, scope in ((_CELL_TOKENS.get(run), agent.max_sub_tokens_per_cell, "cell"),
                                 (_RUN_TOKENS.get(run), agent.max_sub_tokens_per_run, "run")):
            if used >= cap:
                raise SubCallLimitError(f"the sub-model token budget of this {scope} is spent ({used} of {cap}); {hint}")
        for key in (_CELL_CALLS, SUB_CALLS):
            key.set(run, key.get(run) + count)

    async def __call__(self, fn: str, args: Dict[str, Any]) -> Any:
        if fn == "llm_query":
            return await self.query(str(args.get("prompt", "")))
        if fn == "llm_batch":
            return await self.batch([str(p) for p in args.get("prompts") or ()])
        if fn == "tool_call":
            return await self.tool(str(args.get("name", "")), args.get("arguments") or {})
        raise ValueError(f"unknown REPL call {fn!r}")

    async def query(self, prompt: str) -> str:
        """One sub-model call (counted against the caps); its usage goes into the run."""
        self._reserve(1)
        return await self._query(prompt)

    async def _query(self, prompt: str) -> str:
        agent = self.agent
        options = {**agent.options, "temperature": agent.sub_temperature, "max_tokens": agent.sub_max_tokens}
        async with self.limit:
            self.run.model_calls += 1
            text, usage = await complete_text(self.engine, [Message.user(prompt)], model=agent.sub_model, **options)
        self.run.usage = add_usage(self.run.usage, usage)
        spent = usage.total_tokens if usage is not None else (len(prompt) + len(text)) // 4
        for key in (_CELL_TOKENS, _RUN_TOKENS):
            key.set(self.run, key.get(self.run) + spent)
        return text

    async def batch(self, prompts: List[str]) -> List[str]:
        """Every prompt, concurrently up to the limit (all counted against the caps first); answers in order."""
        self._reserve(len(prompts))
        answers = await asyncio.gather(*(self._query(p) for p in prompts), return_exceptions=True)
        failed = [(i, a) for i, a in enumerate(answers) if isinstance(a, BaseException)]
        for _, error in failed:
            if not isinstance(error, Exception):  # a cancellation: not the model's business
                raise error
        if failed:
            listed = "; ".join(f"prompt {i}: {type(e).__name__}: {e}" for i, e in failed[:5])
            raise RuntimeError(f"{len(failed)} of {len(prompts)} prompts failed ({listed})")
        return [str(a) for a in answers]

    async def tool(self, name: str, arguments: Any) -> str:
        """One call of the agent's tools; a failure raises with the executor's message."""
        call = ToolCall(new_call_id(), name, json.dumps(arguments, ensure_ascii=False, default=str))
        result = await self.tools.aexecute(call)
        self.run.tool_results.append(result)
        if not result.ok:
            raise RuntimeError(result.content)
        return result.content
