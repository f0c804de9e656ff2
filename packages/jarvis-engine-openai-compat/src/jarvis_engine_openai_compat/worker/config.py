"""The immutable configuration of a :class:`~.worker.LlamaCppWorker`: the managed server's
:class:`~jarvis_engine_openai_compat.server.config.ServerConfig` (its :class:`TimeoutProfile` and
:class:`RestartPolicy` are re-exported here) plus the tool limits and the request runtime's settings.

A worker never changes its config: to run another model or other limits, stop it and start a new one.
Every value is checked when the config is built; a bad one raises :class:`~jarvis_core.errors.ConfigError`
naming the field.
"""

from __future__ import annotations

from typing import Any, Optional, Tuple

import attrs

from jarvis_core.errors import ConfigError
from jarvis_core.types import as_tuple

from ..engines.base import TOOL_MODES
from ..server.config import RestartPolicy, ServerConfig, TimeoutProfile, check_number
from .loop_detector import LoopDetectorConfig

__all__ = ["RestartPolicy", "TimeoutProfile", "ToolLimits", "WorkerConfig"]


@attrs.frozen
class ToolLimits:
    """The tool loop's limits: ``budget`` model turns that may call tools, ``per_tool_timeout`` seconds per
    call, ``output_cap`` characters of one tool's output kept (the rest is cut, with a marker saying so), and
    at most ``max_calls_per_turn`` calls run per turn (extra calls get an error result)."""

    budget: int = attrs.field(default=8, validator=check_number(0, integer=True))
    per_tool_timeout: float = attrs.field(default=30.0, validator=check_number(0, strict=True))
    output_cap: int = attrs.field(default=16_000, validator=check_number(64, integer=True))
    max_calls_per_turn: int = attrs.field(default=4, validator=check_number(1, integer=True))


@attrs.frozen(kw_only=True)
class WorkerConfig(ServerConfig):
    """Everything a worker needs, fixed for its lifetime: the managed server's :class:`ServerConfig`
    (model, slots, context, start-up, timeouts, restarts; its defaults are the server's) plus the request
    runtime's settings.

    ``max_tokens`` is the default per request (a request may lower or raise it). ``tool_mode`` is
    ``"native"`` (OpenAI ``tools``, parsed by the server's chat template), ``"json_schema"`` (the model
    answers JSON constrained by a schema listing the tools; for models whose template knows no tools, such
    as SmolLM2) or ``"auto"`` (the default: asks the server's ``/props`` whether the model's template
    supports tools, and picks one of the two).
    """

    temperature: Optional[float] = attrs.field(default=None, validator=check_number(0, optional=True))
    tools: ToolLimits = attrs.field(factory=ToolLimits)
    loop: LoopDetectorConfig = attrs.field(factory=LoopDetectorConfig)
    tool_mode: str = attrs.field(default="auto")
    stop_on_decision_request: bool = True
    partial_tail_chars: int = attrs.field(default=2000, validator=check_number(0, integer=True))
    keep_finished: int = attrs.field(default=256, validator=check_number(1, integer=True))
    timezone: Optional[str] = None
    platform_guidance: Optional[str] = None
    capability_hints: Tuple[str, ...] = attrs.field(default=(), converter=as_tuple)

    @tool_mode.validator
    def _check_mode(self, _attr: attrs.Attribute[Any], value: str) -> None:
        if value not in TOOL_MODES:
            raise ConfigError(f"tool_mode must be one of {', '.join(TOOL_MODES)}, got {value!r}", key="tool_mode")
