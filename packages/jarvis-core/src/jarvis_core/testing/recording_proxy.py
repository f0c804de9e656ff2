"""A loopback proxy in front of a real server that keeps what passed through it: for tests that check exactly
what an engine sent to a real server (which :class:`~jarvis_core.testing.ReplayServer` can only script).

    with RecordingProxy(llama_url) as proxy:
        engine = LlamaCppEngine(host=proxy.url)
        ...
    (body,) = [r["json"] for r in proxy.seen if r["path"] == "/v1/chat/completions"]
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Dict, List, Optional

import httpx

__all__ = ["RecordingProxy"]


class RecordingProxy:
    """Forwards every GET and POST to ``target`` (whole requests and replies, not streamed) and keeps each
    request in :attr:`seen` as ``{"method", "path", "json"}`` (``json``: the decoded body, ``None`` without
    one). ``timeout``: seconds the target may take to answer."""

    def __init__(self, target: str, *, timeout: float = 300.0) -> None:
        self.target = target.rstrip("/")
        self.timeout = timeout
        #: The requests forwarded so far, in order.
        self.seen: List[Dict[str, Any]] = []
        self._server: Optional[ThreadingHTTPServer] = None
        self._client: Optional[httpx.Client] = None

    def start(self) -> RecordingProxy:
        """Listen on a free loopback port (see :attr:`url`)."""
        client = self._client = httpx.Client(base_url=self.target, timeout=self.timeout)
        seen = self.seen

        class Handler(BaseHTTPRequestHandler):
            def _forward(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                seen.append({"method": self.command, "path": self.path, "json": json.loads(body) if body else None})
                reply = client.request(self.command, self.path, content=body,
                                       headers={"Content-Type": self.headers.get("Content-Type", "application/json")})
                self.send_response(reply.status_code)
                self.send_header("Content-Type", reply.headers.get("content-type", "application/json"))
                self.send_header("Content-Length", str(len(reply.content)))
                self.end_headers()
                self.wfile.write(reply.content)

            do_GET = do_POST = _forward

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._server.serve_forever, name="jarvis-recording-proxy", daemon=True).start()
        return self

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT``, once started."""
        if self._server is None:
            raise RuntimeError("the proxy is not started")
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def stop(self) -> None:
        """Stop listening and close the connection to the target."""
        server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()
        client, self._client = self._client, None
        if client is not None:
            client.close()

    def __enter__(self) -> RecordingProxy:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
