"""``SandboxedAgent(agent, runner)``: run a wrapped agent, and every tool it calls, inside a container.

What is sent into the container: the agent's class (``module:QualName``, imported there), model id, settings (system prompt,
temperature, max_tokens, max_turns), engine options and agent options, its tools by registry key with
their options, the run's input and context. The container has no network, so the agent cannot reach a
model server there: every model call comes back to this process as a JSON line, is made here with the
wrapped agent's engine (whose keys never enter the container), and the completion goes back. Tools that
need confirmation ask this side's approver the same way. The model id is always this side's: the
container cannot pick another.
"""

from __future__ import annotations

import asyncio
from typing import Any, AsyncIterator, Dict, Mapping, Optional, Sequence

from jarvis_agents.sandbox.container import ContainerRunner
from jarvis_agents.sandbox.errors import ContainerRuntimeError, SandboxError
from jarvis_agents.sandbox.mounts import Mount
from jarvis_agents.sandbox.session import ContainerSession
from jarvis_core.agents import BaseAgent
from jarvis_core.agents.events import AgentEvent
from jarvis_core.agents.run import AgentRun
from jarvis_core.errors import ConfigError, UnknownNameError
from jarvis_core.types import AgentResult, Message, ToolCall, ToolSpec, from_dict, to_dict

__all__ = ["SandboxedAgent", "SandboxedRunError"]


class SandboxedRunError(SandboxError):
    """The wrapped agent failed inside the container; the message is its error."""


class SandboxedAgent(BaseAgent):
    """Runs ``agent`` in a container started by ``runner`` (whose image must have jarvis-agents installed).

    :param tool_options: ``{tool key: options}`` to rebuild each tool with (what ``[tools.<key>]`` holds).
    :param agent_options: the wrapped agent's own keyword options (``mode=...`` for the orchestrator).
    :param mounts: host paths to show in the container (checked by the runner's mount policy).
    :param secrets: environment variables for the tools in the container, sent on stdin.
    :param timeout_s: the whole run's limit (default: the runner's).
    :raises ConfigError: a tool is not a registered tool, or the agent's class cannot be imported by name.
    """

    agent_id = "sandboxed"
    accepts_tools = True

    def __init__(
        self,
        agent: BaseAgent,
        runner: ContainerRunner,
        *,
        tool_options: Optional[Mapping[str, Mapping[str, Any]]] = None,
        agent_options: Optional[Mapping[str, Any]] = None,
        mounts: Sequence[Mount] = (),
        secrets: Optional[Mapping[str, str]] = None,
        timeout_s: Optional[float] = None,
    ) -> None:
        super().__init__(agent.engine, model=agent.model, tools=agent.tools, approver=agent.approver, bus=agent.bus,
                         system_prompt=agent.system_prompt, temperature=agent.temperature,
                         max_tokens=agent.max_tokens, max_turns=agent.max_turns, **agent.options)
        self.agent_class = f"{type(agent).__module__}:{type(agent).__qualname__}"
        if "<locals>" in self.agent_class or type(agent).__module__ == "__main__":
            raise ConfigError(f"{self.agent_class} cannot be imported in the container; define the agent class "
                              "in an installed module")
        self.inner = agent
        self.runner = runner
        self.tool_options = {k: dict(v) for k, v in (tool_options or {}).items()}
        self.agent_options = dict(agent_options or {})
        self.mounts = tuple(mounts)
        self._secrets = dict(secrets or {})
        self.timeout_s = timeout_s
        _check_registered(t.spec.name for t in agent.tools)

    def __repr__(self) -> str:
        return f"<SandboxedAgent {self.inner.agent_id!r} model={self.model!r} runner={self.runner!r}>"

    def job(self, run: AgentRun) -> Dict[str, Any]:
        """What is sent into the container for ``run`` (never a key of this side's engine)."""
        return {
            "kind": "agent",
            "input": run.input,
            "context": to_dict(run.context),
            "agent": {
                "class": self.agent_class,
                "model": self.model,
                "settings": {"system_prompt": self.system_prompt, "temperature": self.temperature,
                             "max_tokens": self.max_tokens, "max_turns": self.max_turns},
                "options": {**self.options, **self.agent_options},
                "tools": {t.spec.name: self.tool_options.get(t.spec.name, {}) for t in self.tools},
                # without an approver here, the agent inside has none either, and denies as it would here
                "approver": self.approver is not None,
            },
        }

    async def loop(self, run: AgentRun) -> AsyncIterator[AgentEvent]:
        """Run the wrapped agent in the container; its result becomes this run's."""
        result = await asyncio.to_thread(self._converse, run)
        run.messages = list(result.messages)
        run.tool_results = list(result.tool_results)
        run.turns = result.turns
        run.usage = result.usage
        run.finish(result.content, result.stop_reason, sandboxed=True)
        return
        yield  # an async generator, as the contract asks

    def _converse(self, run: AgentRun) -> AgentResult:
        host_error: Optional[BaseException] = None
        with self.runner.session(self.job(run), timeout_s=self.timeout_s, mounts=self.mounts,
                                 secrets=self._secrets) as session:
            while True:
                message = session.receive()
                if message is None:
                    why = "timed out" if session.timed_out else "ended"
                    raise ContainerRuntimeError(
                        f"the sandbox container {why} without a result: {session.stderr[-500:]}")
                kind = message.get("type")
                if kind == "model":
                    run.model_calls += 1
                    host_error = self._model_call(session, message) or host_error
                elif kind == "approve":
                    session.send({"type": "approval", "approved": self._approve(message)})
                elif kind == "result":
                    return from_dict(AgentResult, message["result"])
                elif kind == "error":
                    if host_error is not None:
                        raise host_error
                    raise SandboxedRunError(f"the sandboxed agent failed: {message.get('message', '')}")
                else:
                    raise ContainerRuntimeError(f"the sandbox container sent an unknown line type {kind!r}")

    def _model_call(self, session: ContainerSession, message: Mapping[str, Any]) -> Optional[BaseException]:
        try:
            completion = self.engine.generate(
                [from_dict(Message, m) for m in message.get("messages", [])],
                model=self.model,
                tools=[from_dict(ToolSpec, t) for t in message.get("tools", [])] or None,
                **dict(message.get("options") or {}),
            )
        except Exception as exc:
            session.send({"type": "failed", "message": f"{type(exc).__name__}: {exc}"})
            return exc
        session.send({"type": "completion", "completion": to_dict(completion)})
        return None

    def _approve(self, message: Mapping[str, Any]) -> bool:
        if self.approver is None:
            return False  # fails closed, as the executor does
        call = from_dict(ToolCall, message.get("call"))
        tool = next((t for t in self.tools if t.spec.name == call.name), None)
        try:
            answer = self.approver(call, tool)
            if asyncio.iscoroutine(answer):
                answer = asyncio.run(answer)
        except Exception:
            return False
        return bool(answer)


def _check_registered(keys: Any) -> None:
    from jarvis_core.plugins.registry import get_registry

    registry = get_registry()
    for key in keys:
        try:
            registry.get("tool", key)
        except UnknownNameError:
            raise ConfigError(
                f"SandboxedAgent rebuilds tools in the container by registry key; {key!r} is not a registered tool"
            ) from None
