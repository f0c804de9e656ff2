"""``think``: a scratchpad. The model writes a thought; the tool gives it back unchanged.

It gathers nothing and changes nothing. Some models plan better when they can "call" a thinking step, and
the thought then sits in the transcript where the next turn sees it. Its schema comes from its signature
(:func:`jarvis_core.tools.tool`).
"""

from __future__ import annotations

from typing import Annotated

from jarvis_core.tools import ToolPolicy, tool
from jarvis_core.tools.function import FunctionTool

__all__ = ["ThinkTool", "think"]


@tool(policy=ToolPolicy(side_effects="none", isolation="inline", timeout=None))
def think(thought: Annotated[str, {"maxLength": 4000}]) -> str:
    """Write down a thought or a plan. Returns it unchanged; it does not fetch or change anything.

    Args:
        thought: your reasoning
    """
    return thought


def ThinkTool() -> FunctionTool:  # the name the tool had as a class; callers build it the same way
    """The ``think`` tool (it keeps no state, so every caller gets the same one)."""
    return think
