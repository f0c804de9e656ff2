"""The code a CodeAct or RLM agent finds in a reply, run as a tool call in the run's persistent REPL.

Each run gets its own :class:`~jarvis_agents.sandbox.repl.PythonRepl` (started on the first cell, killed
when the run ends, whatever way it ends) and its own :class:`CellTool` around it. A cell goes through the
run's :class:`~jarvis_core.tools.ToolExecutor` like any call: it has ``TOOL_CALL_START``/``END`` events, a
:class:`~jarvis_core.types.ToolResult` in the run's results, the loop guard and the output cap. The tool is
never offered to the model as a native tool: the agent makes its calls from the fenced code it reads.
"""

from __future__ import annotations

import json
from typing import Any, AsyncIterator, Optional

from jarvis_agents.agents.tool_loop import LoopAgent
from jarvis_agents.run_keys import RunKey
from jarvis_agents.sandbox.jail import check_isolation, check_seccomp
from jarvis_agents.sandbox.python import PythonSandbox
from jarvis_agents.sandbox.repl import CellResult, PythonRepl
from jarvis_agents.tools.code import CodeRunFailed
from jarvis_core.agents import AgentEvent, AgentRun
from jarvis_core.errors import ConfigError
from jarvis_core.tools import ToolExecutor, ToolPolicy
from jarvis_core.types import ToolCall, ToolSpec, new_call_id

__all__ = ["CELL", "CELL_TOOL", "REPL", "CellTool", "ReplAgent", "attach_repl", "cell_call", "check_cell_name",
           "run_sandbox"]

#: The name of the cell tool in events and results.
CELL_TOOL = "python"


def check_cell_name(tools: Any, agent: str) -> None:
    """Refuse a user tool that would take the cell tool's name."""
    if any(getattr(getattr(t, "spec", None), "name", None) == CELL_TOOL for t in tools):
        raise ConfigError(f"the {agent} agent runs code as the tool {CELL_TOOL!r}; rename the tool of that name")


def run_sandbox(sandbox: Optional[PythonSandbox], isolation: str, key: str, seccomp: bool = True) -> PythonSandbox:
    """The sandbox of a code-running agent: the one given, else a new one with ``isolation`` (``"jail"``,
    the default, refuses to run code where the jail cannot be had; ``"rlimits"`` accepts the limits only)
    and ``seccomp`` (false runs the jail without its seccomp filter)."""
    check_isolation(isolation, f"{key}.isolation")
    check_seccomp(seccomp, f"{key}.seccomp")
    return sandbox if sandbox is not None else PythonSandbox(isolation=isolation, seccomp=seccomp)


def cell_call(code: str) -> ToolCall:
    """The call that runs ``code`` as one cell."""
    return ToolCall(new_call_id(), CELL_TOOL, json.dumps({"code": code}, ensure_ascii=False))


class CellTool:
    """``python(code)`` in one run's REPL. A cell that raised, timed out or ended the REPL is a failed
    result (:class:`~jarvis_agents.tools.code.CodeRunFailed`) whose text is the output and the reason.
    ``last`` is the latest :class:`CellResult` (the RLM agent reads ``FINAL`` from it)."""

    def __init__(self, repl: PythonRepl, max_output_chars: int) -> None:
        self.repl = repl
        self.last: Optional[CellResult] = None
        self.spec = ToolSpec(CELL_TOOL, "Run Python code in the run's persistent, sandboxed REPL.", {
            "type": "object",
            "properties": {"code": {"type": "string", "maxLength": 200_000}},
            "required": ["code"],
            "additionalProperties": False,
        })
        # The REPL enforces the cell's own time limit (not counting the model calls it makes), so the
        # executor sets none; inline: it is async and runs on the run's loop.
        self.policy = ToolPolicy(timeout=None, max_output_chars=max_output_chars + 4500, isolation="inline",
                                 side_effects="write")

    async def arun(self, code: str) -> str:
        """Run ``code`` as one cell and return what a model reads."""
        result = await self.repl.execute(code)
        self.last = result
        if not result.ok:
            raise CodeRunFailed(result.to_text())
        return result.to_text()


#: The run's REPL, closed by the agent when the run ends.
REPL: RunKey[PythonRepl] = RunKey("repl")
#: The run's cell tool, around :data:`REPL`.
CELL: RunKey[CellTool] = RunKey("cell")


def attach_repl(agent: Any, run: AgentRun, repl: PythonRepl, max_output_chars: int) -> CellTool:
    """Give ``run`` its REPL (:data:`REPL`, closed by the agent when the run ends), its cell tool
    (:data:`CELL`) and an executor holding the agent's tools and the cell tool."""
    cell = CellTool(repl, max_output_chars)
    REPL.set(run, repl)
    CELL.set(run, cell)
    run.executor = ToolExecutor([*agent.tools, cell], approver=agent.approver, bus=agent.bus, run_id=run.run_id)
    return cell


class ReplAgent(LoopAgent):
    """The base of agents whose runs have a persistent REPL: each run gets the REPL :meth:`make_repl`
    returns (through :func:`attach_repl`), the context window is settled first (``self.window``, a
    :class:`~jarvis_agents.agents.context_window.ContextWindow`), and the REPL is closed however the run
    ends. Subclasses set ``max_output_chars`` and ``window`` and may override :meth:`body` (default: the
    tool loop)."""

    max_output_chars: int
    window: Any

    def make_repl(self, run: AgentRun) -> PythonRepl:
        """The REPL of a new run (not started yet)."""
        raise NotImplementedError

    def new_run(self, input: str, context: Any = None) -> AgentRun:
        run = super().new_run(input, context)
        attach_repl(self, run, self.make_repl(run), self.max_output_chars)
        return run

    async def loop(self, run: AgentRun) -> AsyncIterator[AgentEvent]:
        try:
            async for notice in self.window.for_run(run):
                yield notice
            async for event in self.body(run):
                yield event
        finally:
            # The REPL's process tree is killed at once; its reaping is awaited off the loop.
            await REPL.get(run).aclose()

    async def body(self, run: AgentRun) -> AsyncIterator[AgentEvent]:
        """The run's work once the window is known."""
        async for event in super().loop(run):
            yield event
