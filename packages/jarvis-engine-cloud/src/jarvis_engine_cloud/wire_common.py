"""Small conversions the Anthropic and Gemini codecs share: messages in, tool arguments, options."""

from __future__ import annotations

import json
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from jarvis_core.engine.messages import coerce_message
from jarvis_core.errors import BadRequestError, InvalidOptionValueError
from jarvis_core.types import Message, MessageLike, ToolSpec

__all__ = [
    "arguments_object",
    "as_stop_list",
    "coerce_with_extras",
    "openai_tool_choice",
    "tool_specs",
]


def coerce_with_extras(messages: Sequence[MessageLike]) -> List[Tuple[Message, Mapping[str, Any]]]:
    """Each message as a :class:`Message`, paired with the raw dict it came from (empty for Messages).

    The raw dict keeps what :class:`Message` has no field for: ``thinking_blocks`` (Anthropic thinking
    to replay) and ``is_error`` on a tool result.
    """
    out = []
    for raw in messages:
        extras = raw if isinstance(raw, Mapping) else {}
        out.append((coerce_message(raw), extras))
    return out


def arguments_object(arguments: str, *, call_name: str, provider: str) -> Dict[str, Any]:
    """Tool-call arguments (a JSON string) as the object Anthropic and Gemini want."""
    if not arguments or not arguments.strip():
        return {}
    try:
        value = json.loads(arguments)
    except ValueError:
        value = None
    if not isinstance(value, dict):
        raise BadRequestError(
            f"cloud ({provider}): the arguments of the tool call {call_name!r} in the conversation are not a "
            f"JSON object ({arguments[:80]!r}); {provider} only accepts objects",
            engine_id="cloud",
        )
    return value


def tool_specs(tools: Optional[Sequence[Any]]) -> List[ToolSpec]:
    """Tools given as :class:`ToolSpec` or OpenAI dicts (wrapped or bare), as ToolSpecs."""
    return [t if isinstance(t, ToolSpec) else ToolSpec.from_openai(t) for t in tools or ()]


def as_stop_list(value: Any) -> List[str]:
    """``stop`` as a list of strings (a single string is accepted)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, (list, tuple)):
        return [str(v) for v in value]
    raise InvalidOptionValueError("cloud", "stop", f"must be a string or a list of strings, not {type(value).__name__}")


def openai_tool_choice(value: Any) -> Tuple[str, Optional[str]]:
    """An OpenAI-style ``tool_choice`` as ``(mode, function name)``; mode is auto, none, required or function."""
    if isinstance(value, str):
        if value not in ("auto", "none", "required"):
            raise InvalidOptionValueError("cloud", "tool_choice", "must be 'auto', 'none', 'required' or a function",
                                          value=value)
        return value, None
    if isinstance(value, Mapping):
        fn = value.get("function")
        name = (fn if isinstance(fn, Mapping) else value).get("name")
        if name:
            return "function", str(name)
    raise InvalidOptionValueError("cloud", "tool_choice", "must be 'auto', 'none', 'required' or {'function': {'name': ...}}",
                                  value=value)
