"""code_interpreter and shell_exec through the real registry and the core's ToolExecutor."""

from __future__ import annotations

import json
import os

import pytest

from jarvis_agents.tools.code import CodeInterpreterTool, ShellExecTool
from jarvis_core.errors import ConfigError
from jarvis_core.tools import ToolExecutor, create_tool
from jarvis_core.types import ToolCall

SECRET = "sk-live-0123456789abcdef-not-for-models"


def _call(name: str, **arguments: object) -> ToolCall:
    return ToolCall("call_1", name, json.dumps(arguments))


def test_code_interpreter_is_registered_and_runs_in_the_sandbox(monkeypatch):
    monkeypatch.setenv("JARVIS_API_KEY", SECRET)
    tool = create_tool("code_interpreter", config={"timeout": 10})
    code = "import os; print(os.getpid(), sorted(os.environ), os.environ.get('JARVIS_API_KEY'))"
    result = ToolExecutor([tool]).execute(_call("code_interpreter", code=code))
    assert result.ok, result
    pid, rest = result.content.split(" ", 1)
    assert int(pid) != os.getpid()
    assert rest == "['HOME', 'LANG', 'LC_ALL', 'PATH', 'TMPDIR'] None"
    assert SECRET not in result.content


def test_a_failing_run_is_a_failed_result_the_model_can_read():
    result = ToolExecutor([CodeInterpreterTool(timeout=10)]).execute(
        _call("code_interpreter", code="print('before'); 1/0")
    )
    assert not result.ok
    assert "before" in result.content and "ZeroDivisionError" in result.content and "exit code 1" in result.content


def test_an_endless_loop_is_ended_by_the_sandbox_not_the_executor():
    result = ToolExecutor([CodeInterpreterTool(timeout=1)]).execute(_call("code_interpreter", code="while True: pass"))
    assert not result.ok and "timed out after 1 s" in result.content
    assert result.duration_s < 1 + 1.0


def test_extra_arguments_such_as_an_environment_are_refused():
    result = ToolExecutor([CodeInterpreterTool()]).execute(
        _call("code_interpreter", code="print(1)", env={"OPENAI_API_KEY": "x"})
    )
    assert not result.ok and "env" in result.content


def test_bad_options_are_config_errors():
    with pytest.raises(ConfigError, match=r"tools\.code_interpreter"):
        CodeInterpreterTool(timeout=-1)
    with pytest.raises(ConfigError, match="no option"):
        create_tool("code_interpreter", config={"env_passthrough": ["HOME"]})


def test_shell_exec_is_off_unless_the_config_enables_it():
    with pytest.raises(ConfigError, match=r"enabled = true"):
        create_tool("shell_exec")
    with pytest.raises(ConfigError, match=r"enabled = true"):
        create_tool("shell_exec", config={"enabled": "yes"})
    with pytest.raises(ConfigError, match="no option"):
        create_tool("shell_exec", config={"enabled": True, "env_passthrough": ["OPENAI_API_KEY"]})
    assert isinstance(create_tool("shell_exec", config={"enabled": True}), ShellExecTool)


def test_shell_exec_without_an_approver_is_denied():
    tool = ShellExecTool(enabled=True)
    result = ToolExecutor([tool]).execute(_call("shell_exec", command="echo ran > /tmp/jarvis-shell-exec-probe"))
    assert not result.ok and "confirmation" in result.content
    assert not os.path.exists("/tmp/jarvis-shell-exec-probe")


def test_shell_exec_with_approval_runs_sandboxed(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    asked = []

    def approver(call, tool):
        asked.append(call.name)
        return True

    executor = ToolExecutor([ShellExecTool(enabled=True, timeout=10)], approver=approver)
    result = executor.execute(_call("shell_exec", command="echo $$; env | sort"))
    assert result.ok, result
    assert asked == ["shell_exec"]
    pid, *env = result.content.splitlines()
    assert int(pid) != os.getpid()
    assert SECRET not in result.content and not any(line.startswith("OPENAI_API_KEY") for line in env)


def test_shell_exec_refuses_an_environment_argument():
    executor = ToolExecutor([ShellExecTool(enabled=True)], approver=lambda call, tool: True)
    result = executor.execute(_call("shell_exec", command="env", env_passthrough=["OPENAI_API_KEY"]))
    assert not result.ok and "env_passthrough" in result.content
