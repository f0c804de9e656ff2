"""The container side of :class:`~jarvis_agents.sandbox.agent.SandboxedAgent`: rebuild the agent and run it.

The image's entry point hands an ``agent`` job here (the image must have jarvis-core and jarvis-agents
installed). The agent is rebuilt from its class (``module:QualName``), settings and options, its tools from their
registry keys and options, and it runs on the job's input and context. It has no network: every model call
and every confirmation goes back to the host as one JSON line on stdout and waits for the host's line on
stdin. Anything else the agent or its tools print goes to stderr, so it cannot corrupt the exchange.

Lines (one JSON object each)::

    → {"type": "model", "messages": [...], "tools": [...], "options": {...}}
    ← {"type": "completion", "completion": {...}}   or   {"type": "failed", "message": "..."}
    → {"type": "approve", "call": {...}}
    ← {"type": "approval", "approved": true|false}
    → {"type": "result", "result": {...AgentResult...}}   or   {"type": "error", "message": "..."}
"""

from __future__ import annotations

import importlib
import json
import os
import sys
from typing import IO, Any, AsyncIterator, Dict, Mapping, Optional, Sequence

from jarvis_core.tools import create_tool
from jarvis_core.types import AgentContext, Completion, StreamChunk, ToolCall, from_dict, to_dict

__all__ = ["Channel", "serve"]


class Channel:
    """One request line out, one reply line in."""

    def __init__(self, out: IO[str], inp: IO[str]) -> None:
        self.out = out
        self.inp = inp

    def send(self, message: Mapping[str, Any]) -> None:
        self.out.write(json.dumps(message) + "\n")
        self.out.flush()

    def ask(self, message: Mapping[str, Any], expect: str) -> Dict[str, Any]:
        self.send(message)
        line = self.inp.readline()
        if not line:
            raise ConnectionError("the host closed the channel")
        reply = json.loads(line)
        if reply.get("type") == "failed":
            raise RuntimeError(str(reply.get("message", "the host's model call failed")))
        if reply.get("type") != expect:
            raise ConnectionError(f"expected a {expect!r} line from the host, got {reply.get('type')!r}")
        return dict(reply)


class ChannelEngine:
    """An engine whose every call is made by the host (this side has no network and no keys)."""

    engine_id = "sandbox-host"

    def __init__(self, channel: Channel) -> None:
        self.channel = channel

    async def stream_full(
        self, messages: Sequence[Any], *, model: str, tools: Optional[Sequence[Any]] = None, **options: Any
    ) -> AsyncIterator[StreamChunk]:
        """Ask the host for the whole completion and yield it as one chunk."""
        reply = self.channel.ask(
            {"type": "model", "messages": [to_dict(m) for m in messages],
             "tools": [to_dict(t) for t in tools or ()], "options": options},
            "completion",
        )
        done = from_dict(Completion, reply["completion"])
        yield StreamChunk(content=done.content, reasoning=done.reasoning, tool_calls=done.tool_calls,
                          finish_reason=done.finish_reason, usage=done.usage, metadata=done.metadata)


def _approver(channel: Channel) -> Any:
    def approve(call: ToolCall, tool: Any) -> bool:
        return bool(channel.ask({"type": "approve", "call": to_dict(call)}, "approval").get("approved"))

    return approve


def _agent_class(target: str) -> Any:
    module, _, qualname = target.partition(":")
    value: Any = importlib.import_module(module)
    for part in qualname.split("."):
        value = getattr(value, part)
    return value


def run_agent(job: Mapping[str, Any], channel: Channel) -> Dict[str, Any]:
    """Build the agent the job describes, run it, and return its result as a dict."""
    spec = job["agent"]
    tools = [create_tool(key, config=dict(options)) for key, options in spec.get("tools", {}).items()]
    agent = _agent_class(spec["class"])(
        ChannelEngine(channel), model=spec["model"], tools=tools,
        approver=_approver(channel) if spec.get("approver") else None, **spec.get("settings", {}), **spec.get("options", {}),
    )
    context = from_dict(AgentContext, job["context"]) if job.get("context") else None
    result = agent.run(job["input"], context)
    data: Dict[str, Any] = to_dict(result)
    return data


def serve(job: Mapping[str, Any]) -> int:
    """Run an ``agent`` job over this process's stdin/stdout; the exit status to use."""
    protocol = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)  # whatever the agent or its tools print lands on stderr, not in the exchange
    sys.stdout = sys.stderr
    channel = Channel(protocol, sys.stdin)
    try:
        channel.send({"type": "result", "result": run_agent(job, channel)})
        return 0
    except Exception as exc:  # the host gets the failure as a line, not a broken stream
        channel.send({"type": "error", "message": f"{type(exc).__name__}: {exc}"})
        return 1
