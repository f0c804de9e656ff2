"""``deepseek_v3`` and ``deepseek_v31``: DeepSeek's special-token call sections.

Written here with ASCII stand-ins (the real tokens use U+FF5C FULLWIDTH VERTICAL LINE for ``|`` and
U+2581 LOWER ONE EIGHTH BLOCK for ``_``)::

    content<|tool_calls_begin|><|tool_call_begin|>function<|tool_sep|>NAME
    ```json
    {args}
    ```<|tool_call_end|>\n<|tool_call_begin|>...<|tool_calls_end|>

V3.1 drops the type and the fence: ``<|tool_call_begin|>NAME<|tool_sep|>{args}<|tool_call_end|>``; both
parsers accept both shapes. Arguments may span lines (vLLM's regex misses pretty-printed arguments; we do
not). Arguments are passed through when they are not JSON, with a diagnostic. Content is the text before
the section.
"""

from __future__ import annotations

from typing import List, Optional, Tuple

from jarvis_core.parsers.base import Diagnostic
from jarvis_core.parsers.modes import SectionParser

__all__ = ["DeepSeekV3Parser", "DeepSeekV31Parser"]

_BAR, _SP = "\uff5c", "\u2581"


def _token(words: str) -> str:
    return "<" + _BAR + words.replace("_", _SP) + _BAR + ">"


BEGIN = _token("tool_calls_begin")
END = _token("tool_calls_end")
CALL = _token("tool_call_begin")
CALL_END = _token("tool_call_end")
SEP = _token("tool_sep")


def _unfence(text: str) -> str:
    body = text.strip()
    if body.startswith("```"):
        nl = body.find("\n")
        body = body[nl + 1 :] if nl != -1 else ""
    if body.endswith("```"):
        body = body[:-3]
    return body.strip()


class DeepSeekV3Parser(SectionParser):
    """``deepseek_v3``."""

    name = "deepseek_v3"
    start_markers = (BEGIN,)
    call_begin, call_end = CALL, CALL_END

    def _section(self, held: str) -> str:
        section = held[len(BEGIN) :]
        end = section.find(END)
        return section if end == -1 else section[:end]

    def _read_call(self, inner: str, notes: List[Diagnostic]) -> Optional[Tuple[str, str, Optional[str]]]:
        sep = inner.find(SEP)
        if sep == -1:
            notes.append(Diagnostic("invalid_call", "a tool call has no separator; skipped"))
            return None
        head, tail = inner[:sep].strip(), inner[sep + len(SEP) :]
        if head in ("function", ""):
            nl = tail.find("\n")
            name, args_text = (tail, "") if nl == -1 else (tail[:nl], tail[nl + 1 :])
        else:
            name, args_text = head, tail
        return name.strip(), _unfence(args_text), None


class DeepSeekV31Parser(DeepSeekV3Parser):
    """``deepseek_v31``: the V3.1 shape (the same parser; both shapes are accepted)."""

    name = "deepseek_v31"
