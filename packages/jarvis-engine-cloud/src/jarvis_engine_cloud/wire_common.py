"""Small conversions the Anthropic and Gemini codecs share: messages in, options."""

from __future__ import annotations

from typing import Any, List, Mapping, Optional, Sequence, Tuple

from jarvis_core.engine.messages import coerce_message
from jarvis_core.errors import InvalidOptionValueError
from jarvis_core.types import Message, MessageLike, ToolSpec

__all__ = [
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
