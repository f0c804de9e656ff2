"""What jarvis-mcp registers, through the real ``jarvis`` command run as a subprocess: up front only what is
known without starting a server (the config's ``tools`` names, listings cached with the same config), and
the tools of every other server once ``jarvis tools`` wants them all, by starting those servers (the real
SDK server of ``data/mcp_server.py``), all at once, each failure told once. ``jarvis plugins`` and
``jarvis --help`` start nothing."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
from typing import Optional

from jarvis_mcp.catalog import fingerprint

SERVER = pathlib.Path(__file__).parent / "data" / "mcp_server.py"
DEMO = f"[mcp.servers.demo]\ncommand = {json.dumps(sys.executable)}\nargs = [{json.dumps(str(SERVER))}]\n"


def _jarvis(home, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("JARVIS_")}
    env["JARVIS_HOME"] = str(home)
    proc = subprocess.run([sys.executable, "-m", "jarvis_core.cli.main", *args], env=env, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


def _tools(home, config: str, cache: Optional[dict] = None) -> list:
    (home / "config.toml").write_text(config, encoding="utf-8")
    for server, doc in (cache or {}).items():
        (home / "mcp").mkdir(exist_ok=True)
        (home / "mcp" / f"{server}.tools.json").write_text(json.dumps(doc), encoding="utf-8")
    proc = _jarvis(home, "tools", "--json")
    return [t for t in json.loads(proc.stdout) if t["distribution"] == "jarvis-mcp"]


def test_the_tools_list_registers_names_when_the_server_does_not_start(tmp_path):
    tools = _tools(tmp_path, '[mcp.servers.a]\ncommand = "never-started"\ntools = ["add", "note"]\n'
                             '[mcp.servers.b]\ncommand = "never-started-either"\ntools = ["add"]\n')
    assert [(t["key"], t["server"], t["side_effects"], t["confirm"], t["open_world"]) for t in tools] == [
        ("add", "a", None, None, None), ("note", "a", None, None, None)]  # not listed: no policy; b's "add" is not taken


def test_a_listing_cached_with_the_same_config_gives_every_tool_its_policy(tmp_path):
    config = {"command": "srv", "args": ["--stdio"]}
    listing = {"config": fingerprint(config), "tools": [
        {"name": "read", "description": "Read a file.", "input_schema": {},
         "annotations": {"readOnlyHint": True, "openWorldHint": False}},
        {"name": "rm", "description": "Remove a file.", "input_schema": {}, "annotations": {"destructiveHint": True}}]}
    tools = _tools(tmp_path, '[mcp.servers.fs]\ncommand = "srv"\nargs = ["--stdio"]\nprefix = "fs_"\n', {"fs": listing})
    assert [(t["key"], t["side_effects"], t["confirm"], t["open_world"], t["description"]) for t in tools] == [
        ("fs_read", "read", False, False, "MCP server 'fs': Read a file."),
        ("fs_rm", "write", True, True, "MCP server 'fs': Remove a file.")]
    # another command line, or the same one with another env: the listing is not used (and "srv" does not start)
    assert _tools(tmp_path, '[mcp.servers.fs]\ncommand = "other"\n', {"fs": listing}) == []
    assert _tools(tmp_path, '[mcp.servers.fs]\ncommand = "srv"\nargs = ["--stdio"]\nenv = { ROOT = "/b" }\n',
                  {"fs": listing}) == []


def test_jarvis_tools_starts_the_servers_not_listed_yet_and_tells_each_failure_once(tmp_path):
    stuck = (f"[mcp.servers.stuck]\ncommand = {json.dumps(sys.executable)}\n"
             f"args = [{json.dumps(str(SERVER))}, \"stdio\", \"--hang-at-start\"]\nstartup_timeout = 3\n")
    (tmp_path / "config.toml").write_text(DEMO + '[mcp.servers.gone]\ncommand = "/nonexistent/mcp-server"\n' + stuck,
                                          encoding="utf-8")
    proc = _jarvis(tmp_path, "tools", "--json")
    tools = {t["key"]: t for t in json.loads(proc.stdout) if t["distribution"] == "jarvis-mcp"}
    assert {"add", "note", "shout"} <= set(tools) and {t["server"] for t in tools.values()} == {"demo"}
    assert (tools["add"]["side_effects"], tools["add"]["confirm"], tools["add"]["open_world"]) == ("read", False, False)
    assert (tools["note"]["side_effects"], tools["note"]["confirm"]) == ("write", True)
    lines = proc.stderr.splitlines()
    assert len(lines) == 3, proc.stderr
    assert lines[0].startswith("jarvis: starting MCP servers ") and "'stuck'" in lines[0]  # it takes a while
    assert lines[1].startswith("jarvis: warning: MCP server 'gone' left out of the tools: McpStartError: MCP server "
                               "'gone' could not be started: FileNotFoundError"), lines[1]
    assert lines[2].startswith("jarvis: warning: MCP server 'stuck' left out of the tools: McpStartError: MCP server "
                               "'stuck' did not start and list its tools within 3 s"), lines[2]
    # the listing is kept: the next listing starts nothing for demo (whose stderr log is made when it starts)
    assert (tmp_path / "mcp" / "demo.tools.json").exists()
    (tmp_path / "mcp" / "demo.log").unlink()
    (tmp_path / "config.toml").write_text(DEMO, encoding="utf-8")
    again = _jarvis(tmp_path, "tools", "--json")
    assert {t["key"] for t in json.loads(again.stdout) if t["distribution"] == "jarvis-mcp"} == set(tools)
    assert again.stderr == "" and not (tmp_path / "mcp" / "demo.log").exists()
    # a changed env is another server: it is listed again
    (tmp_path / "config.toml").write_text(DEMO + 'env = { GREETING = "hi" }\n', encoding="utf-8")
    _jarvis(tmp_path, "tools", "--json")
    assert (tmp_path / "mcp" / "demo.log").exists()


def test_jarvis_tools_lists_a_streamable_http_server_and_tells_an_unreachable_one(tmp_path, http_server):
    import socket

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}/mcp"
    (tmp_path / "config.toml").write_text(
        f'[mcp.servers.remote]\nurl = "{http_server}"\nprefix = "r_"\nheaders = {{ X-Api-Key = "live-key-123456" }}\n'
        f'[mcp.servers.down]\nurl = "{dead}"\ntoken = "down-token-123456"\nheaders = {{ Cookie = "sid=down-cookie-1" }}\n'
        "startup_timeout = 5\n", encoding="utf-8")
    proc = _jarvis(tmp_path, "tools", "--json")
    tools = {t["key"]: t for t in json.loads(proc.stdout) if t["distribution"] == "jarvis-mcp"}
    assert {"r_add", "r_headers"} <= set(tools) and tools["r_add"]["server"] == "remote"
    warned = [line for line in proc.stderr.splitlines() if "warning" in line]
    assert len(warned) == 1 and warned[0].startswith("jarvis: warning: MCP server 'down' left out of the tools: "
                                                     "McpStartError: MCP server 'down' could not be started"), proc.stderr
    for secret in ("live-key-123456", "down-token-123456", "down-cookie-1"):
        assert secret not in proc.stderr + proc.stdout


def test_jarvis_plugins_and_help_start_no_server(tmp_path):
    (tmp_path / "config.toml").write_text(DEMO, encoding="utf-8")
    plugins = _jarvis(tmp_path, "plugins", "--json")
    assert "jarvis-mcp" in plugins.stdout
    _jarvis(tmp_path, "--help")
    _jarvis(tmp_path, "plugins")
    assert not (tmp_path / "mcp").exists()  # no server started, nothing listed
    _jarvis(tmp_path, "tools")
    assert (tmp_path / "mcp" / "demo.tools.json").exists()
