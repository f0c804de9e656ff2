"""gpt-oss Harmony output: tool parser ``openai`` and reasoning parser ``openai_gptoss``.

Messages look like ``<|start|>assistant<|channel|>CHANNEL[ to=RECIPIENT] [<|constrain|>json]<|message|>TEXT``
ended by ``<|end|>``, ``<|call|>`` or ``<|return|>``; the first message's ``<|start|>assistant`` is in the
prompt, so output may open with ``<|channel|>``. The recipient may also sit before ``<|channel|>``.

- ``analysis`` messages are the reasoning;
- ``final`` messages are the content;
- a message to ``functions.NAME`` is a tool call (its text is the JSON arguments);
- a ``commentary`` message without a recipient is a user-visible preamble: it is the content only when
  there is no ``final`` message, so it is held until the end.

vLLM parses Harmony from token ids; here the same rules run on text. The reasoning parser keeps everything
that is not ``analysis`` as raw Harmony text in ``content``, so a tool parser can run after it (vLLM's order:
reasoning first, then tools).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, List, Optional

from jarvis_core.parsers.base import Diagnostic, ParsedDelta, ReasoningParser, ToolParser, normalize_arguments
from jarvis_core.parsers.modes import CallBuilder
from jarvis_core.parsers.scan import MarkerWatcher

if TYPE_CHECKING:
    from jarvis_core.types import ToolCall

__all__ = ["HarmonyReasoningParser", "HarmonyToolParser"]

START, CHANNEL, MESSAGE, CONSTRAIN = "<|start|>", "<|channel|>", "<|message|>", "<|constrain|>"
ENDS = ("<|end|>", "<|call|>", "<|return|>")
_RECIPIENT = re.compile(r"to=([^\s<]+)")

OUTSIDE, HEADER, BODY = 0, 1, 2


class _Message:
    __slots__ = ("channel", "parts", "recipient")

    def __init__(self, header: str) -> None:
        text = header.replace(MESSAGE, " ").replace(START, " ").replace(CONSTRAIN, " ")
        _, _, after = text.partition(CHANNEL)
        words = after.split()
        self.channel = words[0] if words else ""
        m = _RECIPIENT.search(text)
        self.recipient: Optional[str] = m.group(1) if m else None
        self.parts: List[str] = []


class _HarmonyMachine:
    """The shared state machine; ``raw=True`` passes non-analysis messages through as raw text."""

    def __init__(self, raw: bool) -> None:
        self.raw = raw
        self.state = OUTSIDE
        self.watch = MarkerWatcher((START, CHANNEL))
        self.header: List[str] = []
        self.msg: Optional[_Message] = None
        self.preamble: List[str] = []
        self.calls: List[tuple[Any, ...]] = []
        self.notes: List[Diagnostic] = []
        self.saw_final = False
        self.saw_reasoning = False

    # routing ---------------------------------------------------------------------------------
    def _body(self, text: str, out: List[ParsedDelta]) -> None:
        msg = self.msg
        if not text or msg is None:
            return
        if msg.channel == "analysis" and msg.recipient is None:
            out.append(ParsedDelta(reasoning=text))
        elif self.raw:
            out.append(ParsedDelta(content=text))
        elif msg.recipient is not None:
            msg.parts.append(text)
        elif msg.channel == "final":
            out.append(ParsedDelta(content=text))
        else:
            self.preamble.append(text)

    def _open(self, header: str, out: List[ParsedDelta]) -> None:
        self.msg = _Message(header)
        msg = self.msg
        if msg.channel == "analysis" and msg.recipient is None:
            if self.saw_reasoning:
                out.append(ParsedDelta(reasoning="\n"))
            self.saw_reasoning = True
        elif self.raw:
            out.append(ParsedDelta(content=header))
        elif msg.channel == "final" and msg.recipient is None:
            if self.saw_final:
                out.append(ParsedDelta(content="\n"))
            self.saw_final = True
        elif msg.recipient is None and self.preamble:
            self.preamble.append("\n")

    def _close(self, end: str, out: List[ParsedDelta]) -> None:
        msg, self.msg = self.msg, None
        if msg is None:
            return
        if self.raw and not (msg.channel == "analysis" and msg.recipient is None):
            if end:
                out.append(ParsedDelta(content=end))
            return
        if msg.recipient is None:
            return
        if msg.recipient.startswith("functions."):
            self.calls.append((msg.recipient[len("functions.") :], "".join(msg.parts), bool(end)))
        else:
            self.notes.append(Diagnostic("builtin_tool", f"message to {msg.recipient!r} (a built-in tool) ignored"))

    # driving ---------------------------------------------------------------------------------
    def feed(self, text: str) -> List[ParsedDelta]:
        out: List[ParsedDelta] = []
        while text:
            safe, marker, rest = self.watch.feed(text)
            text = ""
            if self.state == OUTSIDE:
                if safe:
                    out.append(ParsedDelta(content=safe))
                if marker is not None:
                    self.state, self.header = HEADER, [marker]
                    self.watch = MarkerWatcher((MESSAGE,))
                    text = rest[len(marker) :]
            elif self.state == HEADER:
                self.header.append(safe)
                if marker is not None:
                    self._open("".join(self.header) + MESSAGE, out)
                    self.state, self.header = BODY, []
                    self.watch = MarkerWatcher((*ENDS, START, CHANNEL))
                    text = rest[len(marker) :]
            else:
                self._body(safe, out)
                if marker is not None:
                    if marker in ENDS:
                        self._close(marker, out)
                        text = rest[len(marker) :]
                    else:  # a new message began without an end token
                        self._close("", out)
                        text = rest
                    self.state = OUTSIDE
                    self.watch = MarkerWatcher((START, CHANNEL))
        return out

    def held_text(self) -> str:
        """Text not yet routed: a partial marker, an unfinished header, a preamble or a call being written."""
        parts = ["".join(self.header), self.watch.held]
        if self.msg is not None and self.msg.parts:
            parts.insert(0, "".join(self.msg.parts))
        return "".join(parts)

    def finish(self) -> List[ParsedDelta]:
        out: List[ParsedDelta] = []
        held = self.watch.flush()
        if self.state == OUTSIDE and held:
            out.append(ParsedDelta(content=held))
        elif self.state == HEADER:
            text = "".join(self.header) + held
            self.notes.append(Diagnostic("unfinished_header", "output ended inside a message header"))
            out.append(ParsedDelta(content=text))
        elif self.state == BODY:
            self._body(held, out)
            self._close("", out)
        if not self.raw and not self.saw_final and self.preamble:
            out.append(ParsedDelta(content="".join(self.preamble)))
        return out


class HarmonyToolParser(ToolParser):
    """``openai``: tool calls, content (final, else preamble) and reasoning (analysis) from Harmony text."""

    name = "openai"
    #: Harmony is the message structure itself: visible content needs this parser even without tools.
    always_parse = True

    def __init__(self, tools: Any = None, **options: Any) -> None:
        super().__init__(tools, **options)
        self._m = _HarmonyMachine(raw=False)
        self._builder = CallBuilder()

    def _feed(self, delta: str) -> List[ParsedDelta]:
        return self._m.feed(delta)

    def held_text(self) -> str:
        return self._m.held_text()

    def _finish(self) -> List[ParsedDelta]:
        out = self._m.finish()
        calls: List[ToolCall] = []
        notes: List[Diagnostic] = list(self._m.notes)
        for name, body, complete in self._m.calls:
            args, valid = normalize_arguments(body.strip() or "{}")
            if not valid or not complete:
                notes.append(Diagnostic("invalid_arguments", f"arguments of {name!r} are not valid JSON (or cut off)"))
            calls.append(self._builder.call(len(calls), name, args))
        if calls or notes:
            out.append(ParsedDelta(tool_calls=tuple(calls), diagnostics=tuple(notes)))
        return out


class HarmonyReasoningParser(ReasoningParser):
    """``openai_gptoss``: ``analysis`` messages are reasoning; everything else stays (raw) content."""

    name = "openai_gptoss"

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self._m = _HarmonyMachine(raw=True)

    def _feed(self, delta: str) -> List[ParsedDelta]:
        return self._m.feed(delta)

    def _finish(self) -> List[ParsedDelta]:
        out = self._m.finish()
        if self._m.notes:
            out.append(ParsedDelta(diagnostics=tuple(self._m.notes)))
        return out
