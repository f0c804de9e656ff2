"""SandboxedAgent end to end: the wrapped agent and its tools run in the "container" (the real image entry point
behind a recording fake runtime), every model call comes back to the host's engine, approvals too."""

from __future__ import annotations

import itertools
import json
import os
import sys
from pathlib import Path

import pytest

from jarvis_agents.sandbox import ContainerRunner, ContainerRuntimeError, SandboxLimits
from jarvis_agents.sandbox.agent import SandboxedAgent, SandboxedRunError
from jarvis_agents.sandbox.container import IMAGE_DIR
from jarvis_agents.tools.code import CodeInterpreterTool, ShellExecTool
from jarvis_core.agents.tool_agent import ToolUsingAgent
from jarvis_core.errors import ConfigError, EngineConnectionError
from jarvis_core.events import EventBus, EventType
from jarvis_core.testing import FakeEngine
from jarvis_core.tools import BaseTool
from jarvis_core.types import AgentContext, Completion, Message, Role, ToolCall, ToolSpec

SECRET = "xoxb-sandbox-secret-value"


@pytest.fixture
def runtime_log(tmp_path, monkeypatch) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "docker"
    fake.write_text(f"#!{sys.executable}\n" + (Path(__file__).parent / "data/sandbox/fake_runtime.py").read_text())
    fake.chmod(0o755)
    log = tmp_path / "runtime.log"
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}/usr/bin{os.pathsep}/bin")
    monkeypatch.setenv("FAKE_RUNTIME_LOG", str(log))
    monkeypatch.setenv("FAKE_RUNTIME_ENTRYPOINT", str(IMAGE_DIR / "entrypoint.py"))
    return log


def _runner() -> ContainerRunner:
    return ContainerRunner(limits=SandboxLimits(timeout_s=60))


def _call(name: str, **arguments: object) -> Completion:
    return Completion(tool_calls=[ToolCall("call_1", name, json.dumps(arguments))], finish_reason="tool_calls")


def test_agent_and_tools_run_inside_model_calls_come_back(runtime_log):
    engine = FakeEngine([_call("code_interpreter", code="print(6 * 7)"), Completion(content="It is 42.")])
    bus = EventBus()
    seen = []
    bus.subscribe(lambda event: seen.append(event.type))
    inner = ToolUsingAgent(engine, model="host-model", tools=[CodeInterpreterTool()], max_turns=3,
                           system_prompt="Use tools.", temperature=0.1, bus=bus)
    agent = SandboxedAgent(inner, _runner(), tool_options={"code_interpreter": {"timeout": 10}},
                           secrets={"SLACK_TOKEN": SECRET})
    context = AgentContext(messages=[Message.user("earlier question"), Message.assistant("earlier answer")])
    result = agent.run("What is 6 * 7?", context)

    assert result.content == "It is 42." and result.stop_reason == "final"
    assert result.metadata["sandboxed"] is True and result.metadata["model_calls"] == 2
    (tool_result,) = result.tool_results
    assert tool_result.ok and tool_result.content == "42"
    first, second = engine.calls
    assert first.model == second.model == "host-model" and first.temperature == 0.1
    assert [m.content for m in first.messages] == ["Use tools.", "earlier question", "earlier answer", "What is 6 * 7?"]
    assert [t.name for t in first.tools] == ["code_interpreter"]
    assert second.messages[-1].role is Role.TOOL and second.messages[-1].content == "42"
    assert seen.count(EventType.AGENT_TURN_START) == 1 and seen.count(EventType.AGENT_TURN_END) == 1

    (argv,) = [json.loads(line) for line in runtime_log.read_text().splitlines()]
    assert ("--network", "none") in itertools.pairwise(argv) and "--read-only" in argv
    assert not any(SECRET in arg for arg in argv)


def test_the_job_carries_tools_context_and_settings_but_no_engine():
    inner = ToolUsingAgent(FakeEngine(), model="m", tools=[CodeInterpreterTool()], max_turns=4, max_tokens=99,
                           parallel_tools=False)
    agent = SandboxedAgent(inner, _runner(), agent_options={"parallel_tools": False})
    job = agent.job(agent.new_run("hi", AgentContext(messages=[Message.user("before")])))
    assert job["input"] == "hi" and job["context"]["messages"][0]["content"] == "before"
    spec = job["agent"]
    assert spec["class"] == "jarvis_core.agents.tool_agent:ToolUsingAgent"
    assert spec["settings"] == {"system_prompt": None, "temperature": None, "max_tokens": 99, "max_turns": 4}
    assert spec["options"] == {"parallel_tools": False} and spec["tools"] == {"code_interpreter": {}}
    assert spec["approver"] is False
    assert "engine" not in json.dumps(job)


def test_confirmation_is_asked_on_the_host(runtime_log):
    asked = []

    def approver(call, tool):
        asked.append((call.name, json.loads(call.arguments)["command"]))
        return True

    engine = FakeEngine([_call("shell_exec", command="echo approved"), Completion(content="done")])
    inner = ToolUsingAgent(engine, model="m", tools=[ShellExecTool(enabled=True)], approver=approver)
    result = SandboxedAgent(inner, _runner(), tool_options={"shell_exec": {"enabled": True}}).run("go")
    assert asked == [("shell_exec", "echo approved")]
    assert result.tool_results[0].ok and result.tool_results[0].content == "approved"


def test_no_approver_on_the_host_means_denied(runtime_log):
    engine = FakeEngine([_call("shell_exec", command="echo ran"), Completion(content="ok")])
    inner = ToolUsingAgent(engine, model="m", tools=[ShellExecTool(enabled=True)])
    result = SandboxedAgent(inner, _runner(), tool_options={"shell_exec": {"enabled": True}}).run("go")
    assert not result.tool_results[0].ok and "confirmation" in result.tool_results[0].content


def test_a_host_engine_error_propagates_with_its_type(runtime_log):
    engine = FakeEngine([EngineConnectionError("connection refused", engine_id="fake")])
    inner = ToolUsingAgent(engine, model="m", tools=[CodeInterpreterTool()])
    with pytest.raises(EngineConnectionError, match="connection refused"):
        SandboxedAgent(inner, _runner()).run("go")


def test_a_failure_inside_is_a_typed_error(runtime_log):
    inner = ToolUsingAgent(FakeEngine([Completion(content="x")]), model="m", tools=[CodeInterpreterTool()])
    agent = SandboxedAgent(inner, _runner(), tool_options={"code_interpreter": {"no_such_option": 1}})
    with pytest.raises(SandboxedRunError, match="no_such_option"):
        agent.run("go")


def test_a_container_that_never_answers_is_killed(runtime_log, monkeypatch):
    monkeypatch.setenv("FAKE_RUNTIME_MODE", "hang")
    runner = ContainerRunner(limits=SandboxLimits(timeout_s=0.5), startup_grace_s=0.5)
    inner = ToolUsingAgent(FakeEngine(), model="m", tools=[CodeInterpreterTool()])
    with pytest.raises(ContainerRuntimeError, match="timed out without a result"):
        SandboxedAgent(inner, runner).run("go")
    run_argv, kill_argv = [json.loads(line) for line in runtime_log.read_text().splitlines()]
    assert kill_argv[1:] == ["kill", run_argv[run_argv.index("--name") + 1]]


class _Unregistered(BaseTool):
    spec = ToolSpec("not_registered_anywhere", "x")

    def run(self) -> str:  # type: ignore[override]
        return "x"


def test_tools_must_be_registered_to_be_rebuilt_inside():
    inner = ToolUsingAgent(FakeEngine(), model="m", tools=[_Unregistered()])
    with pytest.raises(ConfigError, match="not_registered_anywhere"):
        SandboxedAgent(inner, _runner())


def test_an_agent_class_defined_in_a_function_is_refused():
    class Local(ToolUsingAgent):
        pass

    with pytest.raises(ConfigError, match="cannot be imported"):
        SandboxedAgent(Local(FakeEngine(), model="m"), _runner())
