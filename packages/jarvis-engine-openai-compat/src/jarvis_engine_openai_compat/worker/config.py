"""The immutable configuration of a :class:`~.worker.LlamaCppWorker`.

A worker never changes its config: to run another model or other limits, stop it and start a new one.
Every value is checked when the config is built; a bad one raises :class:`~jarvis_core.errors.ConfigError`
naming the field.
"""

from __future__ import annotations

import os
from typing import Any, Optional, Tuple

import attrs

from jarvis_core.errors import ConfigError
from jarvis_core.types import as_tuple

from ..engines.base import TOOL_MODES
from .loop_detector import LoopDetectorConfig

__all__ = ["RestartPolicy", "TimeoutProfile", "ToolLimits", "WorkerConfig"]


def _number(minimum: float, *, optional: bool = False, integer: bool = False, strict: bool = False):
    def check(_inst: object, attr: attrs.Attribute, value: Any) -> None:
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
            raise ConfigError(f"worker {attr.name} must be {what} {op} {minimum}{none}, got {value!r}", key=attr.name)

    return check


@attrs.frozen
class TimeoutProfile:
    """How long the worker waits, and for what. There is no per-request override.

    * ``connect``: opening the TCP connection to the server.
    * ``headers``: from sending a request to the response headers (llama.cpp sends them at once, before
      prefill, so a server that does not is wedged).
    * No time-to-first-token limit: prefill of a long prompt may take many minutes.
    * ``stall_window``: a running request is stalled when, for this long, the stream delivered no bytes
      **and** the server used less than ``min_cpu_fraction`` of a core. A long prefill burns CPU, so it
      is never taken for a stall.
    * ``absolute``: an optional wall-clock limit per request (``None``, the default, means none).
    * ``health_interval`` / ``probe``: how often an idle server's ``/health`` is probed, and how long a
      probe (``/health``, ``/slots``) may take. A probe that times out means "unknown", never "dead".
    """

    connect: float = attrs.field(default=5.0, validator=_number(0, strict=True))
    headers: float = attrs.field(default=30.0, validator=_number(0, strict=True))
    stall_window: float = attrs.field(default=60.0, validator=_number(0, strict=True))
    min_cpu_fraction: float = attrs.field(default=0.05, validator=_number(0))
    absolute: Optional[float] = attrs.field(default=None, validator=_number(0, optional=True, strict=True))
    health_interval: float = attrs.field(default=5.0, validator=_number(0, strict=True))
    probe: float = attrs.field(default=2.0, validator=_number(0, strict=True))


@attrs.frozen
class RestartPolicy:
    """Nuke and repave: when the server crashes or stalls it is killed and started again.

    The n-th restart in a row waits ``min(backoff_cap, backoff_base * 2**(n-1))`` seconds (± ``jitter`` of
    it). After ``crash_loop_max`` failures within ``crash_loop_window`` seconds the worker gives up and says
    why. A server that stays healthy for ``stable_after`` seconds resets the backoff. ``stop_grace`` is the
    wait between SIGTERM and SIGKILL; ``cancel_grace`` is how long a cancelled request's server slot may stay
    busy before the server is deemed wedged and restarted.
    """

    backoff_base: float = attrs.field(default=1.0, validator=_number(0))
    backoff_cap: float = attrs.field(default=60.0, validator=_number(0))
    jitter: float = attrs.field(default=0.1, validator=_number(0))
    crash_loop_max: int = attrs.field(default=5, validator=_number(1, integer=True))
    crash_loop_window: float = attrs.field(default=300.0, validator=_number(0, strict=True))
    stable_after: float = attrs.field(default=120.0, validator=_number(0))
    stop_grace: float = attrs.field(default=10.0, validator=_number(0))
    cancel_grace: float = attrs.field(default=10.0, validator=_number(0))

    def backoff(self, attempt: int, rand: float = 0.5) -> float:
        """Seconds to wait before restart number ``attempt`` (1-based); ``rand`` in [0, 1) drives the jitter."""
        base = min(self.backoff_cap, self.backoff_base * (2 ** max(0, attempt - 1)))
        return max(0.0, base * (1 + self.jitter * (2 * rand - 1)))


@attrs.frozen
class ToolLimits:
    """The tool loop's limits: ``budget`` model turns that may call tools, ``per_tool_timeout`` seconds per
    call, ``output_cap`` characters of one tool's output kept (the rest is cut, with a marker saying so), and
    at most ``max_calls_per_turn`` calls run per turn (extra calls get an error result)."""

    budget: int = attrs.field(default=8, validator=_number(0, integer=True))
    per_tool_timeout: float = attrs.field(default=30.0, validator=_number(0, strict=True))
    output_cap: int = attrs.field(default=16_000, validator=_number(64, integer=True))
    max_calls_per_turn: int = attrs.field(default=4, validator=_number(1, integer=True))


@attrs.frozen
class WorkerConfig:
    """Everything a worker needs, fixed for its lifetime.

    ``model_path`` is the GGUF file; ``binary_path`` a ``llama-server`` executable (``None``: llama.cpp's
    server hosted by xllamacpp in a Python subprocess). ``slots`` requests run at once, each with
    ``ctx_per_slot`` tokens of context. ``max_tokens`` is the default per request (a request may lower or
    raise it). ``tool_mode`` is ``"native"`` (OpenAI ``tools``, parsed by the server's chat template),
    ``"json_schema"`` (the model answers JSON constrained by a schema listing the tools; for models whose
    template knows no tools, such as SmolLM2) or ``"auto"`` (the default: asks the server's ``/props``
    whether the model's template supports tools, and picks one of the two).
    """

    model_path: str = attrs.field(converter=str)
    binary_path: Optional[str] = None
    slots: int = attrs.field(default=1, validator=_number(1, integer=True))
    ctx_per_slot: int = attrs.field(default=4096, validator=_number(64, integer=True))
    threads: Optional[int] = attrs.field(default=None, validator=_number(1, optional=True, integer=True))
    host: str = "127.0.0.1"
    alias: Optional[str] = None
    extra_args: Tuple[str, ...] = attrs.field(default=(), converter=as_tuple)
    max_tokens: int = attrs.field(default=1024, validator=_number(1, integer=True))
    temperature: Optional[float] = attrs.field(default=None, validator=_number(0, optional=True))
    timeouts: TimeoutProfile = attrs.field(factory=TimeoutProfile)
    restart: RestartPolicy = attrs.field(factory=RestartPolicy)
    tools: ToolLimits = attrs.field(factory=ToolLimits)
    loop: LoopDetectorConfig = attrs.field(factory=LoopDetectorConfig)
    tool_mode: str = attrs.field(default="auto")
    stop_on_decision_request: bool = True
    startup_timeout: float = attrs.field(default=600.0, validator=_number(0, strict=True))
    log_max_lines: int = attrs.field(default=2000, validator=_number(1, integer=True))
    log_max_bytes: int = attrs.field(default=1_000_000, validator=_number(1024, integer=True))
    partial_tail_chars: int = attrs.field(default=2000, validator=_number(0, integer=True))
    keep_finished: int = attrs.field(default=256, validator=_number(1, integer=True))
    timezone: Optional[str] = None
    platform_guidance: Optional[str] = None
    capability_hints: Tuple[str, ...] = attrs.field(default=(), converter=as_tuple)

    @tool_mode.validator
    def _check_mode(self, _attr: attrs.Attribute, value: str) -> None:
        if value not in TOOL_MODES:
            raise ConfigError(f"worker tool_mode must be one of {', '.join(TOOL_MODES)}, got {value!r}", key="tool_mode")

    @property
    def model_alias(self) -> str:
        """The model id the server reports: ``alias``, or the model file's name without ``.gguf``."""
        if self.alias:
            return self.alias
        name = os.path.basename(self.model_path)
        return name[:-5] if name.lower().endswith(".gguf") else name
