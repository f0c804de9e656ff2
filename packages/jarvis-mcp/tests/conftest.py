"""The real MCP server of ``data/mcp_server.py`` over streamable HTTP on loopback, for every test module."""

from __future__ import annotations

import pathlib
import socket
import subprocess
import sys
import time
from typing import Iterator

import httpx
import pytest

SERVER = pathlib.Path(__file__).parent / "data" / "mcp_server.py"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def http_server() -> Iterator[str]:
    port = _free_port()
    proc = subprocess.Popen([sys.executable, str(SERVER), "http", str(port)], stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/mcp"
    deadline = time.monotonic() + 60
    while True:
        try:
            httpx.get(url, timeout=1)
            break
        except httpx.HTTPError:
            assert proc.poll() is None and time.monotonic() < deadline, "the MCP HTTP server did not start"
            time.sleep(0.2)
    yield url
    proc.kill()
    proc.wait()
