"""Reasoning parsers for tag-delimited thinking: ``<think>…</think>`` and relatives.

One state machine, configured per family (class attributes):

``starts_in_reasoning``
    True (``deepseek_r1``, ``qwen3``, ``kimi_k2``, …): the template put the opening tag in the prompt, so
    text is reasoning until the end tag; no end tag at all means the output is all reasoning (truncated
    thinking). An opening tag in the output is removed. False (``mistral``, ``glm45``, thinking disabled):
    text is content until an opening tag.
``strict``
    Reasoning counts only when it is closed (``glm45``): an unclosed block is held and, at the end, goes
    back to content with its tag.
``orphan_end``
    In content mode, what an end tag without an opening tag does: ``"drop"`` the tag (``mistral``) or
    ``"keep"`` it as text (``glm45``).
``implicit_ends``
    Markers that end reasoning without an end tag and start the content (``qwen3``: ``<tool_call>`` when
    ``<function`` follows; ``kimi_k2``: its tool section). The marker stays in the content.

Two deliberate differences from vLLM, both so that a stream never has to take back text it emitted: text
before an opening tag is kept (vLLM's whole-output path drops it) — as reasoning when the family starts
in reasoning, as content otherwise; and with thinking disabled an end tag without an opening tag is dropped
instead of turning the earlier content into reasoning.

Thinking is switched by ``enable_thinking=`` / ``thinking=`` options or ``chat_template_kwargs={...}``.
``tags_only=True`` (used by :class:`~jarvis_core.defaults.ModelAdapter` on streams, where the prompt is not
known) treats text as content unless an opening tag starts a reasoning block.
"""

from __future__ import annotations

from typing import Any, List, Optional, Sequence, Tuple

from jarvis_core.parsers.base import Diagnostic, ParsedDelta, ReasoningParser
from jarvis_core.parsers.scan import LeadingGate, MarkerWatcher

__all__ = ["ThinkParser"]

_FUNCTION_OPENERS = ("<function=", "<function ", "<function\n", "<function\t", "<function\r")

PRE_CONTENT, REASONING, LOOKAHEAD, POST = 0, 1, 2, 3


class ThinkParser(ReasoningParser):
    """``<think>…</think>`` reasoning, configured by the class attributes described in the module doc."""

    name = "think"
    start_token = "<think>"
    end_token = "</think>"
    starts_in_reasoning = True
    strict = False
    orphan_end = "drop"
    #: ``(marker, openers that must follow it after whitespace, or () for none)``
    implicit_ends: Sequence[Tuple[str, Tuple[str, ...]]] = ()
    #: chat-template keys that switch thinking, and the default
    thinking_keys: Tuple[str, ...] = ()
    thinking_default = True
    #: when thinking is off: "content" (still honour an explicit opening tag) or "identity" (no parsing)
    disabled_mode = "content"

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.thinking = self._thinking_enabled(options)
        tags_only = bool(options.get("tags_only"))
        self.identity = not tags_only and not self.thinking and self.disabled_mode == "identity"
        self._in_reasoning_first = self.starts_in_reasoning and self.thinking and not tags_only
        self.state = REASONING if self._in_reasoning_first else PRE_CONTENT
        self._start_removed = False
        self._strict_parts: Optional[List[str]] = None  # strict mode: reasoning held until closed
        self._gate: Optional[LeadingGate] = None
        self._pending_marker = ""
        self.watch = self._watcher()

    def _thinking_enabled(self, options: Any) -> bool:
        kwargs = dict(options.get("chat_template_kwargs") or {})
        for key in ("enable_thinking", "thinking"):
            if options.get(key) is not None:
                kwargs[key] = options[key]
        for key in self.thinking_keys or ("enable_thinking", "thinking"):
            if kwargs.get(key) is not None:
                return bool(kwargs[key])
        return self.thinking_default

    def _watcher(self) -> MarkerWatcher:
        if self.state == REASONING:
            markers = [self.end_token] + [m for m, _ in self.implicit_ends]
            if not self._start_removed and self._in_reasoning_first:
                markers.append(self.start_token)
            return MarkerWatcher(markers)
        return MarkerWatcher([self.start_token, self.end_token])

    # -- emitting --------------------------------------------------------------------------------
    def _reasoning(self, text: str, out: List[ParsedDelta]) -> None:
        if not text:
            return
        if self._strict_parts is not None:
            self._strict_parts.append(text)
        else:
            out.append(ParsedDelta(reasoning=text))

    def _to(self, state: int) -> None:
        self.state = state
        self.watch = self._watcher()

    # -- the machine ------------------------------------------------------------------------------
    def _feed(self, delta: str) -> List[ParsedDelta]:
        if self.identity or self.state == POST:
            return [ParsedDelta(content=delta)]
        out: List[ParsedDelta] = []
        text = delta
        while text and self.state != POST:
            if self.state == LOOKAHEAD:
                text = self._lookahead(text, out)
                continue
            safe, marker, rest = self.watch.feed(text)
            text = ""
            if self.state == PRE_CONTENT:
                if safe:
                    out.append(ParsedDelta(content=safe))
                if marker == self.start_token:
                    if self.strict:
                        self._strict_parts = []
                    self._to(REASONING)
                    text = rest[len(marker) :]
                elif marker == self.end_token:
                    if self.orphan_end == "keep":
                        out.append(ParsedDelta(content=marker))
                    else:
                        out.append(ParsedDelta(diagnostics=(Diagnostic("orphan_end_tag", f"{marker} without {self.start_token} dropped"),)))
                    self.watch = self._watcher()
                    text = rest[len(marker) :]
            else:  # REASONING
                self._reasoning(safe, out)
                if marker is None:
                    continue
                text = rest[len(marker) :]
                if marker == self.end_token:
                    self._close(out)
                    self._to(POST)
                elif marker == self.start_token:
                    self._start_removed = True
                    self.watch = self._watcher()
                else:
                    openers = dict(self.implicit_ends)[marker]
                    if not openers:
                        self._close(out)
                        self._to(POST)
                        text = rest
                    else:
                        self._pending_marker = marker
                        self._gate = LeadingGate(openers)
                        self.state = LOOKAHEAD
        if self.state == POST and text:
            out.append(ParsedDelta(content=text))
        return out

    def _close(self, out: List[ParsedDelta]) -> None:
        if self._strict_parts is not None:
            held = "".join(self._strict_parts)
            self._strict_parts = None
            if held:
                out.append(ParsedDelta(reasoning=held))

    def _lookahead(self, text: str, out: List[ParsedDelta]) -> str:
        """After an implicit-end marker: confirm (reasoning ends, marker starts the content) or refute."""
        assert self._gate is not None
        decided = self._gate.feed(text)
        if decided is None:
            return ""
        opener, seen = decided
        marker, self._gate, self._pending_marker = self._pending_marker, None, ""
        if opener is not None:
            self._close(out)
            self._to(POST)
            return marker + seen
        self._reasoning(marker, out)
        self.state = REASONING
        self.watch = self._watcher()
        return seen

    def _finish(self) -> List[ParsedDelta]:
        out: List[ParsedDelta] = []
        if self.identity or self.state == POST:
            return out
        if self.state == LOOKAHEAD:
            assert self._gate is not None
            self._reasoning(self._pending_marker + self._gate.flush(), out)
            self.state = REASONING
        held = self.watch.flush()
        if self.state == PRE_CONTENT:
            if held:
                out.append(ParsedDelta(content=held))
            return out
        self._reasoning(held, out)
        if self._strict_parts is not None:
            text = self.start_token + "".join(self._strict_parts)
            self._strict_parts = None
            out.append(ParsedDelta(content=text, diagnostics=(Diagnostic("unclosed_reasoning", f"{self.start_token} never closed; kept as content"),)))
        return out

    def held_text(self) -> str:
        parts = [self.watch.held]
        if self.state == LOOKAHEAD and self._gate is not None:
            parts.insert(0, self._pending_marker + self._gate.peek())
        return "".join(parts)
