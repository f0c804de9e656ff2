"""Reading Ollama's answers: stream lines, the final line's extras, the finish reason."""

from __future__ import annotations

import json
from typing import Any, Dict, Mapping, Optional

from jarvis_core.engine.http_errors import error_from_payload
from jarvis_core.errors import StreamError

__all__ = ["answer_metadata", "checked_line", "finish_reason", "incomplete_stream"]

_DURATIONS = ("total_duration", "load_duration", "prompt_eval_duration", "eval_duration")


def finish_reason(has_calls: bool, done_reason: Optional[str]) -> str:
    """``tool_calls`` when the answer has calls (Ollama still says ``stop``), ``length`` when
    ``done_reason`` is ``length``, else ``stop``."""
    if has_calls:
        return "tool_calls"
    return "length" if done_reason == "length" else "stop"


def checked_line(obj: Any) -> Dict[str, Any]:
    """A decoded stream line that is not a plain object without an ``error`` member (the engines' loops
    test that themselves): an error payload raises its typed error, anything but an object
    :class:`StreamError`; an object whose ``error`` is empty is returned."""
    if type(obj) is dict and not (obj.get("error") or obj.get("type") == "error" or obj.get("object") == "error"):
        return obj
    if isinstance(obj, dict):
        raise error_from_payload(obj, engine_id="ollama", in_stream=True)
    raise StreamError(f"ollama: a stream line is not a JSON object: {json.dumps(obj)[:200]!r}", engine_id="ollama")


def incomplete_stream() -> StreamError:
    """The error for a stream that ended without its ``done`` line (and without an error line)."""
    return StreamError(
        "ollama: the stream ended without its final (done) line; the server may have crashed or been restarted "
        "mid-answer",
        engine_id="ollama",
    )


def answer_metadata(final: Mapping[str, Any]) -> Dict[str, Any]:
    """Ollama's extras of a final response: done_reason, created_at, durations (ns) and tokens/s."""
    meta: Dict[str, Any] = {"done_reason": final.get("done_reason")}
    if final.get("created_at"):
        meta["created_at"] = final["created_at"]
    for key in _DURATIONS:
        value = final.get(key)
        if value is not None:
            meta[key + "_ns"] = value
    evals, ns = final.get("eval_count"), final.get("eval_duration")
    if evals and ns:
        meta["tokens_per_second"] = evals / ns * 1e9
    return meta
