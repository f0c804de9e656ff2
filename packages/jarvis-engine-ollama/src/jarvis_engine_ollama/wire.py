"""Ollama's ``/api/chat`` wire format: messages, tools and tool calls in both directions.

Ollama speaks OpenAI's message shape with three differences this module absorbs:

* tool-call ``arguments`` are JSON *objects* on the wire (a string is rejected with HTTP 400), while jarvis
  keeps them as JSON *strings* (:class:`~jarvis_core.types.ToolCall`);
* a tool result names its tool with ``tool_name`` (``tool_call_id`` is optional and newer);
* reasoning travels in ``thinking``.

Tool calls from the server get a unique id each: the server's ``call_…`` id when it sent one (and it is
not a repeat), else a fresh one from :func:`jarvis_core.types.new_call_id`.
"""

from __future__ import annotations

import json
from typing import Any, Dict, List, Mapping, Optional, Sequence, Set, Tuple

from jarvis_core.engine.messages import arguments_object, coerce_message, tools_to_openai
from jarvis_core.types import Message, MessageLike, ToolCall, new_call_id
from jarvis_engine_ollama.verbs import images_of

__all__ = ["message_to_ollama", "messages_to_ollama", "tool_calls_from_ollama", "tools_to_ollama"]

ENGINE_ID = "ollama"
_PLAIN_KEYS = frozenset({"role", "content"})
_ROLES = frozenset({"system", "user", "assistant", "tool"})


def message_to_ollama(message: MessageLike, tool_names: Mapping[str, str]) -> Dict[str, Any]:
    """One message in Ollama's shape. ``tool_names`` maps earlier tool-call ids to their tool names, so a
    tool result without a ``name`` still gets the ``tool_name`` Ollama wants."""
    if isinstance(message, Mapping) and message.keys() <= _PLAIN_KEYS and isinstance(message.get("content"), str):
        # Fast path: a plain {"role", "content"} dict goes out unchanged.
        if message.get("role") not in _ROLES:
            coerce_message(message)  # raises the core's error for a bad role
        return message  # type: ignore[return-value]
    msg: Message = coerce_message(message)
    content = msg.content
    out: Dict[str, Any] = {"role": msg.role.value, "content": (content or "") if isinstance(content, str) or content is None
                           else (msg.text or "")}
    if content is not None and not isinstance(content, str) and msg.images:
        out["images"] = images_of(msg)
    if msg.reasoning:
        out["thinking"] = msg.reasoning
    if msg.tool_calls:
        out["tool_calls"] = [
            {"id": c.id, "function": {"index": i, "name": c.name, "arguments": arguments_object(c, engine_id=ENGINE_ID, server="Ollama")}}
            for i, c in enumerate(msg.tool_calls)
        ]
    if msg.role.value == "tool":
        name = msg.name or (message.get("tool_name") if isinstance(message, Mapping) else None)
        if not name and msg.tool_call_id:
            name = tool_names.get(msg.tool_call_id)
        if name:
            out["tool_name"] = name
        if msg.tool_call_id:
            out["tool_call_id"] = msg.tool_call_id
    if isinstance(message, Mapping) and message.get("images"):
        out["images"] = list(message["images"])  # base64 images for vision models pass through
    return out


def messages_to_ollama(messages: Sequence[MessageLike]) -> List[Dict[str, Any]]:
    """Every message in Ollama's shape (see :func:`message_to_ollama`)."""
    tool_names: Dict[str, str] = {}
    out = []
    for m in messages:
        d = message_to_ollama(m, tool_names)
        for call in d.get("tool_calls") or ():
            if call.get("id"):
                tool_names[call["id"]] = call["function"]["name"]
        out.append(d)
    return out


def tools_to_ollama(tools: Optional[Sequence[Any]]) -> Optional[List[Dict[str, Any]]]:
    """Tools in the OpenAI ``{type: function, function: {...}}`` shape Ollama takes."""
    return tools_to_openai(tools)


def tool_calls_from_ollama(raw_calls: Any, seen_ids: Set[str]) -> Tuple[ToolCall, ...]:
    """Ollama ``message.tool_calls`` as jarvis :class:`ToolCall` objects (arguments → JSON strings).

    ``seen_ids`` collects the ids given out in this response, so every call's id is unique in it.
    """
    if not raw_calls:
        return ()
    calls = []
    for raw in raw_calls:
        if not isinstance(raw, Mapping):
            continue
        fn = raw.get("function") or {}
        name = fn.get("name")
        if not name:
            continue
        args = fn.get("arguments")
        if args is None:
            args_text = "{}"
        elif isinstance(args, str):
            args_text = args  # not what Ollama sends, but keep a string as is
        else:
            args_text = json.dumps(args, ensure_ascii=False)
        call_id = raw.get("id")
        if not isinstance(call_id, str) or not call_id or call_id in seen_ids:
            call_id = new_call_id()
        seen_ids.add(call_id)
        calls.append(ToolCall(id=call_id, name=str(name), arguments=args_text))
    return tuple(calls)
