"""``memory_extraction``: what is kept from each tool result.

- ``scratchpad``: one row per tool call, the first ``SCRATCH_CHARS`` characters of its output.
- ``structured_json``: the output parsed as JSON, when it is JSON (:func:`parse_json_output`).
- ``causality_graph``: one extra model call per output of at least ``extraction_min_chars`` characters, asking
  for cause → effect relations (:data:`CAUSALITY_PROMPT`, read by :func:`parse_relations`); each relation is
  a row.
- ``none``: nothing.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, Dict, List, Optional, Tuple

__all__ = ["CAUSALITY_PROMPT", "SCRATCH_CHARS", "parse_json_output", "parse_relations"]

SCRATCH_CHARS = 1000

CAUSALITY_PROMPT = (
    "Read the tool output and list the cause-and-effect relations it states or clearly implies. Reply with only "
    'a JSON array of objects {"cause": "...", "effect": "...", "confidence": 0.0-1.0}; reply [] if there are '
    "none.")

_FENCE = re.compile(r"^```[a-zA-Z]*\s*|\s*```$")


def _unfenced(text: str) -> str:
    return _FENCE.sub("", text.strip())


def parse_json_output(text: str) -> Tuple[bool, Any]:
    """``(True, value)`` when ``text`` (fences allowed) is one JSON document, else ``(False, None)``."""
    try:
        return True, json.loads(_unfenced(text))
    except ValueError:
        return False, None


def parse_relations(reply: str, limit: int) -> Optional[List[Dict[str, Any]]]:
    """Up to ``limit`` relations ``{cause, effect, confidence}`` from the reply, or ``None`` when the reply is
    not a JSON array of them. Entries without a cause and an effect are skipped; a missing or bad confidence
    becomes ``None``."""
    text = _unfenced(reply or "")
    start, end = text.find("["), text.rfind("]")
    if start < 0 or end < start:
        return None
    try:
        data = json.loads(text[start:end + 1])
    except ValueError:
        return None
    if not isinstance(data, list):
        return None
    out: List[Dict[str, Any]] = []
    for entry in data:
        if not isinstance(entry, dict):
            continue
        cause, effect = entry.get("cause"), entry.get("effect")
        if not (isinstance(cause, str) and cause.strip() and isinstance(effect, str) and effect.strip()):
            continue
        conf = entry.get("confidence")
        confidence = float(conf) if isinstance(conf, (int, float)) and not isinstance(conf, bool) else None
        if confidence is not None and not math.isfinite(confidence):
            confidence = None
        out.append({"cause": cause.strip(), "effect": effect.strip(), "confidence": confidence})
        if len(out) >= limit:
            break
    return out
