"""``jarvis mcp serve``: jarvis tools (a plugin's included: jarvis-agents' calculator and think) driven by the
official MCP SDK's client over stdio, through the one executor."""

from __future__ import annotations

import os
import subprocess
import sys

from mcp import Client, StdioServerParameters


def _params(tmp_path, *args: str) -> StdioServerParameters:
    env = {k: v for k, v in os.environ.items() if not k.startswith("JARVIS_")}
    env["JARVIS_HOME"] = str(tmp_path)
    (tmp_path / "config.toml").write_text(f"[tools.file_write]\nroots = [{str(tmp_path)!r}]\n", encoding="utf-8")
    return StdioServerParameters(command=sys.executable, args=["-m", "jarvis_core.cli.main", "mcp", "serve", *args],
                                 env=env)


async def test_the_sdk_client_lists_and_calls_jarvis_tools(tmp_path):
    async with Client(_params(tmp_path, "--tools", "calculator,think,file_write,web_fetch"),
                      mode="legacy") as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert set(tools) == {"calculator", "think", "file_write", "web_fetch"}
        assert tools["think"].input_schema["required"] == ["thought"]
        assert tools["calculator"].annotations.read_only_hint is True
        assert tools["calculator"].annotations.open_world_hint is False
        assert tools["web_fetch"].annotations.open_world_hint is True
        assert tools["file_write"].annotations.read_only_hint is False
        assert tools["file_write"].annotations.destructive_hint is True
        result = await client.call_tool("calculator", {"expression": "6 * 7"})
        assert (result.is_error, result.content[0].text) == (False, "42")
        result = await client.call_tool("think", {"thought": 3})  # validated by jarvis before the tool runs
        assert result.is_error
        assert result.content[0].text == ("error: invalid arguments for 'think': argument 'thought' must be of type "
                                          "string, got integer")
        result = await client.call_tool("file_write", {"path": "x.txt", "content": "hi"})  # needs confirmation
        assert result.is_error and "needs confirmation" in result.content[0].text


def test_no_tools_named_is_one_error_line(tmp_path):
    params = _params(tmp_path)
    proc = subprocess.run([params.command, *params.args], env=params.env, capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL)
    assert proc.returncode != 0 and proc.stdout == ""
    assert proc.stderr.strip().splitlines()[-1] == ("jarvis: error: no tools to serve: name them with --tools A,B or "
                                                    "in the config ([mcp] serve = [...])")
