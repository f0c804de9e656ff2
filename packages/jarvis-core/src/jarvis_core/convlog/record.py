"""One logged answer, as the conversation log returns it."""

from __future__ import annotations

import datetime
import json
import sqlite3
from typing import Any, Dict, List, Optional, Tuple

import attrs

__all__ = ["LoggedResponse"]


def _json_list(text: Optional[str]) -> Tuple[Dict[str, Any], ...]:
    if not text:
        return ()
    try:
        value = json.loads(text)
    except ValueError:
        return ()
    return tuple(v for v in value if isinstance(v, dict)) if isinstance(value, list) else ()


@attrs.frozen
class LoggedResponse:
    """One question and its answer, with what produced it.

    ``tool_calls`` are ``{"id", "name", "arguments"}`` dicts and ``tool_results`` ``{"tool_call_id", "name",
    "ok", "content"}`` dicts, in the order they happened; ``usage`` is ``{"prompt_tokens",
    "completion_tokens", "total_tokens"}`` when the engine reported it; ``created`` is a Unix time.
    """

    id: int
    conversation_id: str
    created: float
    prompt: str
    response: str
    system: Optional[str] = None
    reasoning: Optional[str] = None
    tool_calls: Tuple[Dict[str, Any], ...] = ()
    tool_results: Tuple[Dict[str, Any], ...] = ()
    model: Optional[str] = None
    engine: Optional[str] = None
    agent: Optional[str] = None
    usage: Optional[Dict[str, int]] = None
    duration_s: Optional[float] = None

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> LoggedResponse:
        """Build one from a ``responses`` row."""
        tokens = (row["prompt_tokens"], row["completion_tokens"], row["total_tokens"])
        usage = None if all(t is None for t in tokens) else {
            "prompt_tokens": tokens[0] or 0, "completion_tokens": tokens[1] or 0, "total_tokens": tokens[2] or 0}
        return cls(
            id=row["id"], conversation_id=row["conversation_id"], created=row["created"], prompt=row["prompt"],
            response=row["response"], system=row["system"], reasoning=row["reasoning"],
            tool_calls=_json_list(row["tool_calls"]), tool_results=_json_list(row["tool_results"]),
            model=row["model"], engine=row["engine"], agent=row["agent"], usage=usage,
            duration_s=row["duration_s"],
        )

    @property
    def when(self) -> str:
        """``created`` as an ISO 8601 UTC time, to the second."""
        moment = datetime.datetime.fromtimestamp(self.created, tz=datetime.timezone.utc)
        return moment.strftime("%Y-%m-%dT%H:%M:%SZ")

    def to_dict(self) -> Dict[str, Any]:
        """Every field, JSON-ready (``--json``), plus ``when``."""
        out = attrs.asdict(self, recurse=False)
        out["tool_calls"] = list(self.tool_calls)
        out["tool_results"] = list(self.tool_results)
        out["when"] = self.when
        return out

    def exchange(self) -> List[Dict[str, str]]:
        """The user message and the assistant's answer, as OpenAI-style dicts (for continuing)."""
        return [{"role": "user", "content": self.prompt}, {"role": "assistant", "content": self.response}]
