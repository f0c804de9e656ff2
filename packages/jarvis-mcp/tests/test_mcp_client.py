"""MCP servers' tools as jarvis tools, against a real MCP server written with the official SDK
(``data/mcp_server.py``), over stdio and streamable HTTP on loopback: listing, policy from annotations, the
one executor's validation, approval and output cap, and the typed errors of a server that crashes, hangs or
never starts, after which the agent's executor keeps working."""

from __future__ import annotations

import json
import logging
import os
import pathlib
import sys
import time
from typing import Iterator

import pytest

from jarvis_core.tools import ToolExecutor
from jarvis_core.types import ToolCall
from jarvis_mcp.client import listing_of, shutdown
from jarvis_mcp.config import McpServerConfig
from jarvis_mcp.tool import build

SERVER = pathlib.Path(__file__).parent / "data" / "mcp_server.py"


def stdio(**options) -> McpServerConfig:
    return McpServerConfig(command=sys.executable, args=[str(SERVER)], **options)


@pytest.fixture(autouse=True)
def home(tmp_path, monkeypatch) -> Iterator[pathlib.Path]:
    monkeypatch.setenv("JARVIS_HOME", str(tmp_path))
    yield tmp_path
    shutdown()


def executor(name: str, config: McpServerConfig, *keys: str, approver=None) -> ToolExecutor:
    tools = [build(k, name, k, config, None) for k in keys]
    return ToolExecutor(tools, approver=approver)


def call(ex: ToolExecutor, tool: str, **arguments) -> tuple:
    result = ex.execute(ToolCall("c", tool, json.dumps(arguments)))
    return result.ok, result.content


def test_tools_are_listed_with_their_annotations_and_cached(home):
    tools = {t["name"]: t for t in listing_of("local", stdio())}
    assert {"add", "note", "shout", "big", "crash", "hang", "failing", "env"} <= set(tools)
    assert tools["add"]["annotations"] == {"readOnlyHint": True, "openWorldHint": False}
    assert tools["note"]["annotations"] == {"readOnlyHint": False, "destructiveHint": True}
    assert tools["add"]["input_schema"]["required"] == ["a", "b"]
    cached = json.loads((home / "mcp" / "local.tools.json").read_text())
    assert cached["source"].endswith("mcp_server.py") and [t["name"] for t in cached["tools"]] == list(tools)


def test_calls_go_through_the_executor_with_policy_from_annotations(home):
    approvals = []
    ex = executor("local", stdio(env={"GREETING": "hello"}), "add", "note", "env",
                  approver=lambda call, tool: approvals.append(call.name) or False)
    assert call(ex, "add", a=2, b=3) == (True, "5")
    assert call(ex, "env", name="GREETING") == (True, "hello")  # the config's env reaches the server
    ok, text = call(ex, "add", a="two", b=3)  # the server's schema is enforced before anything is sent
    assert not ok and text == "error: invalid arguments for 'add': argument 'a' must be of type integer, got string"
    ok, text = call(ex, "note", text="x")  # not read-only: needs approval; this approver says no
    assert not ok and text == "error: denied: 'note' was not approved" and approvals == ["note"]
    assert ex.get("add").policy.side_effects == "read" and not ex.get("add").policy.confirm
    assert ex.get("note").policy.confirm and ex.get("note").policy.side_effects == "write"


def test_open_world_hint_is_the_policy_open_world(home):
    ex = executor("local", stdio(), "add", "shout", "note")
    assert ex.get("add").policy.open_world is False  # openWorldHint: false
    assert ex.get("shout").policy.open_world is True  # openWorldHint: true
    assert ex.get("note").policy.open_world is True  # not said: MCP's default is an open world


def test_confirm_false_in_the_config_lifts_approval(home):
    ex = executor("local", stdio(confirm=False), "shout")
    assert call(ex, "shout", text="hi") == (True, "HI")


def test_a_tool_error_is_a_typed_failure(home):
    ex = executor("local", stdio(), "failing", "add")
    ok, text = call(ex, "failing")
    assert not ok and text == "error: McpToolError: 'failing' failed on MCP server 'local': Error executing tool failing"
    assert call(ex, "add", a=1, b=1) == (True, "2")


def test_an_oversized_result_is_capped(home):
    ex = executor("local", stdio(max_output_chars=1000), "big")
    result = ex.execute(ToolCall("c", "big", json.dumps({"n": 2_000_000})))
    assert result.ok and result.truncated and len(result.content) < 1200


def test_a_crashing_server_is_a_typed_error_and_is_started_again(home):
    ex = executor("local", stdio(), "crash", "add")
    ok, text = call(ex, "crash")
    assert not ok and text.startswith("error: McpServerCrashedError: MCP server 'local' closed the connection during "
                                      "'crash'"), text
    assert call(ex, "add", a=20, b=22) == (True, "42")  # the next call starts the server again


def test_a_hanging_call_times_out_typed_and_the_server_keeps_answering(home):
    ex = executor("local", stdio(timeout=2.0), "hang", "add")
    started = time.monotonic()
    ok, text = call(ex, "hang")
    assert not ok and text == "error: McpServerTimeoutError: MCP server 'local' did not answer 'hang' within 2 s"
    assert time.monotonic() - started < 15
    assert call(ex, "add", a=1, b=2) == (True, "3")


async def test_async_callers_share_the_connection(home):
    ex = executor("local", stdio(), "add")
    results = await ex.aexecute_many([ToolCall(str(i), "add", json.dumps({"a": i, "b": 1})) for i in range(5)])
    assert [r.content for r in results] == ["1", "2", "3", "4", "5"]


def test_a_server_that_never_answers_the_handshake(home):
    from jarvis_mcp.errors import McpStartError

    config = McpServerConfig(command=sys.executable, args=[str(SERVER), "stdio", "--hang-at-start"], startup_timeout=2.0)
    with pytest.raises(McpStartError, match=r"^MCP server 'stuck' did not start within 2 s"):
        listing_of("stuck", config)


def test_a_command_that_does_not_exist(home):
    from jarvis_mcp.errors import McpStartError

    with pytest.raises(McpStartError, match=r"^MCP server 'gone' could not be started: FileNotFoundError"):
        listing_of("gone", McpServerConfig(command="/nonexistent/mcp-server"))


def test_a_streamable_http_server(home, http_server):
    config = McpServerConfig(url=http_server, token="sk-not-in-errors", headers={"X-Team": "infra"}, timeout=3.0)
    ex = executor("remote", config, "add", "hang")
    assert call(ex, "add", a=2, b=2) == (True, "4")
    ok, text = call(ex, "hang")
    assert not ok and "McpServerTimeoutError" in text and "sk-not-in-errors" not in text
    assert "sk-not-in-errors" not in repr(config) and "sk-not-in-errors" not in repr(ex.get("add"))


CREDENTIALS = {"Authorization": "Bearer hdr-auth-secret-1", "X-Api-Key": "hdr-key-secret-2",
               "Cookie": "session=hdr-cookie-secret-3", "X-Team": "infra-team-name"}


def test_header_values_are_kept_out_of_results_errors_and_logs(home, http_server, caplog):
    caplog.set_level(logging.DEBUG)  # the SDK logs every message it receives at DEBUG
    config = McpServerConfig(url=http_server, headers=CREDENTIALS, timeout=10.0)
    ex = executor("remote", config, "headers", "reject")
    ok, quoted = call(ex, "headers")  # a server that quotes the headers it got back
    assert ok and "x-api-key: ***" in quoted and "authorization: ***" in quoted and "x-team: ***" in quoted, quoted
    ok, error = call(ex, "reject")  # an error quoting the credentials
    assert not ok and error == "error: McpToolError: 'reject' failed on MCP server 'remote': Error executing tool " \
                               "reject: invalid credentials: *** *** ***"
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert "SSE message" in logged  # the SDK did log the replies
    for value in CREDENTIALS.values():
        assert value not in quoted + error + logged + repr(config) + repr(ex.get("headers"))


def test_a_config_needs_exactly_one_transport():
    with pytest.raises(ValueError, match="exactly one of command"):
        McpServerConfig()
    with pytest.raises(ValueError, match="exactly one of command"):
        McpServerConfig(command="x", url="http://127.0.0.1/mcp")


def test_the_environment_is_not_leaked_into_errors(home):
    ex = executor("local", stdio(env={"API_TOKEN": "tok-secret"}), "failing")
    assert "tok-secret" not in call(ex, "failing")[1]
    assert os.environ.get("API_TOKEN") is None  # the server's env is its own


def _servers_running() -> list:
    import psutil

    return [p for p in psutil.Process().children(recursive=True)
            if p.is_running() and p.status() != psutil.STATUS_ZOMBIE and str(SERVER) in " ".join(p.cmdline())]


def test_a_server_starts_on_first_use_is_shared_and_stops_at_shutdown(home):
    assert _servers_running() == []
    config = stdio()
    ex = executor("local", config, "add")  # building the tool lists the server's tools: it starts once
    assert len(_servers_running()) == 1
    assert call(ex, "add", a=1, b=1) == (True, "2")
    assert call(executor("local", config, "add"), "add", a=2, b=2) == (True, "4")  # a second agent, same server
    assert len(_servers_running()) == 1
    shutdown()  # what atexit runs
    deadline = time.monotonic() + 10
    while _servers_running() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _servers_running() == []
