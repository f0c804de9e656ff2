"""Catching a model that repeats itself, from its streamed text, with few false positives.

Two checks run on the text as it streams in:

* **Repeated lines** (reason ``repeated_line_loop``): a completed line, or a short cycle of up to
  ``max_cycle_lines`` lines, repeats ``repeats`` times back to back. Lines are compared after dropping list
  numbering and bullets (``44. Cats are…`` and ``45. Cats are…`` count as the same line) and collapsing
  whitespace. Blank lines and rule-like lines (``---``, ``|---|:--|``, ``***``, ``===``) are transparent:
  they neither count nor break a run, because documents repeat them legitimately. A cycle must carry at
  least ``min_line_chars`` characters, so ``}`` or ``end`` lines never fire. Inside a fenced code block the
  threshold is ``fence_repeats``, because code repeats short statements on purpose.
* **A runaway line** (reason ``repeated_text_loop``): the line being written has not ended, is long, and
  its tail is one piece of at least ``text_cycle_min`` characters repeated ``text_cycle_repeats`` times
  (SmolLM2 does this: one sentence over and over, never a newline). Short units without letters (``0, 0,
  0, …`` in a data literal) are left alone.

The detector is fed deltas of any size and costs amortised O(1) per character for the line check; the
runaway check runs only every ``text_cycle_min`` new characters of a long line.
"""

from __future__ import annotations

import re
from typing import Any, Callable, List, Optional

import attrs

from jarvis_core.errors import ConfigError

__all__ = ["LoopDetector", "LoopDetectorConfig", "LoopVerdict", "normalize_line"]

_ENUMERATOR = re.compile(r"^\s*(?:[-*+•>]+\s+|\(?\d{1,4}[.):]\s*|\(?[a-zA-Z][.)]\s+|#{1,6}\s+)+")
_SPACES = re.compile(r"\s+")
_RULE_CHARS = frozenset("-=_*~|:+#. \t")
_FENCE = re.compile(r"^\s*(```|~~~)")
#: Lines are compared on at most this many leading characters (keeps memory bounded on a runaway line).
_LINE_CAP = 8192


def _at_least(minimum: int) -> Callable[[object, attrs.Attribute[Any], int], None]:
    def check(_inst: object, attr: attrs.Attribute[Any], value: int) -> None:
        if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
            raise ConfigError(f"loop detector {attr.name} must be an integer >= {minimum}, got {value!r}", key=attr.name)

    return check


@attrs.frozen
class LoopDetectorConfig:
    """Thresholds of :class:`LoopDetector` (see the module docstring for what each one means)."""

    enabled: bool = True
    min_line_chars: int = attrs.field(default=12, validator=_at_least(1))
    repeats: int = attrs.field(default=6, validator=_at_least(2))
    fence_repeats: int = attrs.field(default=12, validator=_at_least(2))
    max_cycle_lines: int = attrs.field(default=8, validator=_at_least(1))
    text_cycle_min: int = attrs.field(default=32, validator=_at_least(4))
    text_cycle_max: int = attrs.field(default=400, validator=_at_least(4))
    text_cycle_repeats: int = attrs.field(default=5, validator=_at_least(2))


@attrs.frozen
class LoopVerdict:
    """Why the detector fired: ``reason`` (``repeated_line_loop`` or ``repeated_text_loop``), the repeated
    ``line`` (for a cycle of several lines, the lines joined with `` / ``), how many ``repeats`` were seen and
    the cycle length in lines (0 for a runaway line)."""

    reason: str
    line: str
    repeats: int
    cycle_lines: int = 1


def normalize_line(line: str) -> str:
    """The comparable form of a line: numbering and bullets dropped, whitespace collapsed, lowercase."""
    return _SPACES.sub(" ", _ENUMERATOR.sub("", line)).strip().lower()


def _smallest_period(text: str) -> int:
    """The smallest p such that ``text`` repeats itself every p characters (its length when none does)."""
    for p in range(1, len(text)):
        if text[p:] == text[:-p]:
            return p
    return len(text)


def _is_transparent(line: str) -> bool:
    stripped = line.strip()
    return not stripped or all(ch in _RULE_CHARS for ch in stripped)


class LoopDetector:
    """Feed it streamed text with :meth:`feed`; it returns a :class:`LoopVerdict` once, when a loop shows."""

    def __init__(self, config: Optional[LoopDetectorConfig] = None) -> None:
        self.config = config or LoopDetectorConfig()
        self._pending: List[str] = []  # the start of the line not yet ended (at most _LINE_CAP chars)
        self._pending_len = 0  # the whole length of that line
        self._head_len = 0
        self._tail = ""  # the end of that line, long enough for the runaway check
        self._tail_cap = self.config.text_cycle_max * self.config.text_cycle_repeats
        self._next_text_check = self._text_check_start()
        self._history: List[str] = []  # normalized significant lines, newest last (bounded)
        self._raw: List[str] = []  # the same lines as written, for the verdict
        self._in_fence = False
        self.verdict: Optional[LoopVerdict] = None

    def _text_check_start(self) -> int:
        return self.config.text_cycle_min * self.config.text_cycle_repeats

    def feed(self, text: str) -> Optional[LoopVerdict]:
        """Take the next piece of streamed text; return the verdict when this piece completes a loop."""
        if self.verdict is not None or not self.config.enabled or not text:
            return None
        start = 0
        while True:
            nl = text.find("\n", start)
            if nl < 0:
                break
            self._add_piece(text[start:nl])
            line = "".join(self._pending)
            self._pending.clear()
            self._pending_len = self._head_len = 0
            self._tail = ""
            self._next_text_check = self._text_check_start()
            verdict = self._end_line(line)
            if verdict is not None:
                self.verdict = verdict
                return verdict
            start = nl + 1
        if start < len(text):
            self._add_piece(text[start:])
            if self._pending_len >= self._next_text_check:
                self._next_text_check = self._pending_len + self.config.text_cycle_min
                verdict = self._check_runaway()
                if verdict is not None:
                    self.verdict = verdict
                    return verdict
        return None

    def _add_piece(self, piece: str) -> None:
        self._pending_len += len(piece)
        room = _LINE_CAP - self._head_len
        if room > 0:
            self._pending.append(piece[:room])
            self._head_len += min(room, len(piece))
        tail = self._tail + piece
        self._tail = tail[-self._tail_cap:] if len(tail) > self._tail_cap else tail

    # -- repeated lines ---------------------------------------------------------------------------
    def _end_line(self, line: str) -> Optional[LoopVerdict]:
        if _FENCE.match(line):
            self._in_fence = not self._in_fence
            self._history.clear()  # a fence boundary starts a new context
            self._raw.clear()
            return None
        if _is_transparent(line):
            return None
        cfg = self.config
        self._history.append(normalize_line(line))
        self._raw.append(line.strip())
        need = cfg.fence_repeats if self._in_fence else cfg.repeats
        keep = cfg.max_cycle_lines * max(cfg.repeats, cfg.fence_repeats)
        if len(self._history) > 2 * keep:
            del self._history[:-keep]
            del self._raw[:-keep]
        hist = self._history
        for period in range(1, cfg.max_cycle_lines + 1):
            span = period * need
            if len(hist) < span:
                break
            cycle = hist[-period:]
            if sum(len(s) for s in cycle) < cfg.min_line_chars:
                continue
            if period > 1 and len(set(cycle)) == 1:
                continue  # already covered by period 1
            if all(hist[-span + i] == cycle[i % period] for i in range(span - period)):
                return LoopVerdict("repeated_line_loop", " / ".join(self._raw[-period:]), need, period)
        return None

    # -- one runaway line -------------------------------------------------------------------------
    def _check_runaway(self) -> Optional[LoopVerdict]:
        # Candidate periods are the distances back to earlier copies of the last text_cycle_min characters,
        # found with rfind (C speed); only those few are verified.
        cfg = self.config
        text = self._tail
        reps = cfg.text_cycle_repeats
        size = cfg.text_cycle_min
        needle = text[-size:]
        if _smallest_period(needle) < size and not any(ch.isalpha() for ch in needle):
            return None  # a short repeated unit without words: data such as "0, 0, 0, …", not a loop
        end = len(text) - 1
        while True:
            pos = text.rfind(needle, 0, end)
            if pos < 0:
                return None
            period = len(text) - size - pos
            if period > cfg.text_cycle_max or period * reps > len(text):
                return None
            end = pos + size - 1
            if period < size:
                continue
            unit = text[-period:]
            if all(ch in _RULE_CHARS for ch in unit) or not text.endswith(unit * reps):
                continue
            cut = unit.find(". ")  # report the unit from a sentence start when there is one
            if cut >= 0:
                unit = unit[cut + 2:] + unit[:cut + 2]
            return LoopVerdict("repeated_text_loop", unit.strip(), reps, 0)
