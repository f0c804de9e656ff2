"""``jarvis mcp tools`` against the real MCP server of ``data/mcp_server.py``: a table by default, the same
listing as JSON with ``--json`` (written with jarvis_core.commands.write_result, like every command)."""

from __future__ import annotations

import json
import pathlib
import sys

import pytest

from jarvis_core.cli.main import main
from jarvis_mcp.client import shutdown

SERVER = pathlib.Path(__file__).parent / "data" / "mcp_server.py"


@pytest.fixture
def configured(tmp_path, monkeypatch):
    config = tmp_path / "config.toml"
    config.write_text(f"[mcp.servers.demo]\ncommand = {json.dumps(sys.executable)}\nargs = [{json.dumps(str(SERVER))}]\n",
                      encoding="utf-8")
    monkeypatch.setenv("JARVIS_HOME", str(tmp_path))
    monkeypatch.setenv("JARVIS_CONFIG", str(config))
    yield
    shutdown()


def test_mcp_tools_prints_a_table_and_the_same_listing_as_json(configured, capsys):
    assert main(["mcp", "tools"]) == 0
    table = capsys.readouterr().out.splitlines()
    assert table[0].split() == ["SERVER", "TOOL", "SIDE_EFFECTS", "CONFIRM", "OPEN_WORLD", "DESCRIPTION"]
    assert main(["mcp", "tools", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    (server,) = doc["servers"]
    assert server["server"] == "demo" and server["tools"]
    assert sorted(line.split()[1] for line in table[1:]) == sorted(t["key"] for t in server["tools"])


def test_config_show_masks_the_token_and_every_header_value(tmp_path, monkeypatch, capsys):
    config = tmp_path / "config.toml"
    config.write_text('[mcp.servers.remote]\nurl = "http://127.0.0.1:9/mcp"\ntoken = "tok-secret-123"\n'
                      'headers = { Authorization = "Basic dXNlcjpwYXNz", X-Api-Key = "key-secret-456", '
                      'Cookie = "sid=cookie-secret-789", X-Team = "infra" }\n', encoding="utf-8")
    monkeypatch.setenv("JARVIS_HOME", str(tmp_path))
    monkeypatch.setenv("JARVIS_CONFIG", str(config))
    assert main(["config", "show", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)["mcp"]["servers"]["remote"]
    assert shown["token"] == "***"
    assert shown["headers"] == {"Authorization": "***", "X-Api-Key": "***", "Cookie": "***", "X-Team": "***"}
    assert main(["config", "show"]) == 0
    toml = capsys.readouterr().out
    assert '[mcp.servers.remote.headers]\nAuthorization = "***"\nX-Api-Key = "***"\nCookie = "***"\nX-Team = "***"\n' in toml
    for secret in ("tok-secret-123", "dXNlcjpwYXNz", "key-secret-456", "cookie-secret-789", "infra"):
        assert secret not in toml
