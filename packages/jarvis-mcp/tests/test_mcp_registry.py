"""What jarvis-mcp registers without starting any server: the configured ``tools`` names, or the cached
listing (with its policy), through the real ``jarvis tools`` command."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Optional


def _tools(home, config: str, cache: Optional[dict] = None) -> list:
    (home / "config.toml").write_text(config, encoding="utf-8")
    for server, doc in (cache or {}).items():
        (home / "mcp").mkdir(exist_ok=True)
        (home / "mcp" / f"{server}.tools.json").write_text(json.dumps(doc), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("JARVIS_")}
    env["JARVIS_HOME"] = str(home)
    proc = subprocess.run([sys.executable, "-m", "jarvis_core.cli.main", "tools", "--json"], env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return [t for t in json.loads(proc.stdout) if t["distribution"] == "jarvis-mcp"]


def test_the_tools_list_registers_names_before_any_listing(tmp_path):
    tools = _tools(tmp_path, '[mcp.servers.a]\ncommand = "never-started"\ntools = ["add", "note"]\n'
                             '[mcp.servers.b]\ncommand = "never-started-either"\ntools = ["add"]\n')
    assert [(t["key"], t["server"], t["side_effects"], t["confirm"], t["open_world"]) for t in tools] == [
        ("add", "a", None, None, None), ("note", "a", None, None, None)]  # not listed yet: no policy; b's "add" is not taken


def test_a_cached_listing_gives_every_tool_its_policy(tmp_path):
    listing = {"source": "srv --stdio", "tools": [
        {"name": "read", "description": "Read a file.", "input_schema": {},
         "annotations": {"readOnlyHint": True, "openWorldHint": False}},
        {"name": "rm", "description": "Remove a file.", "input_schema": {}, "annotations": {"destructiveHint": True}}]}
    tools = _tools(tmp_path, '[mcp.servers.fs]\ncommand = "srv"\nargs = ["--stdio"]\nprefix = "fs_"\n', {"fs": listing})
    assert [(t["key"], t["side_effects"], t["confirm"], t["open_world"], t["description"]) for t in tools] == [
        ("fs_read", "read", False, False, "MCP server 'fs': Read a file."),
        ("fs_rm", "write", True, True, "MCP server 'fs': Remove a file.")]
    stale = _tools(tmp_path, '[mcp.servers.fs]\ncommand = "other"\n', {"fs": listing})  # another command line
    assert stale == []
