"""Reading a wrapped runtime's output tolerantly.

A runtime's stdout is not only its result: a CLI may print warnings or progress before it, a library may
log after it, a line may be cut off when the process dies or passes the output cap. So the result is
looked for, never assumed to be the whole text: :func:`last_json_object` finds the last JSON object a
predicate accepts (one per line, noise before it on the same line skipped, or pretty-printed over several
lines); :func:`between_markers` takes the text between the last start marker and the end marker after it,
and says which one is missing. :func:`excerpt` is what an error may quote: secrets masked, whitespace
collapsed, at most :data:`jarvis_core.errors.EXCERPT_CHARS` characters.
"""

from __future__ import annotations

import json
import re
from typing import Any, Callable, Dict, Iterable, Optional, Tuple

from jarvis_core.engine.redaction import scrub_text
from jarvis_core.errors import EXCERPT_CHARS

__all__ = ["between_markers", "excerpt", "last_json_object"]

#: How many ``{`` positions one line (or the multi-line pass) tries; bounds the work on hostile output.
_MAX_TRIES = 64
_OBJECT_LINE = re.compile(r"^[ \t]*\{", re.MULTILINE)
_DECODER = json.JSONDecoder()


def excerpt(text: str, secrets: Iterable[Any] = (), *, limit: int = EXCERPT_CHARS) -> str:
    """The end of ``text`` for an error message: secrets masked first, whitespace collapsed, ``…`` in front
    when it was shortened."""
    flat = " ".join(scrub_text(text, secrets).split())
    if len(flat) <= limit:
        return flat
    return "…" + flat[-(limit - 1):]


def _decode_at(text: str, index: int) -> Optional[Dict[str, Any]]:
    try:
        value, _ = _DECODER.raw_decode(text, index)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def last_json_object(text: str, accept: Callable[[Dict[str, Any]], bool]) -> Optional[Dict[str, Any]]:
    """The last JSON object in ``text`` that ``accept`` approves, or ``None``.

    Lines are tried from the last one up; in a line, each ``{`` from the left (so noise before the object
    is skipped). A cut-off object does not parse and is passed over. Then, for output that prints its
    object over several lines, each line that starts with ``{`` is tried with the rest of the text.
    """
    lines = text.splitlines()
    for line in reversed(lines):
        start = line.find("{")
        tries = 0
        while start != -1 and tries < _MAX_TRIES:
            found = _decode_at(line, start)
            if found is not None and accept(found):
                return found
            start = line.find("{", start + 1)
            tries += 1
    starts = [m.end() - 1 for m in _OBJECT_LINE.finditer(text)]
    for start in reversed(starts[-_MAX_TRIES:]):
        found = _decode_at(text, start)
        if found is not None and accept(found):
            return found
    return None


def between_markers(text: str, start: str, end: str) -> Tuple[Optional[str], str]:
    """``(payload, "")`` for the text between the last ``start`` marker and the first ``end`` after it;
    ``(None, why)`` when the start marker is missing or the end marker never came (output cut off)."""
    at = text.rfind(start)
    if at < 0:
        return None, f"no {start} marker"
    body = at + len(start)
    stop = text.find(end, body)
    if stop < 0:
        return None, f"{start} without {end} (the output was cut off)"
    return text[body:stop], ""
