"""The wrapped runtimes ``claude_code`` and ``openhands`` against real processes.

A stand-in ``claude`` executable (a Python script on a temporary ``PATH``) plays the Claude Code CLI: it
records its argv, environment, stdin and working directory, then prints what a scenario file asks for
(a result object among noise, a cut-off result, a hang, a failure). OpenHands runs in its real worker
process; with no OpenHands SDK installed here (it needs Python 3.12+), the missing-SDK path is the real
one, and a stand-in SDK package on the worker's ``PYTHONPATH`` plays the SDK for a full run.
"""

from __future__ import annotations

import asyncio
import json
import os
import stat
import sys
import time
from pathlib import Path

import pytest

import jarvis_agents.plugin
from jarvis_agents.wrapped.checks import OPENHANDS_PACKAGES
from jarvis_agents.wrapped.claude_code import ClaudeCodeAgent
from jarvis_agents.wrapped.errors import RuntimeMissingError, WrappedRunError, WrappedTimeoutError
from jarvis_agents.wrapped.openhands import OpenHandsAgent
from jarvis_agents.wrapped.output import between_markers, last_json_object
from jarvis_core.agents import create_agent
from jarvis_core.cli.main import main
from jarvis_core.errors import ConfigError
from jarvis_core.events import EventBus, EventType
from jarvis_core.testing import installed_registry
from jarvis_core.types import AgentContext, Message

KEY = "sk-ant-test-0123456789abcdef"
OTHER_SECRET = "sk-openai-should-never-leak-42"
PACKAGE_ROOT = Path(__file__).resolve().parents[1]

FAKE_CLAUDE = r'''#!{python}
import json, os, subprocess, sys, time
here = os.path.dirname(os.path.abspath(__file__))
scenario = json.load(open(os.path.join(here, "scenario.json")))
prompt = sys.stdin.read()
record = {{"argv": sys.argv[1:], "env": dict(os.environ), "stdin": prompt, "cwd": os.getcwd(), "pid": os.getpid()}}
mode = scenario["mode"]
if mode == "hang":
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    record["grandchild"] = child.pid
with open(os.path.join(here, "record.json"), "w") as fh:
    json.dump(record, fh)
result = {{"type": "result", "subtype": "success", "is_error": False, "duration_ms": 1234, "num_turns": 3,
          "result": "The answer is 42.", "session_id": "sess-1", "total_cost_usd": 0.0123,
          "usage": {{"input_tokens": 10, "cache_creation_input_tokens": 5, "cache_read_input_tokens": 100,
                    "output_tokens": 7}}}}
result.update(scenario.get("result", {{}}))
out = sys.stdout
if mode == "ok":
    out.write("npm warn config something deprecated\n{{\"type\": \"system\", \"note\": \"not the result\"}}\n")
    out.write("\x1b[2K" + json.dumps(result) + "\n")
    out.write("trailing noise after the result\n")
elif mode == "pretty":
    out.write("starting\n" + json.dumps(result, indent=2) + "\nbye\n")
elif mode == "partial":
    out.write("noise\n" + json.dumps(result)[:40])
elif mode == "noise":
    out.write("Welcome to Claude Code! Nothing else to say.\n")
elif mode == "exit1":
    sys.stderr.write("Error: authentication failed for key " + os.environ.get("ANTHROPIC_API_KEY", "") + "\n")
    sys.exit(1)
elif mode == "hang":
    out.write("working...\n")
    out.flush()
    time.sleep(600)
'''


def _write_exe(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


@pytest.fixture(autouse=True)
def clean_env(monkeypatch, tmp_path):
    for var in ("JARVIS_CONFIG", "JARVIS_ENGINE", "JARVIS_LOAD_PLUGINS", "JARVIS_DISABLE_PLUGINS", "LLM_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("JARVIS_HOME", str(tmp_path / "home"))


@pytest.fixture
def claude_bin(tmp_path, monkeypatch):
    """A ``PATH`` of one directory holding the stand-in ``claude``; the key and another secret are set."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    _write_exe(bindir / "claude", FAKE_CLAUDE.format(python=sys.executable))
    monkeypatch.setenv("PATH", str(bindir))
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.setenv("OPENAI_API_KEY", OTHER_SECRET)
    monkeypatch.setenv("JARVIS_SECRET_TOKEN", OTHER_SECRET)
    return bindir


def scenario(bindir: Path, mode: str, **result) -> None:
    (bindir / "scenario.json").write_text(json.dumps({"mode": mode, "result": result}), encoding="utf-8")


def recorded(bindir: Path) -> dict:
    return json.loads((bindir / "record.json").read_text(encoding="utf-8"))


def _gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


def wait_gone(pid: int, within: float = 5.0) -> bool:
    end = time.monotonic() + within
    while time.monotonic() < end:
        if _gone(pid):
            return True
        time.sleep(0.05)
    return _gone(pid)


# -- claude_code: a run -----------------------------------------------------------------------------------


def test_claude_code_run_reads_the_result_among_noise(claude_bin, tmp_path):
    scenario(claude_bin, "ok")
    bus = EventBus()
    seen = []
    bus.subscribe(lambda e: seen.append(e))
    agent = ClaudeCodeAgent(None, model="sonnet", workspace=str(tmp_path), bus=bus, allowed_tools=["Read", "Grep"])
    result = agent.run("What is six times seven?")
    assert result.content == "The answer is 42."
    assert result.stop_reason == "final" and result.turns == 3
    assert (result.usage.prompt_tokens, result.usage.completion_tokens) == (115, 7)
    assert result.metadata["session_id"] == "sess-1" and result.metadata["total_cost_usd"] == 0.0123
    assert [e.type for e in seen] == [EventType.AGENT_TURN_START, EventType.AGENT_TURN_END]
    assert seen[1].data["stop_reason"] == "final"
    rec = recorded(claude_bin)
    assert rec["argv"][:7] == ["-p", "--output-format", "json", "--model", "sonnet", "--max-turns", "30"]
    assert rec["argv"][-3:] == ["--allowedTools", "Read", "Grep"]
    assert rec["stdin"] == "What is six times seven?" and rec["cwd"] == str(tmp_path)
    assert rec["pid"] != os.getpid()


def test_claude_code_key_only_in_the_childs_environment(claude_bin):
    scenario(claude_bin, "ok")
    ClaudeCodeAgent(None, model="sonnet").run("hello")
    rec = recorded(claude_bin)
    assert rec["env"]["ANTHROPIC_API_KEY"] == KEY
    assert not any(KEY in arg for arg in rec["argv"]) and KEY not in rec["stdin"]
    assert "OPENAI_API_KEY" not in rec["env"] and not any(k.startswith("JARVIS_") for k in rec["env"])
    assert OTHER_SECRET not in json.dumps(rec)


def test_claude_code_prompt_carries_the_context(claude_bin):
    scenario(claude_bin, "ok")
    context = AgentContext(messages=(Message.system("Answer tersely."), Message.user("My name is Ada."),
                                     Message.assistant("Hello Ada.")))
    ClaudeCodeAgent(None, model="opus", system_prompt="You are careful.").run("What is my name?", context)
    rec = recorded(claude_bin)
    system = rec["argv"][rec["argv"].index("--append-system-prompt") + 1]
    assert "You are careful." in system and "Answer tersely." in system
    assert "User: My name is Ada." in rec["stdin"] and "Assistant: Hello Ada." in rec["stdin"]
    assert rec["stdin"].rstrip().endswith("What is my name?")


def test_claude_code_keeps_the_conversation_through_its_session_id(claude_bin):
    scenario(claude_bin, "ok")
    agent = ClaudeCodeAgent(None, model="sonnet")
    first = agent.run("My name is Ada.")
    assert "--resume" not in recorded(claude_bin)["argv"] and first.metadata["session_id"] == "sess-1"
    scenario(claude_bin, "ok", session_id="sess-2")
    second = agent.run("What is my name?", AgentContext(messages=(Message.user("My name is Ada."),
                                                                  Message.assistant("The answer is 42."))))
    rec = recorded(claude_bin)
    assert rec["argv"][-2:] == ["--resume", "sess-1"]
    assert rec["stdin"] == "What is my name?"  # the session has the history; only the new message is sent
    assert second.metadata["session_id"] == "sess-2" and agent.session_id == "sess-2"
    ClaudeCodeAgent(None, model="sonnet", session_id="known-session").run("go on")
    assert recorded(claude_bin)["argv"][-2:] == ["--resume", "known-session"]
    with pytest.raises(ConfigError, match="session_id"):
        ClaudeCodeAgent(None, model="sonnet", session_id="../../etc")


def test_claude_code_pretty_printed_result(claude_bin):
    scenario(claude_bin, "pretty", result="pretty ok")
    assert ClaudeCodeAgent(None, model="sonnet").run("x").content == "pretty ok"


def test_claude_code_max_turns_is_a_stop_reason(claude_bin):
    scenario(claude_bin, "ok", subtype="error_max_turns", is_error=True, result="partial work", num_turns=2)
    result = ClaudeCodeAgent(None, model="sonnet", max_turns=2).run("x")
    assert result.stop_reason == "max_turns" and result.content == "partial work"
    assert "--max-turns" in recorded(claude_bin)["argv"] and "2" in recorded(claude_bin)["argv"]


@pytest.mark.parametrize("mode,expect", [
    ("partial", "printed no result object"),
    ("noise", "Welcome to Claude Code"),
])
def test_claude_code_output_without_a_result_is_a_typed_error_with_an_excerpt(claude_bin, mode, expect):
    scenario(claude_bin, mode)
    bus = EventBus()
    ends = []
    bus.subscribe(lambda e: ends.append(e.data), EventType.AGENT_TURN_END)
    with pytest.raises(WrappedRunError) as info:
        ClaudeCodeAgent(None, model="sonnet", bus=bus).run("x")
    assert expect in str(info.value) and info.value.excerpt
    assert [e["stop_reason"] for e in ends] == ["error"]


def test_claude_code_reported_error_and_nonzero_exit_never_show_the_key(claude_bin):
    scenario(claude_bin, "ok", is_error=True, result=f"Invalid API key {KEY} · Please run /login")
    with pytest.raises(WrappedRunError) as info:
        ClaudeCodeAgent(None, model="sonnet").run("x")
    assert "Invalid API key" in str(info.value) and KEY not in str(info.value) and KEY not in info.value.excerpt
    scenario(claude_bin, "exit1")
    with pytest.raises(WrappedRunError) as info:
        ClaudeCodeAgent(None, model="sonnet").run("x")
    assert info.value.exit_code == 1 and "status 1" in str(info.value)
    assert "authentication failed" in str(info.value) and KEY not in str(info.value) and KEY not in repr(info.value)


def test_claude_code_timeout_kills_the_process_group(claude_bin):
    scenario(claude_bin, "hang")
    start = time.monotonic()
    with pytest.raises(WrappedTimeoutError) as info:
        ClaudeCodeAgent(None, model="sonnet", timeout_s=1).run("x")
    assert time.monotonic() - start < 1 + 5
    assert info.value.timeout == 1 and "timeout_s" in str(info.value)
    rec = recorded(claude_bin)
    assert wait_gone(rec["pid"]) and wait_gone(rec["grandchild"])


def test_claude_code_cancelled_run_kills_the_process(claude_bin):
    scenario(claude_bin, "hang")

    async def go():
        task = asyncio.ensure_future(ClaudeCodeAgent(None, model="sonnet", timeout_s=60).arun("x"))
        for _ in range(200):
            if (claude_bin / "record.json").exists():
                break
            await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    start = time.monotonic()
    asyncio.run(go())
    assert time.monotonic() - start < 30
    rec = recorded(claude_bin)
    assert wait_gone(rec["pid"]) and wait_gone(rec["grandchild"])


# -- claude_code: what is missing --------------------------------------------------------------------------


def test_claude_code_without_node_names_nodejs(tmp_path, monkeypatch):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    _write_exe(bindir / "claude", "#!/usr/bin/env node\nconsole.log('never runs')\n")
    monkeypatch.setenv("PATH", str(bindir))
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    with pytest.raises(RuntimeMissingError) as info:
        ClaudeCodeAgent(None, model="sonnet").run("x")
    assert info.value.missing == "node" and isinstance(info.value, ConfigError)
    assert "Node.js" in str(info.value) and "nodejs.org" in str(info.value)


def test_claude_code_without_the_cli_or_node_says_how_to_install(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    with pytest.raises(RuntimeMissingError) as info:
        ClaudeCodeAgent(None, model="sonnet").run("x")
    message = str(info.value)
    assert info.value.missing == "claude" and "npm install -g @anthropic-ai/claude-code" in message
    assert "jarvis wrappers setup claude_code" in message and "Node.js" in message


def test_claude_code_without_the_key_names_it(claude_bin, monkeypatch):
    scenario(claude_bin, "ok")
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    with pytest.raises(RuntimeMissingError) as info:
        ClaudeCodeAgent(None, model="sonnet").run("x")
    assert info.value.missing == "ANTHROPIC_API_KEY" and "ANTHROPIC_API_KEY" in str(info.value)
    assert not (claude_bin / "record.json").exists()  # nothing was started


def test_claude_code_rejects_what_it_cannot_honour(tmp_path):
    with pytest.raises(ConfigError, match="temperature"):
        ClaudeCodeAgent(None, model="sonnet", temperature=0.2)
    with pytest.raises(ConfigError, match="tools"):
        ClaudeCodeAgent(None, model="sonnet", tools=[object()])
    with pytest.raises(ConfigError, match="not a directory"):
        ClaudeCodeAgent(None, model="sonnet", workspace=str(tmp_path / "missing"))
    with pytest.raises(ConfigError, match="timeout_s"):
        ClaudeCodeAgent(None, model="sonnet", timeout_s=0)


def test_wrappers_are_registered_and_take_their_config_table(claude_bin):
    scenario(claude_bin, "ok")
    with installed_registry(jarvis_agents.plugin):
        agent = create_agent("claude_code", None, model="haiku",
                             config={"allowed_tools": "Read,Edit", "permission_mode": "acceptEdits"})
        assert isinstance(agent, ClaudeCodeAgent)
        assert agent.run("x").content == "The answer is 42."
        assert isinstance(create_agent("openhands", None, model="m", config={"runtime": "local"}), OpenHandsAgent)
    argv = recorded(claude_bin)["argv"]
    assert argv[argv.index("--allowedTools"):][:3] == ["--allowedTools", "Read", "Edit"]
    assert argv[-2:] == ["--permission-mode", "acceptEdits"]


# -- tolerant parsing -------------------------------------------------------------------------------------


def test_parsers_tolerate_noise_and_say_what_is_missing():
    want = lambda o: o.get("type") == "result"  # noqa: E731
    assert last_json_object('x {"type":"result","n":1} y\n{"type":"result","n":2', want) == {"type": "result", "n": 1}
    assert last_json_object('{"type": "other"}\nplain text', want) is None
    assert between_markers("a S {} E b", "S", "E") == (" {} ", "")
    assert between_markers("S first E noise S second E", "S", "E") == (" second ", "")
    assert between_markers("noise S {cut", "S", "E")[1].endswith("(the output was cut off)")
    assert between_markers("no markers", "S", "E") == (None, "no S marker")


# -- openhands ------------------------------------------------------------------------------------------


FAKE_SDK = {
    "openhands/__init__.py": "",
    "openhands/sdk/__init__.py": r'''
import json, os, sys, time

class LLM:
    def __init__(self, **options):
        self.options = options

class _Event:
    source = "agent"
    def __init__(self, text):
        self.text = text

class _Usage:
    prompt_tokens = 11
    completion_tokens = 3

class _Metrics:
    accumulated_token_usage = _Usage()
    accumulated_cost = 0.01

class _Stats:
    def get_combined_metrics(self):
        return _Metrics()

class _State:
    def __init__(self):
        self.events = []
        self.execution_status = "finished"

class Conversation:
    def __init__(self, agent, workspace, max_iteration_per_run, visualizer):
        self.agent, self.workspace, self.max_iterations = agent, workspace, max_iteration_per_run
        self.state = _State()
        self.conversation_stats = _Stats()

    def send_message(self, text):
        self.prompt = text

    def run(self):
        print("rich console panel noise that must not reach the parent's stdout parser")
        record = {"env": dict(os.environ), "argv": sys.argv, "prompt": self.prompt, "cwd": os.getcwd(),
                  "pid": os.getpid(), "workspace": self.workspace, "max_iterations": self.max_iterations,
                  "llm": {k: v for k, v in self.agent.llm.options.items() if k != "api_key"},
                  "llm_key": self.agent.llm.options.get("api_key")}
        with open(os.path.join(self.workspace, "record.json"), "w") as fh:
            json.dump(record, fh)
        if "HANG" in self.prompt:
            time.sleep(600)
        if "FAIL" in self.prompt:
            raise RuntimeError("model call failed for key " + os.environ.get("LLM_API_KEY", ""))
        self.state.events.append(_Event("done: " + self.prompt.splitlines()[-1]))
''',
    "openhands/sdk/conversation/__init__.py": "",
    "openhands/sdk/conversation/response_utils.py":
        "def get_agent_final_response(events):\n    return events[-1].text if events else ''\n",
    "openhands/tools/__init__.py": "",
    "openhands/tools/preset/__init__.py": "",
    "openhands/tools/preset/default.py": r'''
class _Agent:
    def __init__(self, llm):
        self.llm = llm

def get_default_agent(llm, cli_mode):
    return _Agent(llm)
''',
}


@pytest.fixture
def fake_sdk_python(tmp_path):
    """An interpreter with a stand-in OpenHands SDK importable (this one, with the package on PYTHONPATH)."""
    root = tmp_path / "fake-sdk"
    for rel, text in FAKE_SDK.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return str(_write_exe(tmp_path / "python-with-openhands", f'#!/bin/sh\nPYTHONPATH="{root}" exec "{sys.executable}" "$@"\n'))


def test_openhands_without_the_sdk_names_the_extra(tmp_path, monkeypatch):
    monkeypatch.setenv("LLM_API_KEY", KEY)
    with pytest.raises(RuntimeMissingError) as info:
        OpenHandsAgent(None, model="anthropic/claude-sonnet-4-5", runtime="local", workspace=str(tmp_path)).run("x")
    message = str(info.value)
    assert info.value.missing == "openhands-sdk" and "pip install 'jarvis-agents[openhands]'" in message
    if sys.version_info < (3, 12):
        assert "Python 3.12+" in message and "python=" in message
    assert KEY not in message


def test_openhands_docker_runtime_without_docker_names_docker_and_podman(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("LLM_API_KEY", KEY)
    with pytest.raises(RuntimeMissingError) as info:
        OpenHandsAgent(None, model="m", python=sys.executable).run("x")
    message = str(info.value)
    assert info.value.missing == "docker"
    assert "Docker" in message and "Podman" in message and "runtime='local'" in message
    _write_exe(tmp_path / "podman", "#!/bin/sh\nexit 0\n")
    with pytest.raises(RuntimeMissingError, match="podman-docker"):
        OpenHandsAgent(None, model="m", python=sys.executable).run("x")


def test_openhands_without_a_key_names_the_variable(tmp_path):
    with pytest.raises(RuntimeMissingError) as info:
        OpenHandsAgent(None, model="m", runtime="local", workspace=str(tmp_path)).run("x")
    assert info.value.missing == "LLM_API_KEY" and "base_url" in str(info.value)


def test_openhands_run_through_the_worker(tmp_path, monkeypatch, fake_sdk_python):
    monkeypatch.setenv("LLM_API_KEY", KEY)
    monkeypatch.setenv("OPENAI_API_KEY", OTHER_SECRET)
    agent = OpenHandsAgent(None, model="openai/local", runtime="local", python=fake_sdk_python,
                           base_url="http://127.0.0.1:9/v1", workspace=str(tmp_path), max_turns=7)
    result = agent.run("Write FACTS.txt", AgentContext(messages=(Message.system("Be brief."),)))
    assert result.content == "done: Write FACTS.txt" and result.stop_reason == "final"
    assert (result.usage.prompt_tokens, result.usage.completion_tokens) == (11, 3)
    assert result.metadata["status"] == "finished" and result.metadata["cost"] == 0.01
    rec = json.loads((tmp_path / "record.json").read_text(encoding="utf-8"))
    assert rec["prompt"].startswith("Be brief.") and rec["max_iterations"] == 7 and rec["workspace"] == str(tmp_path)
    assert rec["llm"] == {"model": "openai/local", "base_url": "http://127.0.0.1:9/v1"} and rec["llm_key"] == KEY
    assert rec["env"]["LLM_API_KEY"] == KEY and "OPENAI_API_KEY" not in rec["env"]
    assert not any(KEY in arg for arg in rec["argv"]) and rec["pid"] != os.getpid()


def test_openhands_failure_is_typed_and_masked(tmp_path, monkeypatch, fake_sdk_python):
    monkeypatch.setenv("LLM_API_KEY", KEY)
    with pytest.raises(WrappedRunError) as info:
        OpenHandsAgent(None, model="m", runtime="local", python=fake_sdk_python, workspace=str(tmp_path)).run("FAIL")
    assert "RuntimeError: model call failed" in str(info.value) and KEY not in str(info.value)


def test_openhands_timeout_stops_the_worker(tmp_path, monkeypatch, fake_sdk_python):
    monkeypatch.setenv("LLM_API_KEY", KEY)
    start = time.monotonic()
    with pytest.raises(WrappedTimeoutError):
        OpenHandsAgent(None, model="m", runtime="local", python=fake_sdk_python, workspace=str(tmp_path),
                       timeout_s=2).run("HANG")
    assert time.monotonic() - start < 2 + 10
    assert wait_gone(json.loads((tmp_path / "record.json").read_text(encoding="utf-8"))["pid"])


def test_openhands_rejects_an_unknown_runtime():
    with pytest.raises(ConfigError, match="runtime"):
        OpenHandsAgent(None, model="m", runtime="kubernetes")


# -- jarvis wrappers check / setup ------------------------------------------------------------------------


def jarvis(*argv):
    with installed_registry(jarvis_agents.plugin):
        return main(list(argv))


def test_check_lists_what_is_missing(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    assert jarvis("wrappers", "check", "claude_code", "--json") == 1
    found = {c["need"]: c for c in json.loads(capsys.readouterr().out)}
    assert set(found) == {"node", "claude", "ANTHROPIC_API_KEY"} and not any(c["ok"] for c in found.values())
    assert "npm install -g @anthropic-ai/claude-code" in found["claude"]["how"]
    assert "Node.js" in found["node"]["how"]
    assert jarvis("wrappers", "check", "openhands", "--python", sys.executable) == 1
    table = capsys.readouterr().out
    assert "openhands-sdk" in table and "MISSING" in table and "jarvis-agents[openhands]" in table
    assert "docker" in table


def test_check_passes_when_everything_is_there(claude_bin, fake_sdk_python, monkeypatch, capsys):
    _write_exe(claude_bin / "node", "#!/bin/sh\nexit 0\n")
    monkeypatch.setenv("LLM_API_KEY", KEY)
    assert jarvis("wrappers", "check", "--python", fake_sdk_python, "--runtime", "local") == 0
    assert "MISSING" not in capsys.readouterr().out


def test_setup_runs_npm_and_says_so(tmp_path, monkeypatch, capsys):
    log = tmp_path / "npm-args.json"
    _write_exe(tmp_path / "npm", f"#!{sys.executable}\nimport json, sys\njson.dump(sys.argv[1:], open({str(log)!r}, 'w'))\n")
    monkeypatch.setenv("PATH", str(tmp_path))
    assert jarvis("wrappers", "setup", "claude_code") == 0
    assert json.loads(log.read_text(encoding="utf-8")) == ["install", "-g", "@anthropic-ai/claude-code"]
    assert "npm install -g @anthropic-ai/claude-code" in capsys.readouterr().err


def test_setup_without_npm_names_nodejs(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PATH", str(tmp_path))
    assert jarvis("wrappers", "setup", "claude_code") != 0
    err = capsys.readouterr().err
    assert "npm" in err and "Node.js" in err and "Traceback" not in err


def test_setup_openhands_command(fake_sdk_python, capsys):
    assert jarvis("wrappers", "setup", "openhands", "--python", fake_sdk_python, "--dry-run") == 0
    assert capsys.readouterr().err.strip() == f"$ {fake_sdk_python} -m pip install " + " ".join(OPENHANDS_PACKAGES)
    if sys.version_info < (3, 12):
        assert jarvis("wrappers", "setup", "openhands", "--dry-run") != 0
        assert "Python 3.12+" in capsys.readouterr().err


def test_openhands_extra_matches_the_setup_command():
    tomllib = pytest.importorskip("tomllib")
    project = tomllib.loads((PACKAGE_ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert tuple(project["optional-dependencies"]["openhands"]) == OPENHANDS_PACKAGES


# -- hosts pick no engine for a runtime with a model of its own ----------------------------------------------


def test_jarvis_ask_runs_claude_code_without_any_engine(claude_bin, capsys):
    # Only jarvis-agents is installed here: any attempt to pick an engine would fail ("no engine").
    scenario(claude_bin, "ok")
    assert jarvis("ask", "--agent", "claude_code", "--json", "what is six times seven") == 0
    out = json.loads(capsys.readouterr().out)
    assert (out["content"], out["engine"], out["model"], out["agent"]) == ("The answer is 42.", None, "sonnet",
                                                                          "claude_code")
    argv = recorded(claude_bin)["argv"]
    assert argv[argv.index("--model") + 1] == "sonnet"  # the class default


def test_the_model_comes_from_the_request_then_the_agents_table(claude_bin, tmp_path, monkeypatch, capsys):
    scenario(claude_bin, "ok")
    config = tmp_path / "config.toml"
    config.write_text('[agents.claude_code]\nmodel = "opus"\n', encoding="utf-8")
    monkeypatch.setenv("JARVIS_CONFIG", str(config))
    assert jarvis("ask", "--agent", "claude_code", "hello") == 0
    assert capsys.readouterr().out.strip() == "The answer is 42."
    argv = recorded(claude_bin)["argv"]
    assert argv[argv.index("--model") + 1] == "opus"
    assert jarvis("ask", "--agent", "claude_code", "--model", "haiku", "hello") == 0
    argv = recorded(claude_bin)["argv"]
    assert argv[argv.index("--model") + 1] == "haiku"


def test_openhands_without_a_model_says_where_to_set_one(tmp_path, capsys):
    assert jarvis("ask", "--agent", "openhands", "hello") == 2
    err = capsys.readouterr().err
    assert "agent 'openhands' runs a model of its own and none is set" in err
    assert "--model" in err and "[agents.openhands]" in err


def test_the_sdk_streams_from_claude_code_without_an_engine(claude_bin):
    from jarvis_core.sdk import Jarvis

    scenario(claude_bin, "ok")
    with installed_registry(jarvis_agents.plugin):
        j = Jarvis(agent="claude_code")
        try:
            assert "".join(j.ask_stream_sync("q", model="haiku")) == "The answer is 42."
            assert j.ask_full("q").to_dict()["engine"] is None
            assert j._engine is None  # nothing was picked, probed or started
        finally:
            j.close()
