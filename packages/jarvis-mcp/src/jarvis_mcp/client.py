"""One connection per configured MCP server, shared by every tool and agent of the process.

A server starts on first use (a call, or a listing), not when jarvis starts. Its session lives on one
background event loop (the ``jarvis-mcp`` thread), because the SDK's transports must be entered and left in
the same task; callers on any loop or thread reach it through :func:`asyncio.run_coroutine_threadsafe`. A
server whose connection closes (the process crashed) is started again on the next call; a hanging one
costs the caller its ``timeout``, nothing more. Every server is stopped when the process exits.

A stdio server's stderr goes to ``$JARVIS_HOME/mcp/<server>.log``, not to the user's terminal.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import logging
import threading
from typing import IO, Any, Callable, Dict, List, Mapping, Optional, Union

from jarvis_core.engine.redaction import protect_logs, scrub_error, scrub_text
from jarvis_mcp.catalog import cache_file, config_table, write_cache
from jarvis_mcp.config import McpServerConfig
from jarvis_mcp.errors import McpError, McpServerCrashedError, McpServerTimeoutError, McpStartError, McpToolError
from jarvis_mcp.failures import forget_failure, remember_failure

__all__ = ["Connection", "connection", "list_servers", "listing_of", "shutdown"]

log = logging.getLogger(__name__)


class _Loop:
    """The background event loop every MCP session runs on."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="jarvis-mcp", daemon=True)
        self.thread.start()

    def submit(self, coro: Any) -> concurrent.futures.Future[Any]:
        return asyncio.run_coroutine_threadsafe(coro, self.loop)


_lock = threading.Lock()
_loop: Optional[_Loop] = None
_connections: Dict[str, Connection] = {}


def _background() -> _Loop:
    global _loop
    with _lock:
        if _loop is None:
            _loop = _Loop()
            atexit.register(shutdown)
        return _loop


def connection(name: str, config: McpServerConfig) -> Connection:
    """The process's connection to server ``name`` (made on first use; a changed config makes a new one)."""
    with _lock:
        conn = _connections.get(name)
        if conn is None or conn.config != config:
            conn = _connections[name] = Connection(name, config)
        return conn


def shutdown(timeout: float = 5.0) -> None:
    """Stop every server this process started (registered with :mod:`atexit`)."""
    with _lock:
        conns, loop = list(_connections.values()), _loop
        _connections.clear()
    if loop is None:
        return
    for conn in conns:
        try:
            loop.submit(conn.aclose()).result(timeout)
        except Exception as exc:  # a server that will not stop must not keep the process from exiting
            log.warning("MCP server %r did not stop cleanly (%s)", conn.name, type(exc).__name__)


def _describe(tool: Any) -> Dict[str, Any]:
    """A listed tool as plain JSON (what the cache keeps): name, description, schema, annotations."""
    annotations = tool.annotations
    hints = {}
    if annotations is not None:
        for key, attr in (("readOnlyHint", "read_only_hint"), ("destructiveHint", "destructive_hint"),
                          ("idempotentHint", "idempotent_hint"), ("openWorldHint", "open_world_hint")):
            value = getattr(annotations, attr, None)
            if value is not None:
                hints[key] = bool(value)
    return {"name": tool.name, "description": tool.description or "", "input_schema": dict(tool.input_schema or {}),
            "annotations": hints}


def _text_of(result: Any) -> str:
    """A ``CallToolResult`` as the text the model reads: its text blocks; other blocks are named."""
    parts: List[str] = []
    for block in result.content or []:
        kind = getattr(block, "type", "")
        if kind == "text":
            parts.append(block.text)
        elif kind in ("image", "audio"):
            parts.append(f"[{kind} {getattr(block, 'mime_type', '')}]")
        elif kind == "resource_link":
            parts.append(f"[resource {getattr(block, 'uri', '')}]")
        else:
            parts.append(f"[{kind or type(block).__name__}]")
    if not parts and result.structured_content is not None:
        import json

        return json.dumps(result.structured_content, ensure_ascii=False, default=str)
    return "\n".join(parts)


class Connection:
    """The session with one MCP server. Its coroutines run on the background loop only."""

    def __init__(self, name: str, config: McpServerConfig) -> None:
        self.name = name
        self.config = config
        self._secrets = config.secret_values()
        protect_logs(self._secrets)
        self._client: Any = None
        self._stop: Optional[asyncio.Event] = None
        self._runner: Optional[asyncio.Task[None]] = None
        self._starting: Optional[asyncio.Future[None]] = None
        self.tools: Optional[List[Dict[str, Any]]] = None
        self._errlog: Optional[IO[str]] = None

    def __repr__(self) -> str:  # never the env, headers or token
        where = self.config.url or self.config.command
        return f"<MCP server {self.name!r} {where!r} {'running' if self._client is not None else 'stopped'}>"

    # -- the public, any-thread API --------------------------------------------------------------------------
    async def acall(self, tool: str, arguments: Dict[str, Any]) -> str:
        """Call ``tool`` from any event loop; the result's text, or a typed :class:`~jarvis_mcp.McpError`. A
        server that quotes the token or a header value back gets it masked, in results and errors alike."""
        try:
            text: str = await asyncio.wrap_future(_background().submit(self._call(tool, arguments)))
        except McpError as exc:
            scrub_error(exc, self._secrets)
            raise
        return scrub_text(text, self._secrets)

    def list_tools(self) -> List[Dict[str, Any]]:
        """The server's tools (starting it if needed), each as ``{name, description, input_schema,
        annotations}``; blocks the calling thread (not for use on an event loop)."""
        timeout = self.config.startup_timeout + self.config.timeout
        try:
            tools: List[Dict[str, Any]] = _background().submit(self._list()).result(timeout + 5)
        except McpError as exc:
            scrub_error(exc, self._secrets)
            raise
        return tools

    # -- on the background loop ---------------------------------------------------------------------------------
    def _transport(self) -> Any:
        if self.config.url:
            import httpx2
            from mcp.client.streamable_http import streamable_http_client

            headers = dict(self.config.headers)
            if self.config.token:
                headers["Authorization"] = f"Bearer {self.config.token}"
            http = httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30.0, read=self.config.timeout + 5))
            return streamable_http_client(self.config.url, http_client=http)
        from mcp.client.stdio import StdioServerParameters, stdio_client

        log_path = cache_file(self.name).with_suffix("").with_suffix(".log")
        log_path.parent.mkdir(parents=True, exist_ok=True)
        errlog = open(log_path, "w", encoding="utf-8")  # closed with the session (see _run)
        self._errlog = errlog
        params = StdioServerParameters(command=self.config.command, args=list(self.config.args),
                                       env=dict(self.config.env) or None, cwd=self.config.cwd or None)
        return stdio_client(params, errlog=errlog)

    async def _run(self, started: asyncio.Future[None]) -> None:
        from mcp import Client

        self._stop = asyncio.Event()
        self._errlog = None
        try:
            # No SDK read timeout: startup and each call are bounded here (startup_timeout, timeout).
            async with Client(self._transport(), mode="legacy") as client:
                self._client = client
                if not started.done():
                    started.set_result(None)
                await self._stop.wait()
        except BaseException as exc:
            if not started.done():
                if isinstance(exc, asyncio.CancelledError):  # given up on (_abort): nobody waits for it
                    started.cancel()
                else:
                    started.set_exception(exc)
            elif not isinstance(exc, asyncio.CancelledError):
                log.info("MCP server %r: connection ended (%s)", self.name, type(exc).__name__)
        finally:
            self._client = None
            if self._errlog is not None:
                self._errlog.close()

    async def _ensure(self) -> Any:
        if self._client is not None and self._runner is not None and not self._runner.done():
            return self._client
        if self._starting is None or self._starting.done():
            self._starting = asyncio.get_running_loop().create_future()
            self._runner = asyncio.get_running_loop().create_task(self._run(self._starting))
        await self._within_startup(asyncio.shield(self._starting), "did not start", "could not be started",
                                   " (no answer to the MCP handshake)")
        return self._client

    async def _within_startup(self, awaitable: Any, late: str, failed: str, hint: str = "") -> Any:
        """``awaitable`` within ``startup_timeout``; past it, or when it fails, the server is stopped and the
        error is an :class:`McpStartError` saying it ``late`` (in time) or ``failed`` (and why)."""
        try:
            return await asyncio.wait_for(awaitable, self.config.startup_timeout)
        except asyncio.TimeoutError:
            await self._abort()
            raise McpStartError(f"MCP server {self.name!r} {late} within {self.config.startup_timeout:g} s"
                                f"{hint}") from None
        except McpError:
            raise
        except Exception as exc:
            await self._abort()
            raise McpStartError(f"MCP server {self.name!r} {failed}: {_plain(exc)}") from None

    async def _abort(self) -> None:
        runner = self._runner
        self._runner, self._client = None, None
        if runner is not None and not runner.done():
            runner.cancel()
            try:
                await asyncio.wait_for(runner, 5.0)
            except BaseException:  # a transport that will not close: the process is gone or going
                pass

    async def _list(self) -> List[Dict[str, Any]]:
        client = await self._ensure()
        try:
            result = await asyncio.wait_for(client.list_tools(), self.config.timeout)
        except asyncio.TimeoutError:
            raise McpServerTimeoutError(f"MCP server {self.name!r} did not list its tools within "
                                        f"{self.config.timeout:g} s") from None
        self.tools = [_describe(t) for t in result.tools]
        return self.tools

    async def discover(self) -> List[Dict[str, Any]]:
        """Start the server and list its tools, the two within ``startup_timeout`` (on the background loop)."""
        tools: List[Dict[str, Any]] = await self._within_startup(self._list(), "did not start and list its tools",
                                                                  "could not list its tools")
        return tools

    async def _call(self, tool: str, arguments: Dict[str, Any]) -> str:
        from mcp import MCPError

        client = await self._ensure()
        try:
            result = await asyncio.wait_for(client.call_tool(tool, arguments), self.config.timeout)
        except asyncio.TimeoutError:
            raise McpServerTimeoutError(f"MCP server {self.name!r} did not answer {tool!r} within "
                                        f"{self.config.timeout:g} s") from None
        except MCPError as exc:
            if self._runner is None or self._runner.done() or "closed" in str(exc.error.message).lower():
                await self._abort()
                raise McpServerCrashedError(f"MCP server {self.name!r} closed the connection during {tool!r} "
                                            "(it will be started again on the next call)") from None
            if "timed out" in str(exc.error.message).lower():
                raise McpServerTimeoutError(f"MCP server {self.name!r} did not answer {tool!r} within "
                                            f"{self.config.timeout:g} s") from None
            raise McpToolError(f"MCP server {self.name!r} refused {tool!r}: {exc.error.message}") from None
        except (OSError, EOFError) as exc:
            await self._abort()
            raise McpServerCrashedError(f"MCP server {self.name!r} went away during {tool!r} "
                                        f"({type(exc).__name__})") from None
        text = _text_of(result)
        if result.is_error:
            raise McpToolError(f"{tool!r} failed on MCP server {self.name!r}: {text[:2000]}")
        return text

    async def aclose(self) -> None:
        """Stop the server (on the background loop)."""
        if self._stop is not None:
            self._stop.set()
        runner = self._runner
        if runner is not None and not runner.done():
            try:
                await asyncio.wait_for(asyncio.shield(runner), 5.0)
            except BaseException:
                await self._abort()


def _plain(exc: BaseException) -> str:
    """``Type: first line`` of an exception (of the first inner one of an exception group); no SDK error
    carries the config's env or headers."""
    inner = getattr(exc, "exceptions", None)
    if inner:
        return _plain(inner[0])
    text = str(exc).splitlines()[0] if str(exc) else ""
    return f"{type(exc).__name__}: {text[:300]}" if text else type(exc).__name__


def listing_of(name: str, config: McpServerConfig) -> List[Dict[str, Any]]:
    """Start (if needed) and list server ``name``'s tools, and keep the listing for later processes (or the
    failure, which discovery then does not retry for the server's ``retry_after``)."""
    try:
        tools = connection(name, config).list_tools()
    except McpError as exc:
        remember_failure(name, config, exc)
        raise
    _keep(name, config, tools)
    return tools


def _keep(name: str, config: McpServerConfig, tools: List[Dict[str, Any]]) -> None:
    write_cache(name, config_table(config), tools)
    forget_failure(name)


def list_servers(configs: Mapping[str, McpServerConfig], *, on_slow: Callable[[List[str], float], None],
                 slow_after: float = 1.0) -> Dict[str, Union[List[Dict[str, Any]], McpError]]:
    """Start the servers of ``configs`` all at once and list their tools, each within its
    ``startup_timeout``; keep each listing (as :func:`listing_of`). A server that fails gives its typed
    error instead, and it is remembered (:mod:`jarvis_mcp.failures`). ``on_slow(waiting, seconds)`` is called
    once when some are still starting after ``slow_after`` seconds, with their names and the longest they may
    take."""
    futures = {name: _background().submit(connection(name, config).discover()) for name, config in configs.items()}
    _, waiting = concurrent.futures.wait(list(futures.values()), timeout=slow_after)
    if waiting:
        slow = [name for name, future in futures.items() if future in waiting]
        on_slow(slow, max(configs[name].startup_timeout for name in slow))
    out: Dict[str, Union[List[Dict[str, Any]], McpError]] = {}
    for name, future in futures.items():
        config = configs[name]
        try:
            tools = future.result(config.startup_timeout + 10)  # a backstop: discover() bounds itself
        except (McpError, concurrent.futures.TimeoutError) as exc:
            error = exc if isinstance(exc, McpError) else McpStartError(
                f"MCP server {name!r} did not start within {config.startup_timeout:g} s")
            scrub_error(error, config.secret_values())
            remember_failure(name, config, error)
            out[name] = error
            continue
        _keep(name, config, tools)
        out[name] = tools
    return out
