"""Finding the code a model wrote in a reply: Markdown fences, as CodeAct and RLM agents read them.

A fence runs when its language tag is ``python``, ``py``, ``python3`` or absent (a bare fence). Fences of
another language (```` ```json ````, ```` ```bash ````, ```` ```text ````) are text and never run. All
runnable blocks of one reply are joined, in order, into one cell (as smolagents does), so a model that
splits its code over several fences gets it all run. An unclosed last fence (the reply was cut off) still
counts. Reasoning (``<think>…</think>``) is removed before looking.
"""

from __future__ import annotations

import re
from typing import List

from jarvis_agents.agents.text_protocol import strip_reasoning

__all__ = ["RUNNABLE_TAGS", "code_blocks", "joined_code"]

#: Language tags whose blocks run (lower case; empty = a bare fence).
RUNNABLE_TAGS = frozenset({"", "python", "py", "python3"})

# A fence opens at the start of a line with three or more backticks and an optional tag; it closes at the
# next run of exactly as many backticks (models often end the last code line with it), or at the end.
_OPEN = re.compile(r"(?m)^[ \t]*(`{3,})[ \t]*([\w+\-.]*)[^\n]*\n")


def code_blocks(text: str) -> List[str]:
    """The bodies of the runnable fenced blocks of ``text``, in order (reasoning stripped first)."""
    text = strip_reasoning(text or "")
    blocks: List[str] = []
    pos = 0
    while True:
        opening = _OPEN.search(text, pos)
        if opening is None:
            return blocks
        fence, tag = opening.group(1), opening.group(2).lower()
        closing = re.compile(rf"(?<!`){fence}(?!`)").search(text, opening.end())
        body = text[opening.end(): closing.start() if closing else len(text)]
        if tag in RUNNABLE_TAGS and body.strip():
            blocks.append(body.rstrip("\n"))
        if closing is None:
            return blocks
        pos = closing.end()


def joined_code(text: str) -> str:
    """All runnable blocks of ``text`` as one cell (``""`` when there is none)."""
    return "\n\n".join(code_blocks(text))
