"""Tool calling for models without native support: the tool call as a JSON-schema constrained response.

In ``json_schema`` mode the request carries no ``tools``. Instead ``response_format`` holds a JSON schema
whose branches are ``{"name": <tool>, "arguments": <that tool's parameter schema>}`` (plus, unless a call
is required, ``{"content": <text>}`` for a direct answer), and a system note lists the tools. The server
constrains decoding to the schema (llama.cpp turns it into a grammar; vLLM, SGLang and LM Studio have
their own guided decoding), so even a 135M-parameter model answers with a well-formed call, which
:func:`parse_constrained` turns into a :class:`~jarvis_core.types.ToolCall`.

Conversation history is rewritten to match: earlier assistant calls become their JSON text and tool
results become user messages, because templates without tool support cannot render either.
"""

from __future__ import annotations

import json
import uuid
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from jarvis_core.errors import InvalidOptionError
from jarvis_core.types import ToolCall

__all__ = [
    "TOOL_MODES",
    "ConflictingOptionError",
    "constrained_messages",
    "constrained_response_format",
    "parse_constrained",
]

#: ``native``: OpenAI ``tools``; ``json_schema``: constrained response; ``auto``: the engine decides.
TOOL_MODES = ("auto", "native", "json_schema")
SCHEMA_NAME = "tool_call"


class ConflictingOptionError(InvalidOptionError):
    """Two options that cannot be used together (e.g. ``response_format`` in ``json_schema`` tool mode)."""

    def __init__(self, engine_id: str, names: Sequence[str], message: str) -> None:
        self.engine_id = engine_id
        self.names = tuple(names)
        self.allowed = ()
        Exception.__init__(self, f"{engine_id}: {message}")


def _forced_name(tool_choice: Any) -> Optional[str]:
    if isinstance(tool_choice, Mapping):
        fn = tool_choice.get("function")
        if isinstance(fn, Mapping) and fn.get("name"):
            return str(fn["name"])
    return None


def constrained_response_format(tools: Sequence[Mapping[str, Any]], tool_choice: Any = None) -> Dict[str, Any]:
    """The ``response_format`` for OpenAI-style ``tools`` under ``tool_choice`` (auto, required or a name)."""
    forced = _forced_name(tool_choice)
    branches: List[Dict[str, Any]] = []
    for tool in tools:
        fn = tool["function"]
        if forced and fn["name"] != forced:
            continue
        params = fn.get("parameters") or {"type": "object", "properties": {}}
        branches.append({
            "type": "object",
            "properties": {"name": {"const": fn["name"]}, "arguments": params},
            "required": ["name", "arguments"],
            "additionalProperties": False,
        })
    if not branches:
        raise ConflictingOptionError("", ["tool_choice"], f"tool_choice names {forced!r}, which is not among the tools")
    if tool_choice in (None, "auto") and not forced:
        branches.append({
            "type": "object",
            "properties": {"content": {"type": "string"}},
            "required": ["content"],
            "additionalProperties": False,
        })
    schema = branches[0] if len(branches) == 1 else {"anyOf": branches}
    return {"type": "json_schema", "json_schema": {"name": SCHEMA_NAME, "schema": schema, "strict": True}}


def _tool_note(tools: Sequence[Mapping[str, Any]], tool_choice: Any) -> str:
    listing = "\n".join(
        json.dumps({k: t["function"].get(k) for k in ("name", "description", "parameters")}, ensure_ascii=False)
        for t in tools
    )
    if tool_choice in (None, "auto") and not _forced_name(tool_choice):
        how = ('To call a tool, reply with {"name": <tool name>, "arguments": {...}}. '
               'To answer directly, reply with {"content": <your answer>}.')
    else:
        how = 'Call a tool: reply with {"name": <tool name>, "arguments": {...}}.'
    return f"You can use these tools:\n{listing}\n{how}"


def constrained_messages(
    messages: List[Dict[str, Any]], tools: Sequence[Mapping[str, Any]], tool_choice: Any = None
) -> List[Dict[str, Any]]:
    """OpenAI chat dicts rewritten for a model without tool support, with the tool note in the system message."""
    out: List[Dict[str, Any]] = []
    for msg in messages:
        role = msg.get("role")
        if role == "assistant" and msg.get("tool_calls"):
            calls = []
            for call in msg["tool_calls"]:
                fn = call.get("function") or call
                args = fn.get("arguments") or "{}"
                try:
                    args = json.loads(args) if isinstance(args, str) else args
                except ValueError:
                    pass
                calls.append(json.dumps({"name": fn.get("name"), "arguments": args}, ensure_ascii=False))
            text = "\n".join(c for c in [msg.get("content") or "", *calls] if c)
            out.append({"role": "assistant", "content": text})
        elif role == "tool":
            name = msg.get("name") or "the tool"
            out.append({"role": "user", "content": f"Result of {name}: {msg.get('content') or ''}"})
        else:
            out.append(msg)
    note = _tool_note(tools, tool_choice)
    if out and out[0].get("role") == "system" and isinstance(out[0].get("content"), str):
        out[0] = {**out[0], "content": f"{out[0]['content']}\n\n{note}"}
    else:
        out.insert(0, {"role": "system", "content": note})
    return out


def parse_constrained(text: Optional[str], tool_names: Sequence[str]) -> Tuple[Optional[str], Tuple[ToolCall, ...], Optional[str]]:
    """``(content, tool_calls, diagnostic)`` from a constrained reply. Never raises on model output.

    A reply that is not the expected JSON (cut off by ``max_tokens``, a server that ignored the schema)
    comes back as plain content with a diagnostic.
    """
    if not text or not text.strip():
        return None, (), "the model returned no text for the constrained tool call"
    try:
        obj = json.loads(text)
    except ValueError as exc:
        return text, (), f"the constrained reply is not valid JSON ({exc.msg} at {exc.pos})"
    if isinstance(obj, dict) and isinstance(obj.get("name"), str) and "arguments" in obj:
        name = obj["name"]
        if name not in tool_names:
            return text, (), f"the constrained reply calls an unknown tool {name!r}"
        args = obj["arguments"]
        arguments = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)
        return None, (ToolCall(id=f"call_{uuid.uuid4().hex[:24]}", name=name, arguments=arguments),), None
    if isinstance(obj, dict) and isinstance(obj.get("content"), str):
        return obj["content"], (), None
    return text, (), "the constrained reply has neither a tool call nor content"
