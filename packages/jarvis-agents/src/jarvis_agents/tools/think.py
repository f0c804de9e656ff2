"""``think``: a scratchpad. The model writes a thought; the tool gives it back unchanged.

It gathers nothing and changes nothing. Some models plan better when they can "call" a thinking step, and
the thought then sits in the transcript where the next turn sees it.
"""

from __future__ import annotations

from jarvis_core.tools import BaseTool, ToolPolicy
from jarvis_core.types import ToolSpec

__all__ = ["ThinkTool"]


class ThinkTool(BaseTool):
    """``think(thought)`` → the thought."""

    spec = ToolSpec(
        name="think",
        description="Write down a thought or a plan. Returns it unchanged; it does not fetch or change anything.",
        parameters={
            "type": "object",
            "properties": {"thought": {"type": "string", "description": "your reasoning", "maxLength": 4000}},
            "required": ["thought"],
            "additionalProperties": False,
        },
    )
    policy = ToolPolicy(side_effects="none", isolation="inline", timeout=None)

    def run(self, thought: str) -> str:
        """Echo ``thought``."""
        return thought
