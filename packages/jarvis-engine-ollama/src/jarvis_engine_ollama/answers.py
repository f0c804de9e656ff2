"""Reading Ollama's answers: stream lines, the final line's extras, the finish reason."""

from __future__ import annotations

import json
from types import MappingProxyType
from typing import Any, Dict, Mapping, Optional

from jarvis_core.engine.streams import decode_json
from jarvis_core.errors import StreamError

__all__ = ["NO_METADATA", "answer_metadata", "decode_line", "finish_reason", "incomplete_stream"]

_loads = json.loads
#: Shared, read-only metadata of the content chunks of a stream (only the final chunk has any).
NO_METADATA: Mapping[str, Any] = MappingProxyType({})
_DURATIONS = ("total_duration", "load_duration", "prompt_eval_duration", "eval_duration")


def finish_reason(has_calls: bool, done_reason: Optional[str]) -> str:
    """``tool_calls`` when the answer has calls (Ollama still says ``stop``), ``length`` when
    ``done_reason`` is ``length``, else ``stop``."""
    if has_calls:
        return "tool_calls"
    return "length" if done_reason == "length" else "stop"


def decode_line(line: str) -> Optional[Dict[str, Any]]:
    """One NDJSON line as a dict; ``None`` for a blank line. Error payloads, malformed JSON and non-objects
    raise the core's typed errors (:func:`~jarvis_core.engine.streams.decode_json` decides)."""
    try:
        obj = _loads(line)
    except ValueError:
        if not line or line.isspace():
            return None
        obj = decode_json(line, engine_id="ollama")  # raises the core's StreamError for malformed JSON
    if type(obj) is dict and "error" not in obj:
        return obj
    obj = decode_json(line, engine_id="ollama")  # raises for an error payload
    if type(obj) is not dict:
        raise StreamError(f"ollama: a stream line is not a JSON object: {line[:200]!r}", engine_id="ollama")
    return obj


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
