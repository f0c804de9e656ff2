"""Running the application under uvicorn: in the foreground (``jarvis serve``) or in a background thread
(tests, benchmarks, embedding the server in another program)."""

from __future__ import annotations

import importlib.util
import threading
import time
from typing import Any, Optional

import uvicorn

from jarvis_core.errors import JarvisError
from jarvis_server.connections import guarded_protocol
from jarvis_server.settings import ServerSettings

__all__ = ["BackgroundServer", "http_stack", "uvicorn_config"]


def http_stack() -> str:
    """Which HTTP parser and event loop uvicorn runs the server on here: ``"httptools + uvloop"`` with the
    ``[fast]`` extra installed (uvicorn picks both up when they import), else ``"h11 + asyncio"``."""
    parser = "httptools" if importlib.util.find_spec("httptools") is not None else "h11"
    loop = "uvloop" if importlib.util.find_spec("uvloop") is not None else "asyncio"
    return f"{parser} + {loop}"


def uvicorn_config(app: Any, host: str, port: int, *, log_level: str = "info",
                   settings: Optional[ServerSettings] = None) -> uvicorn.Config:
    """The uvicorn settings jarvis uses: lifespan on (startup checks must run), no server header, no
    access log (requests would otherwise be logged with their paths, which may carry ids), and no
    ``X-Forwarded-*`` rewriting (the server never uses the client's address, and a header must not be able
    to change it); the HTTP parser and loop are uvicorn's choice (:func:`http_stack`), its protocol class
    wrapped with the connection limits of ``settings`` (``[server]``, :mod:`jarvis_server.connections`).
    No WebSocket protocol (there are no WebSocket routes): an upgrade request stays an HTTP request, so it
    passes the security layer and the connection limits like any other, whatever libraries are installed."""
    settings = settings if settings is not None else ServerSettings()
    return uvicorn.Config(app, host=host, port=port, log_level=log_level, lifespan="on", server_header=False,
                          access_log=False, proxy_headers=False, timeout_graceful_shutdown=5,
                          timeout_keep_alive=max(1, round(settings.keep_alive_timeout)),
                          http=guarded_protocol(settings), ws="none")


class BackgroundServer:
    """A uvicorn server in a daemon thread; ``port=0`` picks a free port. Use as a context manager::

        with BackgroundServer(app) as server:
            client = openai.OpenAI(base_url=server.url + "/v1", api_key="-")
    """

    def __init__(self, app: Any, host: str = "127.0.0.1", port: int = 0, *, log_level: str = "warning",
                 settings: Optional[ServerSettings] = None) -> None:
        self.host = host
        self.server = uvicorn.Server(uvicorn_config(app, host, port, log_level=log_level, settings=settings))
        self._thread: Optional[threading.Thread] = None
        self.port = port

    @property
    def url(self) -> str:
        """``http://host:port`` of the running server."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    def start(self, timeout: float = 30.0) -> BackgroundServer:
        """Start serving; return once the socket is listening (or raise when startup failed)."""
        self._thread = threading.Thread(target=self._run, name="jarvis-server", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self.server.started:
            if not self._thread.is_alive():
                raise JarvisError("the server failed to start (see its log)")
            if time.monotonic() > deadline:
                self.stop()
                raise JarvisError(f"the server did not start within {timeout:g} s")
            time.sleep(0.01)
        sockets = self.server.servers[0].sockets
        self.port = int(sockets[0].getsockname()[1])
        return self

    def _run(self) -> None:
        try:
            self.server.run()
        except SystemExit:  # uvicorn exits this way when startup fails; start() reports it
            pass

    def stop(self, timeout: float = 10.0) -> None:
        """Stop serving and wait for the thread."""
        self.server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None

    def __enter__(self) -> BackgroundServer:
        return self.start() if self._thread is None else self

    def __exit__(self, *exc: object) -> None:
        self.stop()
