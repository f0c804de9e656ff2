"""Tool calling through a JSON schema, for models whose chat template knows no tools (SmolLM2, many small
models): the ``json_schema`` tool mode.

The request carries ``response_format: {type: json_schema}`` with a schema whose ``tool_calls`` items are
exactly the offered tools (name as a constant, arguments as the tool's own schema); llama.cpp turns it into
a grammar, so the model can only produce well-formed calls. The worker parses the reply into
:class:`~jarvis_core.types.ToolCall` objects and from there runs the same loop as in native mode. Results
go back as one user message (such templates have no ``tool`` role).
"""

from __future__ import annotations

import json
from typing import Any, Dict, List, Sequence, Tuple

from jarvis_core.types import ToolCall, ToolResult, ToolSpec

__all__ = ["parse_turn", "results_message", "turn_response_format"]


def turn_response_format(tools: Sequence[ToolSpec], *, required: bool, max_calls: int) -> Dict[str, Any]:
    """The ``response_format`` for one turn: ``{"tool_calls": [...], "content": "..."}`` where every call is
    one of ``tools``; ``required`` demands at least one call."""
    items = {
        "anyOf": [
            {
                "type": "object",
                "properties": {"name": {"const": t.name}, "arguments": dict(t.parameters)},
                "required": ["name", "arguments"],
                "additionalProperties": False,
            }
            for t in tools
        ]
    }
    calls: Dict[str, Any] = {"type": "array", "items": items, "maxItems": max_calls}
    if required:
        calls["minItems"] = 1
    schema = {
        "type": "object",
        "properties": {"tool_calls": calls, "content": {"type": "string"}},
        "required": ["tool_calls"],
        "additionalProperties": False,
    }
    return {"type": "json_schema", "json_schema": {"name": "turn", "strict": True, "schema": schema}}


def parse_turn(text: str, iteration: int) -> Tuple[List[ToolCall], str, str]:
    """Split a JSON-mode reply into (calls, content, problem). Never raises: text that is not the expected
    JSON comes back as content, with ``problem`` saying what was wrong."""
    try:
        obj = json.loads(text)
    except ValueError as exc:
        return [], text, f"the reply is not valid JSON ({exc.msg} at {exc.pos}); kept as text"
    if not isinstance(obj, dict):
        return [], text, "the reply is not a JSON object; kept as text"
    content = obj.get("content")
    content = content if isinstance(content, str) else ""
    calls: List[ToolCall] = []
    raw_calls = obj.get("tool_calls") or []
    if not isinstance(raw_calls, list):
        return [], content or text, "tool_calls is not a list; ignored"
    for i, raw in enumerate(raw_calls):
        if not isinstance(raw, dict) or not isinstance(raw.get("name"), str):
            continue
        args = raw.get("arguments", {})
        calls.append(ToolCall(id=f"call_{iteration}_{i}", name=raw["name"],
                              arguments=json.dumps(args, ensure_ascii=False)))
    return calls, content, ""


def results_message(results: Sequence[ToolResult], turns_left: int) -> str:
    """The user message that hands tool results back in JSON mode."""
    payload = [{"id": r.tool_call_id, "name": r.name, "ok": r.ok, "output": r.content} for r in results]
    return (
        "Tool results:\n" + json.dumps(payload, ensure_ascii=False)
        + f"\nTool turns left: {turns_left}."
    )
