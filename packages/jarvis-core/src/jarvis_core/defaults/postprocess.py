"""Post-processing of whole responses for :meth:`ModelAdapter.postprocess`: a :class:`Completion` run
through the parsers its :class:`~jarvis_core.parsers.compose.ParserPlan` names."""

from __future__ import annotations

from typing import Any

import attrs

from jarvis_core.parsers.compose import ParserPlan
from jarvis_core.types import Completion

__all__ = ["postprocess_completion"]


def postprocess_completion(plan: ParserPlan, completion: Completion, tools: Any) -> Completion:
    """``completion`` with inline reasoning split out of its content and text-form tool calls parsed, where
    the server did not already do either; unchanged (the same object) when nothing was found."""
    content = completion.content
    if not content:
        return completion
    parser = plan.for_text(content, tools, reasoning=not completion.reasoning, calls=not completion.tool_calls)
    if parser is None:
        return completion
    parser.feed(content)
    parser.finish()
    out = parser.result
    reasoning = completion.reasoning
    if out.reasoning:
        reasoning = out.reasoning if not reasoning else reasoning + out.reasoning
    calls = tuple(completion.tool_calls) + out.tool_calls
    notes = [str(d) for d in out.diagnostics]
    if (out.content, reasoning, calls) == (content, completion.reasoning, tuple(completion.tool_calls)) and not notes:
        return completion
    finish = completion.finish_reason
    if out.tool_calls and finish == "stop":
        finish = "tool_calls"
    metadata = dict(completion.metadata)
    if notes:
        metadata["parser_diagnostics"] = notes
    return attrs.evolve(completion, content=out.content, reasoning=reasoning, tool_calls=calls, finish_reason=finish,
                        metadata=metadata)
