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

from typing import TYPE_CHECKING, List

from jarvis_core.parsers.base import Diagnostic, ParsedDelta, normalize_arguments
from jarvis_core.parsers.modes import PrefixTailParser, failed

if TYPE_CHECKING:
    from jarvis_core.types import ToolCall

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


class DeepSeekV3Parser(PrefixTailParser):
    """``deepseek_v3``."""

    name = "deepseek_v3"
    start_markers = (BEGIN,)

    def _decide(self, held: str) -> List[ParsedDelta]:
        section = held[len(BEGIN) :]
        end = section.find(END)
        if end != -1:
            section = section[:end]
        calls: List[ToolCall] = []
        notes: List[Diagnostic] = []
        pos = section.find(CALL)
        while pos != -1:
            close = section.find(CALL_END, pos)
            if close == -1:
                notes.append(Diagnostic("unfinished_call", "the last tool call is not finished; dropped"))
                break
            inner = section[pos + len(CALL) : close]
            pos = section.find(CALL, close)
            sep = inner.find(SEP)
            if sep == -1:
                notes.append(Diagnostic("invalid_call", "a tool call has no separator; skipped"))
                continue
            head, tail = inner[:sep].strip(), inner[sep + len(SEP) :]
            if head in ("function", ""):
                nl = tail.find("\n")
                name, args_text = (tail, "") if nl == -1 else (tail[:nl], tail[nl + 1 :])
            else:
                name, args_text = head, tail
            name = name.strip()
            if not name:
                notes.append(Diagnostic("invalid_call", "a tool call has no name; skipped"))
                continue
            args, valid = normalize_arguments(_unfence(args_text) or "{}")
            if not valid:
                notes.append(Diagnostic("invalid_arguments", f"arguments of {name!r} are not valid JSON"))
            calls.append(self.calls.call(len(calls), name, args))
        if not calls:
            out = failed(held, "no_valid_call", "no complete tool call in the section; kept as content")
            return [ParsedDelta(content=out[0].content, diagnostics=out[0].diagnostics + tuple(notes))]
        return [ParsedDelta(tool_calls=tuple(calls), diagnostics=tuple(notes))]


class DeepSeekV31Parser(DeepSeekV3Parser):
    """``deepseek_v31``: the V3.1 shape (the same parser; both shapes are accepted)."""

    name = "deepseek_v31"
