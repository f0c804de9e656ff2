"""Linear-time text scanning for streams: marker search with hold-back of partial markers.

Every scanner here looks at each character a bounded number of times: the only text searched again is a
held-back suffix no longer than the longest marker. No regex ever runs over a growing buffer.
"""

from __future__ import annotations

import json
from typing import Any, Optional, Sequence, Tuple

__all__ = ["LeadingGate", "MarkerWatcher", "earliest", "holdback", "raw_decode"]

_decoder = json.JSONDecoder()


def earliest(text: str, markers: Sequence[str], start: int = 0) -> Tuple[int, Optional[str]]:
    """Position and marker of the first occurrence of any marker in ``text[start:]`` (longest wins a tie)."""
    best, found = -1, None
    for marker in markers:
        i = text.find(marker, start)
        if i != -1 and (best == -1 or i < best or (i == best and len(marker) > len(found or ""))):
            best, found = i, marker
    return best, found


def holdback(text: str, markers: Sequence[str]) -> int:
    """Length of the longest suffix of ``text`` that is a proper prefix of some marker.

    Only the last ``len(marker) - 1`` characters can matter; each marker costs one ``find`` of its first
    character there (this runs once per streamed delta, so it must be cheap).
    """
    n = len(text)
    best = 0
    for marker in markers:
        i = text.find(marker[0], max(0, n - len(marker) + 1))
        while i != -1 and n - i > best:
            if marker.startswith(text[i:]):
                best = n - i
                break
            i = text.find(marker[0], i + 1)
    return best


def raw_decode(text: str, pos: int = 0) -> Tuple[Any, int]:
    """``json.JSONDecoder.raw_decode`` at ``pos`` (skipping whitespace); raises ValueError on bad JSON."""
    n = len(text)
    while pos < n and text[pos] in " \t\r\n":
        pos += 1
    try:
        return _decoder.raw_decode(text, pos)
    except RecursionError as exc:  # absurdly deep nesting is bad model output too
        raise ValueError("JSON nested too deeply") from exc


class MarkerWatcher:
    """Passes text through until a marker appears, holding back any suffix that may start a marker.

    ``feed`` returns ``(safe_text, marker, rest)``: ``safe_text`` is certainly not part of a marker; when a
    marker is found, ``rest`` is the text from the marker on (the watcher is then done).
    """

    def __init__(self, markers: Sequence[str]) -> None:
        self.markers = tuple(markers)
        self._held = ""

    def feed(self, delta: str) -> Tuple[str, Optional[str], str]:
        text = self._held + delta
        idx, marker = earliest(text, self.markers)
        if marker is not None:
            self._held = ""
            return text[:idx], marker, text[idx:]
        keep = holdback(text, self.markers)
        self._held = text[len(text) - keep :]
        return text[: len(text) - keep], None, ""

    def flush(self) -> str:
        """Return (and forget) the held-back text: at the end of output it is plain text."""
        held, self._held = self._held, ""
        return held

    @property
    def held(self) -> str:
        return self._held


class LeadingGate:
    """Decides from the start of the output (after whitespace) whether it opens with one of ``openers``.

    ``feed`` returns ``None`` while undecided, else ``(opener_or_None, text_so_far)``; ``text_so_far`` is all
    the text seen, for the caller to emit or buffer. Leading whitespace is kept as parts, so a long run of
    it costs linear time.
    """

    def __init__(self, openers: Sequence[str]) -> None:
        self.openers = tuple(openers)
        self._space: list[Any] = []  # leading whitespace pieces
        self._body = ""  # text after the leading whitespace: shorter than the longest opener while undecided

    def feed(self, delta: str) -> Optional[Tuple[Optional[str], str]]:
        if not self._body:
            stripped = delta.lstrip()
            cut = len(delta) - len(stripped)
            if cut:
                self._space.append(delta[:cut])
            delta = stripped
            if not delta:
                return None
        self._body += delta
        body = self._body
        for opener in self.openers:
            if body.startswith(opener):
                return opener, self.flush()
        if any(o.startswith(body) for o in self.openers):
            return None
        return None, self.flush()

    def peek(self) -> str:
        """All text seen so far, without consuming it."""
        return "".join(self._space) + self._body

    def flush(self) -> str:
        """All text seen (whitespace and partial opener); the gate starts over."""
        text = "".join(self._space) + self._body
        self._space, self._body = [], ""
        return text
