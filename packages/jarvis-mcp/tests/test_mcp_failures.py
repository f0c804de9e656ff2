"""A server that failed to start is remembered with its config: within its ``retry_after`` the next commands
do not start it again (one warning says so), after it they do, a changed config retries at once and
``jarvis mcp tools`` always retries, forgetting the failure once the server lists its tools. A tool name
still unknown after discovery gets the close matches. All through the real ``jarvis`` command and the real
SDK server of ``data/mcp_server.py``, which counts its starts in a file."""

from __future__ import annotations

import json
import os
import pathlib
import re
import subprocess
import sys
import time

SERVER = pathlib.Path(__file__).parent / "data" / "mcp_server.py"
SECRET = "env-secret-value-4711"


def _jarvis(home, *args: str, ok: bool = True) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("JARVIS_")}
    env["JARVIS_HOME"] = str(home)
    proc = subprocess.run([sys.executable, "-m", "jarvis_core.cli.main", *args], env=env, capture_output=True,
                          text=True, timeout=120)
    assert (proc.returncode == 0) == ok, proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


def _flaky(home, extra: str = "") -> str:
    """A server that counts its starts in ``starts`` and fails while the file ``broken`` exists."""
    args = ["stdio", "--count-starts", str(home / "starts"), "--fail-while", str(home / "broken")]
    config = (f"[mcp.servers.flaky]\ncommand = {json.dumps(sys.executable)}\n"
              f"args = {json.dumps([str(SERVER), *args])}\nenv = {{ PASSPHRASE = \"{SECRET}\" }}\n{extra}")
    (home / "config.toml").write_text(config, encoding="utf-8")
    return config


def _starts(home) -> int:
    path = home / "starts"
    return len(path.read_text(encoding="utf-8").splitlines()) if path.exists() else 0


def _mcp_tools(proc: subprocess.CompletedProcess) -> set:
    return {t["key"] for t in json.loads(proc.stdout) if t["distribution"] == "jarvis-mcp"}


def test_a_failed_server_is_not_started_again_within_its_window_and_a_config_change_retries_at_once(tmp_path):
    (tmp_path / "broken").touch()
    _flaky(tmp_path)
    first = _jarvis(tmp_path, "tools", "--json")
    assert _starts(tmp_path) == 1 and _mcp_tools(first) == set()
    assert "MCP server 'flaky' left out of the tools: McpStartError" in first.stderr
    record = (tmp_path / "mcp" / "flaky.failed.json").read_text(encoding="utf-8")
    assert json.loads(record)["error"] == "McpStartError" and SECRET not in record

    second = _jarvis(tmp_path, "tools", "--json")
    assert _starts(tmp_path) == 1  # not started again
    lines = second.stderr.splitlines()
    assert len(lines) == 1, second.stderr
    assert re.fullmatch(r"jarvis: warning: MCP server 'flaky' failed \d+ s ago \(McpStartError: MCP server 'flaky' "
                        r".+\); not retried until \d\d:\d\d, or run jarvis mcp tools flaky", lines[0]), lines[0]
    assert SECRET not in second.stderr + second.stdout

    # fixing the config (here: another env) is another server: started at once, listed, the failure forgotten
    (tmp_path / "broken").unlink()
    (tmp_path / "config.toml").write_text(_flaky(tmp_path).replace(SECRET, "another-value"), encoding="utf-8")
    third = _jarvis(tmp_path, "tools", "--json")
    assert _starts(tmp_path) == 2 and {"add", "note"} <= _mcp_tools(third), third.stderr
    assert "warning" not in third.stderr and not (tmp_path / "mcp" / "flaky.failed.json").exists()


def test_a_failed_server_is_tried_again_after_its_retry_after_and_a_missing_command_is_remembered(tmp_path):
    (tmp_path / "broken").touch()
    _flaky(tmp_path, "retry_after = 1\n")
    _jarvis(tmp_path, "tools", "--json")
    time.sleep(1.2)
    _jarvis(tmp_path, "tools", "--json")
    assert _starts(tmp_path) == 2  # the window is over: started again

    # a command that does not exist: remembered too (an asked-for tool of it does not start it again)
    (tmp_path / "config.toml").write_text('[mcp.servers.gone]\ncommand = "/nonexistent/mcp-server"\n', encoding="utf-8")
    _jarvis(tmp_path, "tools")
    assert json.loads((tmp_path / "mcp" / "gone.failed.json").read_text(encoding="utf-8"))["error"] == "McpStartError"
    again = _jarvis(tmp_path, "tools")
    assert again.stderr.startswith("jarvis: warning: MCP server 'gone' failed ") and again.stderr.count("\n") == 1
    assert "(McpStartError: MCP server 'gone' could not be started: FileNotFoundError" in again.stderr, again.stderr


def test_jarvis_mcp_tools_always_retries_and_forgets_the_failure_when_it_lists(tmp_path):
    (tmp_path / "broken").touch()
    _flaky(tmp_path)
    _jarvis(tmp_path, "tools", "--json")
    assert _starts(tmp_path) == 1
    failed = _jarvis(tmp_path, "mcp", "tools", "flaky", "--json", ok=False)  # tried although within the window
    assert _starts(tmp_path) == 2 and "McpStartError" in failed.stdout
    (tmp_path / "broken").unlink()
    listed = _jarvis(tmp_path, "mcp", "tools", "flaky", "--json")
    assert _starts(tmp_path) == 3
    assert {"add", "note"} <= {t["name"] for t in json.loads(listed.stdout)["servers"][0]["tools"]}
    assert not (tmp_path / "mcp" / "flaky.failed.json").exists()
    after = _jarvis(tmp_path, "tools", "--json")
    assert {"add", "note"} <= _mcp_tools(after) and "warning" not in after.stderr and _starts(tmp_path) == 3


def test_a_tool_name_still_unknown_after_discovery_lists_the_close_matches(tmp_path):
    _flaky(tmp_path)  # works: no broken file
    proc = _jarvis(tmp_path, "ask", "--engine", "ollama", "--tools", "ad", "hi", ok=False)
    assert _starts(tmp_path) == 1  # discovery started the unlisted server
    line = proc.stderr.strip().splitlines()[-1]
    assert line.startswith("jarvis: error: unknown tool 'ad'; available: "), proc.stderr
    assert "; not found by discovery either (jarvis_discover_tools of jarvis-mcp ran); did you mean 'add'" in line, line


def test_the_record_masks_env_and_header_values_and_an_endless_window_names_no_time(tmp_path, monkeypatch):
    from jarvis_mcp.config import McpServerConfig
    from jarvis_mcp.errors import McpStartError
    from jarvis_mcp.failures import failure_file, recent_failure, remember_failure, skipped_line

    monkeypatch.setenv("JARVIS_HOME", str(tmp_path))
    config = McpServerConfig(command="srv", env={"PASSPHRASE": SECRET}, retry_after=float("inf"))
    remember_failure("srv", config, McpStartError(f"MCP server 'srv' could not be started: it said {SECRET}\nmore"))
    record = failure_file("srv").read_text(encoding="utf-8")
    assert SECRET not in record and "more" not in record and "it said ***" in record
    failure = recent_failure("srv", config)
    assert failure is not None and failure.error == "McpStartError"
    assert skipped_line("srv", config, failure).endswith("; not retried until its config changes, or run jarvis mcp "
                                                         "tools srv")
    http = McpServerConfig(url="http://127.0.0.1:9/mcp", headers={"X-Team": "team-header-value"})
    remember_failure("web", http, McpStartError("rejected team-header-value"))
    assert "team-header-value" not in failure_file("web").read_text(encoding="utf-8")
    assert recent_failure("srv", McpServerConfig(command="srv")) is None  # another env: another server
