"""``code_interpreter`` and ``shell_exec``: model-written code and commands, run only in the sandbox.

Both run in a :class:`~jarvis_agents.sandbox.PythonSandbox`: a separate process with an environment of
its own (no API key or ``JARVIS_*`` variable of the host), a fresh empty directory, CPU, memory, file-size
and process limits, and a kill at the timeout; by default inside the bubblewrap jail (its own PID and
network namespaces, a mount view without the host's home or jarvis's config). Where the jail cannot be had a
call fails with :class:`~jarvis_agents.sandbox.errors.JailUnavailableError`, unless the tool's
``isolation = "rlimits"`` accepts the limits-only sandbox knowingly. Neither takes an environment argument: the
model cannot ask for a host variable. ``shell_exec`` is off unless the config turns it on
(``[tools.shell_exec] enabled = true``) and needs confirmation on every call.

A run that fails (an exception, a non-zero exit, a limit, the timeout) raises :class:`CodeRunFailed`
whose message is the run's output and reason, so the model reads what went wrong in a failed tool result.
"""

from __future__ import annotations

from jarvis_agents.sandbox.errors import SandboxLimitError
from jarvis_agents.sandbox.jail import check_isolation, check_seccomp
from jarvis_agents.sandbox.limits import SandboxLimits
from jarvis_agents.sandbox.python import PythonSandbox
from jarvis_agents.sandbox.result import SandboxResult
from jarvis_core.errors import ConfigError
from jarvis_core.tools import BaseTool, ToolPolicy
from jarvis_core.types import ToolSpec

__all__ = ["CodeInterpreterTool", "CodeRunFailed", "ShellExecTool"]

# The executor's own timeout sits above the sandbox's, so the sandbox's kill (of the whole process group)
# is what ends a long run, and the executor reports its result.
_EXECUTOR_MARGIN_S = 5.0
_MAX_CODE_CHARS = 100_000


class CodeRunFailed(RuntimeError):
    """The code or command ran and failed; the message is its output followed by the reason."""


def _sandbox(tool: str, timeout: float, memory_mb: int, max_processes: int, max_output_chars: int,
             isolation: str, seccomp: bool) -> PythonSandbox:
    check_isolation(isolation, f"tools.{tool}.isolation")
    check_seccomp(seccomp, f"tools.{tool}.seccomp")
    try:
        limits = SandboxLimits(
            timeout_s=timeout,
            memory_bytes=int(memory_mb) * 1024 * 1024,
            max_processes=max_processes,
            max_output_bytes=max_output_chars,
        )
    except SandboxLimitError as exc:
        raise ConfigError(f"[tools.{tool}]: {exc}", key=f"tools.{tool}") from None
    return PythonSandbox(limits, isolation=isolation, seccomp=seccomp)


def _policy(timeout: float, max_output_chars: int, *, confirm: bool) -> ToolPolicy:
    return ToolPolicy(
        confirm=confirm,
        timeout=timeout + _EXECUTOR_MARGIN_S,
        max_output_chars=max(64, max_output_chars * 2 + 200),  # stdout and stderr, plus the status lines
        isolation="thread",
        side_effects="write",
    )


def _answer(result: SandboxResult) -> str:
    if not result.ok:
        raise CodeRunFailed(result.to_text())
    return result.to_text()


class CodeInterpreterTool(BaseTool):
    """``code_interpreter(code)``: run Python in the sandbox and return what it printed.

    Options (``[tools.code_interpreter]``): ``timeout`` seconds (30), ``memory_mb`` (1024),
    ``max_processes`` (32), ``max_output_chars`` kept of stdout and of stderr (16000), ``isolation``
    (``"jail"``, or ``"rlimits"`` to accept the limits-only sandbox knowingly), ``seccomp`` (true: the
    jail's seccomp filter; false runs the jail without it knowingly).
    """

    #: The defaults' policy; an instance's follows its configured timeout and output cap.
    policy = _policy(30.0, 16_000, confirm=False)

    spec = ToolSpec(
        name="code_interpreter",
        description=(
            "Run Python 3 code and return what it prints (stdout, then stderr). Each call starts fresh: "
            "no variables or files survive between calls. Only the standard library is available. "
            "Use print() to show results."
        ),
        parameters={
            "type": "object",
            "properties": {
                "code": {"type": "string", "description": "the Python source to run", "maxLength": _MAX_CODE_CHARS},
            },
            "required": ["code"],
            "additionalProperties": False,
        },
    )

    def __init__(
        self, timeout: float = 30.0, memory_mb: int = 1024, max_processes: int = 32, max_output_chars: int = 16_000,
        isolation: str = "jail", seccomp: bool = True,
    ) -> None:
        self.sandbox = _sandbox("code_interpreter", timeout, memory_mb, max_processes, max_output_chars, isolation,
                                seccomp)
        # per instance: the executor's timeout follows the configured one
        self.policy = _policy(timeout, max_output_chars, confirm=False)  # type: ignore[misc]

    def run(self, code: str) -> str:  # type: ignore[override]  # the schema-checked arguments, by name
        """Run ``code``; a failed run raises :class:`CodeRunFailed` with its output and reason."""
        return _answer(self.sandbox.run(code))


class ShellExecTool(BaseTool):
    """``shell_exec(command)``: run a ``/bin/sh`` command in the same sandbox; opt-in, and confirmed per call.

    Options (``[tools.shell_exec]``): ``enabled`` (must be ``true``), ``timeout`` seconds (30),
    ``memory_mb`` (1024), ``max_processes`` (32), ``max_output_chars`` (16000), ``isolation`` and ``seccomp``
    (as for ``code_interpreter``). There is deliberately no
    option or argument that passes host environment variables through.
    """

    #: The defaults' policy; an instance's follows its configured timeout and output cap.
    policy = _policy(30.0, 16_000, confirm=True)

    spec = ToolSpec(
        name="shell_exec",
        description=(
            "Run a shell command with /bin/sh in an empty scratch directory and return its output. "
            "Each call starts fresh. Every call must be approved by the user."
        ),
        parameters={
            "type": "object",
            "properties": {
                "command": {"type": "string", "description": "the command line to run", "maxLength": 10_000},
            },
            "required": ["command"],
            "additionalProperties": False,
        },
    )

    def __init__(
        self,
        enabled: bool = False,
        timeout: float = 30.0,
        memory_mb: int = 1024,
        max_processes: int = 32,
        max_output_chars: int = 16_000,
        isolation: str = "jail",
        seccomp: bool = True,
    ) -> None:
        if enabled is not True:
            raise ConfigError(
                "shell_exec is off by default: it runs any command the model writes (sandboxed, and only after "
                "confirmation); to allow it, set `enabled = true` in [tools.shell_exec]",
                key="tools.shell_exec.enabled",
            )
        self.sandbox = _sandbox("shell_exec", timeout, memory_mb, max_processes, max_output_chars, isolation, seccomp)
        # per instance: the executor's timeout follows the configured one
        self.policy = _policy(timeout, max_output_chars, confirm=True)  # type: ignore[misc]

    def run(self, command: str) -> str:  # type: ignore[override]  # the schema-checked arguments, by name
        """Run ``command``; a failed run raises :class:`CodeRunFailed` with its output and reason."""
        return _answer(self.sandbox.run_shell(command))
