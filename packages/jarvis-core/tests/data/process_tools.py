"""Tools for the process-isolation tests. They live in an importable module because a ``process`` tool is
pickled into a child interpreter, which imports its class by name."""

from __future__ import annotations

import os
import subprocess
import time

from jarvis_core.tools import BaseTool, ToolPolicy
from jarvis_core.types import ToolSpec

EMPTY = {"type": "object", "properties": {}}


class Spinner(BaseTool):
    """Starts a grandchild (``sleep 300``), writes both pids to ``pid_file``, then burns CPU forever.

    The timeout counts from the child's start, interpreter start-up included, which takes over a second on a
    loaded machine: 10 s leaves the child time to write ``pid_file`` before it is killed."""

    spec = ToolSpec("spinner", "Never returns.", {"type": "object", "properties": {"pid_file": {"type": "string"}},
                                                  "required": ["pid_file"]})
    policy = ToolPolicy(isolation="process", timeout=10.0)

    def run(self, pid_file: str) -> str:
        child = subprocess.Popen(["sleep", "300"])
        with open(pid_file, "w", encoding="utf-8") as f:
            f.write(f"{os.getpid()} {child.pid}")
        while True:
            pass


class WhoAmI(BaseTool):
    """Returns its pid; prints noise to stdout (which must not break the result channel)."""

    spec = ToolSpec("whoami", "The pid.", EMPTY)
    policy = ToolPolicy(isolation="process", timeout=30.0)

    def run(self) -> str:
        print("noise on stdout")
        return str(os.getpid())


class Exits(BaseTool):
    """Calls ``os._exit(3)``: the child dies without a result."""

    spec = ToolSpec("exits", "Dies.", EMPTY)
    policy = ToolPolicy(isolation="process", timeout=30.0)

    def run(self) -> str:
        os._exit(3)


class Raises(BaseTool):
    spec = ToolSpec("raises", "Raises.", EMPTY)
    policy = ToolPolicy(isolation="process", timeout=30.0)

    def run(self) -> str:
        raise ValueError("boom in the child")


class Sleeper(BaseTool):
    spec = ToolSpec("sleeper", "Sleeps.", {"type": "object", "properties": {"s": {"type": "number"}}})
    policy = ToolPolicy(isolation="process", timeout=30.0)

    def run(self, s: float = 0.0) -> str:
        time.sleep(s)
        return "slept"
