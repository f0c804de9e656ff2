"""Post-processing of whole responses for :meth:`ModelAdapter.postprocess`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, List

import attrs

from jarvis_core.types import Completion

if TYPE_CHECKING:
    from jarvis_core.defaults.adapter import ModelAdapter

__all__ = ["postprocess_completion", "reasoning_options"]


def reasoning_options(parser_cls: Any, text: str) -> Dict[str, Any]:
    """How to run a family's reasoning parser on text whose prompt we do not know.

    With an end tag in the text, the family's own rules apply (thinking on). Without one, only an explicit
    opening tag makes reasoning, so a plain answer from a model with thinking off is never taken for
    truncated thinking.
    """
    end = getattr(parser_cls, "end_token", None)
    if end and end in text:
        return {"enable_thinking": True, "thinking": True}
    return {"tags_only": True}


def postprocess_completion(adapter: ModelAdapter, completion: Completion, tools: Any) -> Completion:
    content, reasoning = completion.content, completion.reasoning
    calls = tuple(completion.tool_calls)
    notes: List[str] = []

    if content and not reasoning:
        cls = adapter._load("reasoning", adapter.reasoning_parser)
        if cls is not None:
            parser = cls(**reasoning_options(cls, content))
            split = parser.parse(content)
            content, reasoning = split.content, split.reasoning
            notes.extend(str(d) for d in split.diagnostics)

    if content and not calls:
        cls = adapter._load("tool", adapter.tool_parser)
        if cls is not None and (tools or getattr(cls, "always_parse", False)):
            parsed = cls(tools, stream_friendly=True).parse(content)
            content, calls = parsed.content, tuple(parsed.tool_calls)
            if parsed.reasoning:
                reasoning = parsed.reasoning if not reasoning else reasoning + parsed.reasoning
            notes.extend(str(d) for d in parsed.diagnostics)

    if (content, reasoning, calls) == (completion.content, completion.reasoning, tuple(completion.tool_calls)) and not notes:
        return completion
    finish = completion.finish_reason
    if calls and not completion.tool_calls and finish == "stop":
        finish = "tool_calls"
    metadata = dict(completion.metadata)
    if notes:
        metadata["parser_diagnostics"] = notes
    return attrs.evolve(completion, content=content, reasoning=reasoning, tool_calls=calls, finish_reason=finish, metadata=metadata)
