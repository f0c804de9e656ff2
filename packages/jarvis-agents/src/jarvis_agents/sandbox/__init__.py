"""Run model-written code away from the host process: ``PythonSandbox`` (a limited child process) and
``ContainerRunner`` (a hardened docker/podman container), ``SandboxedAgent`` (a whole agent in one) and
``PythonRepl`` (a persistent REPL in the process sandbox). Names load on first use; see ``docs/sandbox.md``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from jarvis_core.lazy import lazy_exports

if TYPE_CHECKING:
    from jarvis_agents.sandbox.agent import SandboxedAgent, SandboxedRunError
    from jarvis_agents.sandbox.container import ContainerRunner
    from jarvis_agents.sandbox.errors import (
        ContainerRuntimeError,
        ContainerRuntimeNotFoundError,
        JailUnavailableError,
        MountRefusedError,
        SandboxError,
        SandboxLimitError,
        SandboxUnavailableError,
        SeccompUnavailableError,
    )
    from jarvis_agents.sandbox.limits import SandboxLimits
    from jarvis_agents.sandbox.mounts import Mount, MountPolicy
    from jarvis_agents.sandbox.python import PythonSandbox
    from jarvis_agents.sandbox.repl import CellResult, PythonRepl
    from jarvis_agents.sandbox.result import SandboxResult

__all__ = [
    "CellResult",
    "ContainerRunner",
    "ContainerRuntimeError",
    "ContainerRuntimeNotFoundError",
    "JailUnavailableError",
    "Mount",
    "MountPolicy",
    "MountRefusedError",
    "PythonRepl",
    "PythonSandbox",
    "SandboxError",
    "SandboxLimitError",
    "SandboxLimits",
    "SandboxResult",
    "SandboxUnavailableError",
    "SandboxedAgent",
    "SandboxedRunError",
    "SeccompUnavailableError",
]

_LAZY = {
    "CellResult": "jarvis_agents.sandbox.repl",
    "ContainerRunner": "jarvis_agents.sandbox.container",
    "ContainerRuntimeError": "jarvis_agents.sandbox.errors",
    "ContainerRuntimeNotFoundError": "jarvis_agents.sandbox.errors",
    "JailUnavailableError": "jarvis_agents.sandbox.errors",
    "Mount": "jarvis_agents.sandbox.mounts",
    "MountPolicy": "jarvis_agents.sandbox.mounts",
    "MountRefusedError": "jarvis_agents.sandbox.errors",
    "PythonRepl": "jarvis_agents.sandbox.repl",
    "PythonSandbox": "jarvis_agents.sandbox.python",
    "SandboxError": "jarvis_agents.sandbox.errors",
    "SandboxLimitError": "jarvis_agents.sandbox.errors",
    "SandboxLimits": "jarvis_agents.sandbox.limits",
    "SandboxResult": "jarvis_agents.sandbox.result",
    "SandboxUnavailableError": "jarvis_agents.sandbox.errors",
    "SandboxedAgent": "jarvis_agents.sandbox.agent",
    "SandboxedRunError": "jarvis_agents.sandbox.agent",
    "SeccompUnavailableError": "jarvis_agents.sandbox.errors",
}

__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals())
