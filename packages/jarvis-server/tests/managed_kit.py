"""Shared pieces of the managed-agents tests: an in-process plugin registering real agents (the core's
``ToolUsingAgent`` and ``BaseAgent``, and jarvis-agents' ``operative`` and ``monitor_operative`` by their
import paths, loaded only when a test uses them) and small real tools, and an SSE reader."""

from __future__ import annotations

import json
import threading
import time
from typing import Any, Iterable, List, Tuple

from jarvis_core import hookimpl
from jarvis_core.agents.base import BaseAgent
from jarvis_core.agents.tool_agent import ToolUsingAgent
from jarvis_core.tools.base import BaseTool
from jarvis_core.tools.policy import ToolPolicy
from jarvis_core.types import ToolSpec

OBJ = {"type": "object"}


class Add(BaseTool):
    spec = ToolSpec("add", "Add two integers.", {"type": "object", "properties": {"a": {"type": "integer"},
                    "b": {"type": "integer"}}, "required": ["a", "b"]})

    def run(self, a: int, b: int) -> str:
        return str(a + b)


class Sleepy(BaseTool):
    """Sleeps ``seconds`` in its worker thread; ``done`` is set when it returns."""

    spec = ToolSpec("sleepy", "Wait a while.", {"type": "object", "properties": {"seconds": {"type": "number"}}})
    policy = ToolPolicy(timeout=30)
    started = threading.Event()
    done = threading.Event()

    def run(self, seconds: float = 2.0) -> str:
        Sleepy.started.set()
        time.sleep(seconds)
        Sleepy.done.set()
        return "rested"


class InlineSleepy(Sleepy):
    """The same, but its policy asks to run inline (in the caller's thread)."""

    spec = ToolSpec("inline_sleepy", "Wait a while, inline.", {"type": "object", "properties": {"seconds": {"type": "number"}}})
    policy = ToolPolicy(timeout=None, isolation="inline")


class Danger(BaseTool):
    spec = ToolSpec("danger", "Delete everything.", {"type": "object", "properties": {}})
    policy = ToolPolicy(confirm=True, side_effects="write")

    def run(self) -> str:
        return "deleted"


class TestAgentsPlugin:
    @hookimpl
    def jarvis_register_agents(self, register: Any) -> None:
        register("tool-user", ToolUsingAgent, description="the core tool loop")
        register("plain", BaseAgent, description="one model call")
        register("operative", "jarvis_agents.agents.operative:OperativeAgent", description="remembers per operator")
        register("monitor_operative", "jarvis_agents.agents.monitor:MonitorOperativeAgent",
                 description="an operative with strategy axes")

    @hookimpl
    def jarvis_register_tools(self, register: Any) -> None:
        for tool in (Add, Sleepy, InlineSleepy, Danger):
            register(tool.spec.name, tool)


def wait_run(server: Any, agent_id: str, run_id: str, timeout: float = 30.0) -> Any:
    """The run once it is no longer ``running`` (polled through the API; fails after ``timeout`` seconds)."""
    import httpx

    deadline = time.monotonic() + timeout
    while True:
        run = httpx.get(f"{server.url}/v1/managed-agents/{agent_id}/runs/{run_id}").json()
        if run["status"] != "running":
            return run
        assert time.monotonic() < deadline, run
        time.sleep(0.05)


def sse_events(lines: Iterable[str]) -> List[Tuple[str, Any]]:
    """``(event, data)`` pairs of an SSE body (comments skipped; ``data`` JSON-decoded except ``[DONE]``)."""
    events: List[Tuple[str, Any]] = []
    name, data = "message", []
    for line in lines:
        if line == "":
            if data:
                text = "\n".join(data)
                events.append((name, text if text == "[DONE]" else json.loads(text)))
            name, data = "message", []
        elif line.startswith(":"):
            continue
        elif line.startswith("event:"):
            name = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].strip())
    return events
