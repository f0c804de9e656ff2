"""Range checks for the numbers that configure a request, and the client-side limits of a reply.

A number of the right type can still be wrong: ``timeout = nan`` reached httpx, ``timeout = -1`` read as a
server timeout, ``temperature = nan`` made the request body invalid JSON. The checks here reject such
values with a message naming the key; config schemas use them as attrs validators (the config loader then
adds the file and line), engines call them on their keyword arguments.

The limits of a reply (:class:`ReplyLimits`) stop a hostile or broken server from holding a request
forever: a total deadline, a cap on the bytes of one reply (derived from ``max_tokens`` when the caller
asked for few tokens), and the line cap of the stream decoders.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Optional

import attrs

from jarvis_core.engine.streams import DEFAULT_MAX_LINE

__all__ = [
    "BYTES_PER_TOKEN",
    "DEFAULT_DEADLINE",
    "DEFAULT_MAX_LINE",
    "ReplyLimits",
    "check_count",
    "check_finite",
    "check_seconds",
    "request_deadline",
    "validator",
]

#: Wire bytes one generated token may cost before a reply counts as clearly longer than was asked
#: (an OpenAI-style SSE event for one token is 150-400 bytes; this leaves a wide margin).
BYTES_PER_TOKEN = 4096
#: Seconds a whole request may take when the engine's ``deadline`` is not set: longer than any interactive
#: reply, short enough that a server dripping keep-alive lines cannot hold a request for good. Long local
#: generations raise it (``deadline = 3600``); ``inf`` switches it off.
DEFAULT_DEADLINE = 600.0
#: Wire bytes every reply may use on top of that (metadata, keep-alive comments, a final usage event).
_SLACK_BYTES = 1024 * 1024


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def check_seconds(name: str, value: Any, *, allow_none: bool = True) -> Optional[float]:
    """A duration in seconds: a finite number > 0, or ``inf`` for "no limit" (``None`` passes through)."""
    if value is None and allow_none:
        return None
    if not _is_number(value) or math.isnan(value) or value <= 0:
        raise ValueError(f"{name} must be a number of seconds greater than 0 (or inf for no limit), got {value!r}")
    return float(value)


def check_finite(name: str, value: Any, *, minimum: Optional[float] = None,
                 maximum: Optional[float] = None) -> Any:
    """A number that is not NaN nor infinite, within ``minimum`` and ``maximum`` when given (``None``
    passes through)."""
    if value is None:
        return None
    low = -math.inf if minimum is None else minimum
    high = math.inf if maximum is None else maximum
    if not _is_number(value) or not math.isfinite(value) or not low <= value <= high:
        if minimum is not None and maximum is not None:
            bounds = f" from {minimum:g} to {maximum:g}"
        elif minimum is not None:
            bounds = f" >= {minimum:g}"
        elif maximum is not None:
            bounds = f" <= {maximum:g}"
        else:
            bounds = ""
        raise ValueError(f"{name} must be a finite number{bounds}, got {value!r}")
    return value


def check_count(name: str, value: Any, *, minimum: int = 1) -> Optional[int]:
    """A whole number >= ``minimum`` (``None`` passes through)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{name} must be a whole number >= {minimum}, got {value!r}")
    return value


def request_deadline(value: Any) -> Optional[float]:
    """The total deadline of a request for the ``deadline`` setting ``value``: :data:`DEFAULT_DEADLINE` when
    unset, ``None`` (no deadline) for ``inf``, else the number of seconds (checked as :func:`check_seconds`)."""
    seconds = check_seconds("deadline", value)
    if seconds is None:
        return DEFAULT_DEADLINE
    return None if math.isinf(seconds) else seconds


def validator(check: Callable[..., Any], **kwargs: Any) -> Callable[[Any, Any, Any], None]:
    """An attrs validator running ``check(field_name, value, **kwargs)``."""

    def run(_inst: Any, attribute: Any, value: Any) -> None:
        check(attribute.name, value, **kwargs)

    return run


@attrs.frozen
class ReplyLimits:
    """What one reply may cost before it is cut off with :class:`~jarvis_core.errors.LimitExceededError`.

    :param deadline: seconds for the whole request, first byte to last (``None``: no total deadline; the
        read timeout still bounds each silence).
    :param max_output_bytes: wire bytes of one reply (``None``: derived from ``max_tokens`` only).
    :param max_line: characters of one line, SSE event or non-streamed body.
    """

    deadline: Optional[float] = None
    max_output_bytes: Optional[int] = None
    max_line: int = DEFAULT_MAX_LINE

    def output_budget(self, max_tokens: Optional[int]) -> Optional[int]:
        """The wire bytes a reply asked to hold ``max_tokens`` tokens may use; ``None`` for no bound."""
        budget = self.max_output_bytes
        if max_tokens is not None and max_tokens > 0:
            derived = max_tokens * BYTES_PER_TOKEN + _SLACK_BYTES
            budget = derived if budget is None else min(budget, derived)
        return budget
