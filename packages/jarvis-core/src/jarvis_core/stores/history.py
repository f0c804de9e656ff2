"""Cutting a stored conversation without splitting a tool-call group: :func:`whole_groups`.

A *tool-call group* is an assistant message with ``tool_calls`` followed by the ``tool`` messages that answer
those calls. Chat APIs reject a ``tool`` message whose call is not in the conversation, and an assistant call
without its results, so a window over the history must hold each group whole or not at all.
"""

from __future__ import annotations

from typing import List, Sequence

from jarvis_core.types import Message, Role

__all__ = ["whole_groups"]


def whole_groups(messages: Sequence[Message]) -> List[Message]:
    """``messages`` without any part of a tool-call group that is not whole.

    Dropped: ``tool`` messages at the start whose assistant call was cut off, ``tool`` messages answering no
    call of the assistant message before them, and an assistant message with calls whose results are not all
    there (with the partial results). Everything else keeps its order.
    """
    out: List[Message] = []
    i = 0
    n = len(messages)
    while i < n:
        msg = messages[i]
        if msg.role is Role.TOOL:
            i += 1  # an orphan result: its call is not in the window
            continue
        if msg.role is Role.ASSISTANT and msg.tool_calls:
            wanted = {c.id for c in msg.tool_calls}
            j = i + 1
            seen = set()
            while j < n and messages[j].role is Role.TOOL:
                seen.add(messages[j].tool_call_id)
                j += 1
            results = [m for m in messages[i + 1:j] if m.tool_call_id in wanted]
            if wanted <= seen:
                out.append(msg)
                out.extend(results)
            i = j
            continue
        out.append(msg)
        i += 1
    return out
