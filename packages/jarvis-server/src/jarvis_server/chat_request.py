"""Reading a ``POST /v1/chat/completions`` body into an engine call, without pydantic.

What the official clients send is accepted: ``content: null`` (an assistant turn that only called tools),
content-part arrays (``text`` parts are joined; ``image_url`` parts, URLs or ``data:`` URLs, are passed on as
typed image parts; any other part is a 400 naming it), ``tools``,
``tool_choice``, ``response_format``, ``stop``, ``seed``, ``top_p``, ``parallel_tool_calls``,
``stream_options.include_usage``. Role ``developer`` (OpenAI's newer name for the system role) is read as
``system``; any other unknown role is a 400.

Nothing is dropped silently: a field this server does not know is a 400 naming it, and a field the engine
does not allow is a 400 naming it (checked with the engine's own allow-list before it is called).
``agent`` (a jarvis extension) names a registered agent to answer through.
``max_tokens`` (or ``max_completion_tokens``) reaches the engine exactly as sent; when the client sends
neither, the server's default applies.
"""

from __future__ import annotations

import math
from typing import Any, Dict, List, Mapping, Optional, Sequence

import attrs

from jarvis_core.content import has_images
from jarvis_core.engine.base import SAMPLING_FIELDS
from jarvis_core.types import Message, MessageContent, Role, ToolCall
from jarvis_server.chat_images import image_content
from jarvis_server.openai_errors import RequestError

__all__ = ["ChatRequest", "parse_chat_request"]

#: Request fields forwarded to the engine as options under the same name: the sampling fields (but
#: ``temperature``, read by the server itself) and OpenAI's other request options.
ENGINE_OPTIONS = (
    *(f for f in SAMPLING_FIELDS if f != "temperature"), "stop", "seed", "response_format", "tool_choice",
    "parallel_tool_calls", "frequency_penalty", "logit_bias", "logprobs", "top_logprobs",
)
#: Fields read by the server itself.
OWN_FIELDS = (
    "model", "messages", "stream", "stream_options", "max_tokens", "max_completion_tokens", "temperature",
    "tools", "n", "agent",
)
KNOWN_FIELDS = frozenset(ENGINE_OPTIONS + OWN_FIELDS)

_ROLES = {"system": Role.SYSTEM, "developer": Role.SYSTEM, "user": Role.USER, "assistant": Role.ASSISTANT,
          "tool": Role.TOOL}


@attrs.frozen
class ChatRequest:
    """A validated chat-completion request."""

    model: str
    messages: List[Message]
    stream: bool = False
    include_usage: bool = False
    max_tokens: Optional[int] = None
    temperature: Optional[float] = None
    tools: Optional[List[Dict[str, Any]]] = None
    options: Dict[str, Any] = attrs.field(factory=dict)
    agent: Optional[str] = None
    #: The request named no model: ``model`` is the server's default (an agent runs its configured one).
    default_model: bool = False


def _bad(message: str, param: str, code: str = "invalid_request") -> RequestError:
    return RequestError(message, param=param, code=code)


def _text(content: Any, where: str) -> MessageContent:
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list) and has_images(content):
        return image_content(content, where)
    if not isinstance(content, list):
        raise _bad(f"{where} must be a string, null or an array of content parts", where)
    pieces: List[str] = []
    for j, part in enumerate(content):
        pwhere = f"{where}[{j}]"
        if not isinstance(part, Mapping):
            raise _bad(f"{pwhere} must be an object", pwhere)
        kind = part.get("type")
        if kind != "text":
            raise _bad(f"{pwhere} has type {kind!r}; this server accepts only 'text' content parts",
                       f"{pwhere}.type", "unsupported_content")
        text = part.get("text")
        if not isinstance(text, str):
            raise _bad(f"{pwhere}.text must be a string", f"{pwhere}.text")
        pieces.append(text)
    return "".join(pieces)


def _tool_calls(value: Any, where: str) -> List[ToolCall]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise _bad(f"{where} must be an array", where)
    calls = []
    for j, call in enumerate(value):
        cwhere = f"{where}[{j}]"
        fn = call.get("function") if isinstance(call, Mapping) else None
        if not isinstance(fn, Mapping) or not isinstance(fn.get("name"), str) or not isinstance(call.get("id"), str):
            raise _bad(f"{cwhere} must be {{id, type: 'function', function: {{name, arguments}}}}", cwhere)
        arguments = fn.get("arguments", "{}")
        if not isinstance(arguments, str):
            raise _bad(f"{cwhere}.function.arguments must be a JSON string", f"{cwhere}.function.arguments")
        calls.append(ToolCall(call["id"], fn["name"], arguments))
    return calls


def _message(raw: Any, i: int) -> Message:
    where = f"messages[{i}]"
    if not isinstance(raw, Mapping):
        raise _bad(f"{where} must be an object", where)
    role = _ROLES.get(raw.get("role"))  # type: ignore[arg-type]
    if role is None:
        raise _bad(f"{where}.role {raw.get('role')!r} is not one of system, developer, user, assistant, tool",
                   f"{where}.role")
    content = _text(raw.get("content"), f"{where}.content")
    name = raw.get("name")
    if name is not None and not isinstance(name, str):
        raise _bad(f"{where}.name must be a string", f"{where}.name")
    if role is Role.TOOL:
        call_id = raw.get("tool_call_id")
        if not isinstance(call_id, str) or not call_id:
            raise _bad(f"{where} (role tool) needs a tool_call_id", f"{where}.tool_call_id")
        return Message(role, content or "", tool_call_id=call_id, name=name)
    calls = _tool_calls(raw.get("tool_calls"), f"{where}.tool_calls") if role is Role.ASSISTANT else []
    if content is None and not calls:
        raise _bad(f"{where}.content may be null only in an assistant message with tool_calls", f"{where}.content")
    return Message(role, content, tool_calls=calls, name=name)


def _tools(value: Any) -> Optional[List[Dict[str, Any]]]:
    if value is None:
        return None
    if not isinstance(value, list):
        raise _bad("tools must be an array", "tools")
    for j, tool in enumerate(value):
        fn = tool.get("function") if isinstance(tool, Mapping) else None
        if not isinstance(tool, Mapping) or tool.get("type") != "function" or not isinstance(fn, Mapping) \
                or not isinstance(fn.get("name"), str):
            raise _bad(f"tools[{j}] must be {{type: 'function', function: {{name, description?, parameters?}}}}",
                       f"tools[{j}]")
    return [dict(t) for t in value] or None


def _number(body: Mapping[str, Any], key: str, lo: float, hi: float) -> Optional[float]:
    value = body.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or not lo <= value <= hi:
        raise _bad(f"{key} must be a number between {lo:g} and {hi:g}", key)
    return float(value)


def _max_tokens(body: Mapping[str, Any]) -> Optional[int]:
    for key in ("max_completion_tokens", "max_tokens"):
        value = body.get(key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise _bad(f"{key} must be a positive integer", key)
        return value
    return None


def parse_chat_request(body: Any, *, default_model: str, allowed_options: Sequence[str]) -> ChatRequest:
    """Validate ``body`` (decoded JSON) into a :class:`ChatRequest`; raise :class:`RequestError` naming the
    field at fault. ``allowed_options`` is the engine's allow-list (``InferenceEngine.allowed_options``)."""
    if not isinstance(body, Mapping):
        raise _bad("the request body must be a JSON object", "body")
    unknown = sorted(k for k in body if k not in KNOWN_FIELDS)
    if unknown:
        raise _bad(f"unsupported field(s) {', '.join(map(repr, unknown))}", unknown[0], "unsupported_parameter")
    named = body.get("model")
    model = named or default_model
    if not isinstance(model, str):
        raise _bad("model must be a string", "model")
    raw_messages = body.get("messages")
    if not isinstance(raw_messages, list) or not raw_messages:
        raise _bad("messages must be a non-empty array", "messages")
    messages = [_message(m, i) for i, m in enumerate(raw_messages)]
    stream = body.get("stream", False)
    if not isinstance(stream, bool):
        raise _bad("stream must be true or false", "stream")
    include_usage = False
    stream_options = body.get("stream_options")
    if stream_options is not None:
        if not stream:
            raise _bad("stream_options is only allowed with stream: true", "stream_options")
        if not isinstance(stream_options, Mapping) or any(k != "include_usage" for k in stream_options):
            raise _bad("stream_options accepts only include_usage", "stream_options")
        include_usage = bool(stream_options.get("include_usage", False))
    n = body.get("n")
    if n not in (None, 1):
        raise _bad("this server returns one choice: n must be 1", "n")
    agent = body.get("agent")
    if agent is not None and (not isinstance(agent, str) or not agent):
        raise _bad("agent must be the name of a registered agent", "agent")
    allowed = set(allowed_options)
    options: Dict[str, Any] = {}
    for key in ENGINE_OPTIONS:
        if body.get(key) is None:
            continue
        if key not in allowed:
            raise _bad(f"the engine behind this server does not support {key!r}", key, "unsupported_parameter")
        options[key] = body[key]
    _number(body, "top_p", 0, 1)
    return ChatRequest(
        model=model,
        messages=messages,
        stream=stream,
        include_usage=include_usage,
        max_tokens=_max_tokens(body),
        temperature=_number(body, "temperature", 0, 2),
        tools=_tools(body.get("tools")),
        options=options,
        agent=agent,
        default_model=not named,
    )
