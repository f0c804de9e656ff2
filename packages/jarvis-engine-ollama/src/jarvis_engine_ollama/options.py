"""The options the Ollama engine accepts, their checks, and where each goes in the request.

Sampling options go inside Ollama's ``options`` object (Ollama ignores them at the top level); ``think``,
``format`` and ``keep_alive`` are top-level request fields. ``max_tokens`` becomes ``options.num_predict``.
Anything not listed here is refused (:class:`~jarvis_core.errors.InvalidOptionError`), and a listed option
with a value of the wrong kind raises :class:`~jarvis_core.errors.InvalidOptionValueError`, before anything
is sent.
"""

from __future__ import annotations

import re
from typing import Any, Dict, FrozenSet, Mapping, Optional

from jarvis_core.errors import InvalidOptionValueError

__all__ = [
    "ALLOWED_OPTIONS",
    "DEFAULT_NUM_CTX",
    "THINK_LEVELS",
    "check_format",
    "check_keep_alive",
    "check_num_ctx",
    "check_think",
    "wire_options",
]

#: The context window asked for on every request unless configured otherwise (see the README for why).
DEFAULT_NUM_CTX = 8192
#: ``think`` levels Ollama accepts besides true/false (gpt-oss needs a level).
THINK_LEVELS = ("low", "medium", "high", "max")
_FLOAT_OPTIONS = ("top_p", "min_p", "repeat_penalty", "presence_penalty", "frequency_penalty")
_INT_OPTIONS = ("top_k", "seed", "num_ctx")
#: Keyword options of ``generate``/``stream``/``stream_full`` beyond the named parameters.
ALLOWED_OPTIONS: FrozenSet[str] = frozenset(
    {*_FLOAT_OPTIONS, *_INT_OPTIONS, "stop", "think", "format", "response_format", "keep_alive"}
)
_DURATION = re.compile(r"^-?\d+(\.\d+)?(ns|us|µs|ms|s|m|h)?(\d+(\.\d+)?(ns|us|µs|ms|s|m|h))*$")


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def check_think(value: Any) -> Any:
    """``think``: a bool or one of :data:`THINK_LEVELS`."""
    if value is None or isinstance(value, bool) or value in THINK_LEVELS:
        return value
    raise InvalidOptionValueError(
        "ollama", "think", f"expected true, false or one of {', '.join(THINK_LEVELS)}", value=value
    )


def check_format(value: Any) -> Any:
    """``format``: ``"json"`` or a JSON schema (a dict)."""
    if value is None or value == "json" or isinstance(value, dict):
        return value
    raise InvalidOptionValueError("ollama", "format", 'expected "json" or a JSON schema (a dict)', value=value)


def check_keep_alive(value: Any) -> Any:
    """``keep_alive``: seconds (a number; 0 unloads at once, negative keeps forever) or a Go duration
    string such as ``"5m"``, ``"1h30m"``, ``"-1"``."""
    if value is None or _is_number(value):
        return value
    if isinstance(value, str) and _DURATION.match(value.strip()):
        return value.strip()
    raise InvalidOptionValueError(
        "ollama", "keep_alive", 'expected seconds (a number) or a duration such as "5m", "1h", "-1"', value=value
    )


def check_num_ctx(value: Any) -> Optional[int]:
    """``num_ctx``: a positive int, or 0 for "do not send it; the server decides"."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidOptionValueError(
            "ollama", "num_ctx", "expected a positive number of tokens, or 0 to let the server decide", value=value
        )
    return value


def wire_options(
    sampling: Mapping[str, Any],
    options: Mapping[str, Any],
    *,
    max_tokens: Optional[int],
    num_ctx: Optional[int],
    checked: bool = False,
) -> Dict[str, Any]:
    """The request's ``options`` object: checked sampling values, ``num_predict``, ``num_ctx``, seed, stop.

    ``checked=True`` says ``sampling`` is the output of an earlier call (already checked) and ``options``
    is empty: only ``max_tokens`` and ``num_ctx`` are added.
    """
    if checked:
        return _with_lengths(dict(sampling), max_tokens, num_ctx)
    out = {}
    for key, value in sampling.items():
        if value is None:
            continue
        if not _is_number(value):
            raise InvalidOptionValueError("ollama", key, "expected a number", value=value)
        out[key] = value
    for key in ("frequency_penalty", "seed"):
        value = options.get(key)
        if value is not None:
            if not _is_number(value) or (key == "seed" and not isinstance(value, int)):
                raise InvalidOptionValueError(
                    "ollama", key, "expected an integer" if key == "seed" else "expected a number", value=value
                )
            out[key] = value
    if "top_k" in out:
        if not isinstance(out["top_k"], int):
            raise InvalidOptionValueError("ollama", "top_k", "expected an integer", value=out["top_k"])
        if out["top_k"] < 0:
            out["top_k"] = 0  # family tables say -1 for "no top-k"; Ollama's samplers take 0 for that
    stop = options.get("stop")
    if stop is not None:
        if isinstance(stop, str):
            stop = [stop]
        if not isinstance(stop, (list, tuple)) or not all(isinstance(s, str) for s in stop):
            raise InvalidOptionValueError("ollama", "stop", "expected a string or a list of strings", value=stop)
        out["stop"] = list(stop)
    return _with_lengths(out, max_tokens, num_ctx)


def _with_lengths(out: Dict[str, Any], max_tokens: Optional[int], num_ctx: Optional[int]) -> Dict[str, Any]:
    """``out`` with ``num_predict`` (``max_tokens``, checked) and ``num_ctx`` (unless 0 or ``None``)."""
    if max_tokens is not None:
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int):
            raise InvalidOptionValueError(
                "ollama", "max_tokens", "expected an integer (or None for no limit)", value=max_tokens
            )
        out["num_predict"] = max_tokens
    if num_ctx:
        out["num_ctx"] = num_ctx
    return out
