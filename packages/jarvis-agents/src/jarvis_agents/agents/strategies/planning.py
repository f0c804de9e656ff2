"""``task_decomposition``: the planning call of ``phased`` and ``hierarchical``.

:data:`PLAN_PROMPT` asks for numbered phases; :func:`parse_phases` reads them (``1.``/``1)`` lines, else
``-``/``*`` bullets), at most ``max_phases``. ``phased`` puts the plan in the system message and the model
works through it in one loop; ``hierarchical`` runs one sub-loop per phase with its own turn budget, then asks
for the final answer.
"""

from __future__ import annotations

import re
from typing import List, Sequence

__all__ = ["PLAN_PROMPT", "parse_phases", "plan_section"]

PLAN_PROMPT = (
    "You plan work for an agent that has tools. Break the task into at most {max_phases} phases, each one short "
    "imperative line, as a numbered list (1. ..., 2. ...). Reply with the list only.")

_NUMBERED = re.compile(r"^\s*(?:phase\s*)?\d+\s*[.):-]\s*(.+?)\s*$", re.IGNORECASE)
_BULLET = re.compile(r"^\s*[-*•]\s+(.+?)\s*$")


def parse_phases(reply: str, max_phases: int) -> List[str]:
    """The phases of a plan reply, in order (``[]`` when it has no list)."""
    lines = (reply or "").splitlines()
    for pattern in (_NUMBERED, _BULLET):
        found = [m.group(1) for m in map(pattern.match, lines) if m and m.group(1)]
        if found:
            return found[:max_phases]
    return []


def plan_section(phases: Sequence[str]) -> str:
    """The system-message section that shows a ``phased`` plan."""
    steps = "\n".join(f"{n}. {p}" for n, p in enumerate(phases, start=1))
    return f"## Plan\nWork through these phases in order, then give your final answer:\n{steps}"
