"""Converting messages and tools to the OpenAI-style wire dicts that most servers speak.

Engines accept :class:`~jarvis_core.types.Message` objects or plain OpenAI-style dicts interchangeably;
these functions are the one place where both become one shape.
"""

from __future__ import annotations

import json
from typing import Any, Dict, List, Mapping, Optional, Sequence

from jarvis_core.content import content_parts, has_images, part_to_openai
from jarvis_core.types import Message, MessageLike, Role, ToolCall, ToolSpec, new_call_id

__all__ = ["arguments_object", "coerce_message", "coerce_messages", "messages_to_dicts", "message_to_dict", "tools_to_openai"]

_ROLES = {r.value for r in Role}


def message_to_dict(message: MessageLike, *, reasoning_field: Optional[str] = None) -> Dict[str, Any]:
    """One message as an OpenAI chat dict. Dicts are checked for a valid role and passed through. Content
    parts become OpenAI content parts (an image from bytes a ``data:`` URL, see
    :func:`~jarvis_core.content.part_to_openai`).

    ``reasoning_field`` (e.g. ``"reasoning_content"``, what OpenAI-compatible servers read) replays an
    assistant message's :attr:`~jarvis_core.types.Message.reasoning` (or a dict's ``reasoning``) under that
    key, so a thinking model's chat template sees its earlier thinking; ``None`` (the default, and OpenAI's
    own API) leaves reasoning out.
    """
    if isinstance(message, Message):
        content = message.content
        out: Dict[str, Any] = {"role": message.role.value,
                               "content": content if content is None or isinstance(content, str)
                               else [part_to_openai(p) for p in content]}
        if message.tool_calls:
            out["tool_calls"] = [c.to_openai() for c in message.tool_calls]
        if message.tool_call_id is not None:
            out["tool_call_id"] = message.tool_call_id
        if message.name is not None:
            out["name"] = message.name
        if reasoning_field and message.reasoning and message.role is Role.ASSISTANT:
            out[reasoning_field] = message.reasoning
        return out
    if not isinstance(message, Mapping):
        raise TypeError(f"a message must be a Message or a dict, not {type(message).__name__}")
    role = message.get("role")
    if role not in _ROLES:
        raise ValueError(f"message role must be one of {sorted(_ROLES)}, got {role!r}")
    out = dict(message)
    if reasoning_field and role == "assistant" and reasoning_field not in out and out.get("reasoning"):
        out[reasoning_field] = out.pop("reasoning")
    return out


def messages_to_dicts(messages: Sequence[MessageLike], *, reasoning_field: Optional[str] = None) -> List[Dict[str, Any]]:
    """All messages as OpenAI chat dicts (see :func:`message_to_dict`)."""
    return [message_to_dict(m, reasoning_field=reasoning_field) for m in messages]


def _tool_call_from_dict(raw: Mapping[str, Any]) -> ToolCall:
    fn = raw.get("function") or raw  # OpenAI nests under "function"; LiteLLM-style flat calls do not
    args = fn.get("arguments", "{}")
    if not isinstance(args, str):
        args = json.dumps(args, ensure_ascii=False)
    return ToolCall(id=str(raw.get("id") or new_call_id()), name=str(fn.get("name", "")), arguments=args)


def arguments_object(call: ToolCall, *, engine_id: str, server: str) -> Dict[str, Any]:
    """A call's arguments (a JSON string in jarvis) as the JSON object some servers require in a conversation
    (Ollama, Anthropic, Gemini); empty arguments are ``{}``.

    :raises BadRequestError: the arguments are not a JSON object; the message names the call, ``server`` and
        an excerpt. Nothing is sent.
    """
    from jarvis_core.arguments import decode_arguments
    from jarvis_core.errors import BadRequestError

    value, problem = decode_arguments(call.arguments)
    if value is None:
        raise BadRequestError(
            f"{engine_id}: the arguments of tool call {call.id!r} ({call.name}) in the conversation are not a JSON "
            f"object ({problem}: {call.arguments[:80]!r}); {server} only accepts an object there. Fix the message "
            "before sending it.",
            engine_id=engine_id,
        )
    return value


def coerce_message(message: MessageLike) -> Message:
    """A :class:`Message` from a Message or an OpenAI-style dict (tool-call arguments become JSON strings)."""
    if isinstance(message, Message):
        return message
    d = message_to_dict(message)
    calls = tuple(_tool_call_from_dict(c) for c in d.get("tool_calls") or ())
    content = d.get("content")
    if isinstance(content, list):  # OpenAI content parts: typed parts when there is an image, else the text
        content = content_parts(content) if has_images(content) else "".join(
            p.get("text", "") for p in content if isinstance(p, Mapping))
    return Message(
        role=d["role"],
        content=content,
        tool_calls=calls,
        tool_call_id=d.get("tool_call_id"),
        name=d.get("name"),
        reasoning=d.get("reasoning") or d.get("reasoning_content"),
    )


def coerce_messages(messages: Sequence[MessageLike]) -> List[Message]:
    """Every message as a :class:`Message`."""
    return [coerce_message(m) for m in messages]


def tools_to_openai(tools: Optional[Sequence[Any]]) -> Optional[List[Dict[str, Any]]]:
    """Tools (``ToolSpec`` or dicts, wrapped or bare) as OpenAI ``{type: function, function: …}`` dicts."""
    if not tools:
        return None
    out = []
    for tool in tools:
        spec = tool if isinstance(tool, ToolSpec) else ToolSpec.from_openai(tool)
        out.append(spec.to_openai())
    return out
