"""``granite`` reasoning: Granite 3.x writes ``Here is my thought process: … Here is my response: …``.

The output must open with the thought phrase (``Here's`` is accepted too, as some quantized models write
it); reasoning counts only once the response phrase arrives, so it is held until then. Without both
phrases everything is content, as in vLLM.
"""

from __future__ import annotations

from typing import Any, List, Optional

from jarvis_core.parsers.base import ParsedDelta, ReasoningParser
from jarvis_core.parsers.scan import LeadingGate, MarkerWatcher

__all__ = ["GraniteReasoning"]

THOUGHT = ("Here is my thought process:", "Here's my thought process:")
RESPONSE = ("Here is my response:", "Here's my response:")


class GraniteReasoning(ReasoningParser):
    """``granite``."""

    name = "granite"

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self._gate: Optional[LeadingGate] = LeadingGate(THOUGHT)
        self._opening = ""
        self._parts: Optional[List[str]] = None
        self._watch = MarkerWatcher(RESPONSE)
        self._post = False

    def _feed(self, delta: str) -> List[ParsedDelta]:
        if self._post:
            return [ParsedDelta(content=delta)]
        if self._gate is not None:
            decided = self._gate.feed(delta)
            if decided is None:
                return []
            opener, seen = decided
            self._gate = None
            if opener is None:
                self._post = True
                return [ParsedDelta(content=seen)]
            cut = seen.index(opener) + len(opener)
            self._opening, self._parts = seen[:cut], []
            delta = seen[cut:]
        assert self._parts is not None
        safe, marker, rest = self._watch.feed(delta)
        self._parts.append(safe)
        if marker is None:
            return []
        self._post = True
        return [ParsedDelta(reasoning="".join(self._parts), content=rest[len(marker) :])]

    def _finish(self) -> List[ParsedDelta]:
        if self._post:
            return []
        if self._gate is not None:
            return [ParsedDelta(content=self._gate.flush())]
        assert self._parts is not None
        return [ParsedDelta(content=self._opening + "".join(self._parts) + self._watch.flush())]

    def held_text(self) -> str:
        if self._gate is not None:
            return self._gate.peek()
        if self._parts is not None and not self._post:
            return self._opening + "".join(self._parts) + self._watch.held
        return ""
