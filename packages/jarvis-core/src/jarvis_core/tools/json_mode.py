"""The JSON-schema tool-call mode: tool calling for models whose chat template knows no tools.

Instead of sending ``tools``, the request carries a ``response_format`` whose schema admits exactly one
*action*: a tool call ``{"name": <tool>, "arguments": <that tool's parameter schema>}`` or, when a direct
answer is allowed, ``{"content": <text>}``. The server constrains decoding to the schema (llama.cpp turns
it into a grammar; vLLM, SGLang and LM Studio have guided decoding), so even a 135M-parameter model
produces a well-formed call, which :func:`parse_action` turns into a :class:`~jarvis_core.types.ToolCall`.

The schema is always sent in OpenAI's *nested* form ``{"type": "json_schema", "json_schema": {"name", "schema",
"strict"}}``: llama.cpp enforces that form, while it treats a top-level ``schema`` key as "any JSON".

History is rewritten to match (:func:`rewrite_messages`): earlier assistant calls become their JSON text
and tool results become user messages, because templates without tool support render neither.

This is the one implementation in jarvis: the openai-compat engines' ``tool_mode="json_schema"``, their
managed worker and the agents' structured mode all use it.
"""

from __future__ import annotations

import copy
import json
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import attrs

from jarvis_core.types import ToolCall, ToolSpec, new_call_id

__all__ = [
    "ANSWER_OVERHEAD_TOKENS",
    "DEFAULT_MAX_STRING_LENGTH",
    "SCHEMA_NAME",
    "ParsedAction",
    "action_schema",
    "bound_strings",
    "content_limit",
    "forced_tool_name",
    "has_tool_history",
    "parse_action",
    "response_format",
    "response_format_for_choice",
    "rewrite_messages",
    "tool_note",
    "tool_result_text",
]

#: The ``json_schema.name`` of the constrained response.
SCHEMA_NAME = "tool_call"
#: The ``maxLength`` of every free string in a tool call's arguments, unless the caller says otherwise.
DEFAULT_MAX_STRING_LENGTH = 256
#: Tokens kept free for ``{"content": "`` and ``"}`` around a bounded answer (see :func:`content_limit`).
ANSWER_OVERHEAD_TOKENS = 16

ToolLike = Union[ToolSpec, Mapping[str, Any]]


def _spec(tool: ToolLike) -> ToolSpec:
    return tool if isinstance(tool, ToolSpec) else ToolSpec.from_openai(tool)


def _specs(tools: Sequence[ToolLike]) -> List[ToolSpec]:
    return [_spec(t) for t in tools]


def bound_strings(schema: Mapping[str, Any], max_length: int) -> Dict[str, Any]:
    """A copy of ``schema`` where every ``string`` without a ``maxLength`` gets ``max_length``.

    A small model under a grammar may otherwise write one string until ``max_tokens`` cuts it off, which
    leaves the JSON unfinished.
    """
    out = copy.deepcopy(dict(schema))

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            kind = node.get("type")
            if (kind == "string" or (isinstance(kind, list) and "string" in kind)) and "enum" not in node \
                    and "const" not in node and "maxLength" not in node:
                node["maxLength"] = max_length
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(out)
    return out


def content_limit(max_tokens: Optional[int]) -> Optional[int]:
    """The ``maxLength`` of a constrained answer that always closes its JSON within ``max_tokens``: a token
    writes at least one character, so an answer of ``max_tokens - ANSWER_OVERHEAD_TOKENS`` characters fits
    with its wrapper. ``None`` (no budget given) means no bound."""
    if max_tokens is None:
        return None
    return max(1, max_tokens - ANSWER_OVERHEAD_TOKENS)


def action_schema(
    tools: Sequence[ToolLike],
    *,
    answer: bool = True,
    only: Optional[str] = None,
    max_string_length: Optional[int] = None,
    max_content_length: Optional[int] = None,
) -> Dict[str, Any]:
    """The JSON schema of one action: a call of one of ``tools`` or (``answer=True``) ``{"content": ...}``.

    :param only: restrict the calls to the tool of that name.
    :param max_string_length: bound every free string (see :func:`bound_strings`).
    :param max_content_length: the answer's own bound, instead of ``max_string_length``.
    :raises ValueError: nothing is allowed (no tools left and no answer), or ``only`` is not among the tools.
    """
    branches: List[Dict[str, Any]] = []
    specs = _specs(tools)
    if only is not None and only not in {s.name for s in specs}:
        raise ValueError(f"tool {only!r} is not among the tools ({', '.join(s.name for s in specs) or 'none'})")
    for spec in specs:
        if only is not None and spec.name != only:
            continue
        params = dict(spec.parameters or {"type": "object", "properties": {}})
        branches.append({
            "type": "object",
            "properties": {"name": {"const": spec.name}, "arguments": params},
            "required": ["name", "arguments"],
            "additionalProperties": False,
        })
    if answer:
        content: Dict[str, Any] = {"type": "string"}
        if max_content_length:
            content["maxLength"] = max_content_length
        branches.append({
            "type": "object",
            "properties": {"content": content},
            "required": ["content"],
            "additionalProperties": False,
        })
    if not branches:
        raise ValueError("the action schema allows nothing: no tools and no direct answer")
    schema = branches[0] if len(branches) == 1 else {"anyOf": branches}
    return bound_strings(schema, max_string_length) if max_string_length else schema


def response_format(
    tools: Sequence[ToolLike],
    *,
    answer: bool = True,
    only: Optional[str] = None,
    max_string_length: Optional[int] = None,
    max_content_length: Optional[int] = None,
) -> Dict[str, Any]:
    """The ``response_format`` request field for :func:`action_schema` (same arguments), nested form."""
    schema = action_schema(tools, answer=answer, only=only, max_string_length=max_string_length,
                           max_content_length=max_content_length)
    return {"type": "json_schema", "json_schema": {"name": SCHEMA_NAME, "schema": schema, "strict": True}}


def forced_tool_name(tool_choice: Any) -> Optional[str]:
    """The tool an OpenAI ``tool_choice`` object forces (``{"type": "function", "function": {"name": …}}``)."""
    if isinstance(tool_choice, Mapping):
        fn = tool_choice.get("function")
        if isinstance(fn, Mapping) and fn.get("name"):
            return str(fn["name"])
    return None


def response_format_for_choice(
    tools: Sequence[ToolLike],
    tool_choice: Any = None,
    *,
    max_string_length: Optional[int] = DEFAULT_MAX_STRING_LENGTH,
    max_content_length: Optional[int] = None,
) -> Dict[str, Any]:
    """:func:`response_format` for an OpenAI ``tool_choice``: ``auto``/``None`` allow a call or a direct
    answer, ``required`` demands a call, a function object demands that function, ``none`` admits only the
    answer ``{"content": ...}`` (constrained all the same, so the reply still parses as an action).

    Free strings are bounded as the agents' structured mode bounds them: ``max_string_length`` for the
    arguments, ``max_content_length`` (e.g. :func:`content_limit` of the request's ``max_tokens``) for the
    answer, so a small model cannot run into ``max_tokens`` inside the JSON.

    :raises ValueError: the forced function is not among the tools.
    """
    if tool_choice == "none":
        return response_format([], answer=True, max_string_length=max_string_length,
                               max_content_length=max_content_length)
    forced = forced_tool_name(tool_choice)
    return response_format(tools, answer=tool_choice in (None, "auto") and not forced, only=forced,
                           max_string_length=max_string_length, max_content_length=max_content_length)


def tool_note(tools: Sequence[ToolLike], *, answer: bool = True) -> str:
    """The system-prompt text that lists the tools and the reply format (no example values, which small
    models copy into their arguments)."""
    listing = "\n".join(
        json.dumps({"name": s.name, "description": s.description, "parameters": dict(s.parameters)},
                   ensure_ascii=False)
        for s in _specs(tools)
    )
    if answer:
        how = ('To call a tool, reply with {"name": <tool name>, "arguments": {...}}. '
               'To answer directly, reply with {"content": <your answer>}.')
    else:
        how = 'Call a tool: reply with {"name": <tool name>, "arguments": {...}}.'
    return f"You can use these tools:\n{listing}\n{how}"


def tool_result_text(name: Optional[str], content: Optional[str]) -> str:
    """How a tool result reads when it goes back as a user message."""
    return f"Result of {name or 'the tool'}: {content or ''}"


def has_tool_history(messages: Sequence[Any]) -> bool:
    """True when a conversation (``Message`` objects or OpenAI dicts) holds tool calls or tool results."""
    for msg in messages:
        if isinstance(msg, Mapping):
            if msg.get("role") == "tool" or msg.get("tool_calls"):
                return True
        elif getattr(msg, "tool_calls", None) or str(getattr(msg, "role", "")) == "tool":
            return True
    return False


def rewrite_messages(
    messages: Sequence[Mapping[str, Any]], tools: Sequence[ToolLike], *, answer: bool = True
) -> List[Dict[str, Any]]:
    """OpenAI chat dicts rewritten for a template without tool support, the :func:`tool_note` appended to
    the (first) system message or inserted as one. With no ``tools`` only the history is rewritten (an
    answer turn after tool calls), and no note is added."""
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
            out.append({"role": "user", "content": tool_result_text(msg.get("name"), msg.get("content"))})
        else:
            out.append(dict(msg))
    if not tools:
        return out
    note = tool_note(tools, answer=answer)
    if out and out[0].get("role") == "system" and isinstance(out[0].get("content"), str):
        out[0] = {**out[0], "content": f"{out[0]['content']}\n\n{note}"}
    else:
        out.insert(0, {"role": "system", "content": note})
    return out


@attrs.frozen
class ParsedAction:
    """A constrained reply, parsed: either ``tool_calls`` (one call) or ``content`` (a direct answer).

    ``problem`` is empty when the reply was a well-formed action; otherwise it says what was wrong and
    ``content`` holds the raw text (``None`` when there was none), so callers can report or retry.
    """

    content: Optional[str] = None
    tool_calls: Tuple[ToolCall, ...] = ()
    problem: str = ""

    @property
    def ok(self) -> bool:
        """True when the reply was a well-formed action."""
        return not self.problem


def parse_action(text: Optional[str], tool_names: Sequence[str], *, call_id: Optional[str] = None) -> ParsedAction:
    """Parse a constrained reply. Never raises on model output.

    :param tool_names: the names the schema offered; a call of another name is a problem, not a call.
    :param call_id: the id of the resulting :class:`ToolCall` (default: a fresh ``call_<hex>``).
    """
    if not text or not text.strip():
        return ParsedAction(None, (), "the model returned no text for the constrained action")
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        return ParsedAction(text, (), f"the constrained reply is not valid JSON ({exc.msg} at position {exc.pos})")
    if isinstance(obj, dict) and isinstance(obj.get("name"), str) and "arguments" in obj:
        name = obj["name"]
        if name not in tool_names:
            return ParsedAction(text, (), f"the constrained reply calls an unknown tool {name!r}")
        args = obj["arguments"]
        arguments = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)
        cid = call_id or new_call_id()
        return ParsedAction(None, (ToolCall(id=cid, name=name, arguments=arguments),), "")
    if isinstance(obj, dict) and isinstance(obj.get("content"), str):
        return ParsedAction(obj["content"], (), "")
    return ParsedAction(text, (), "the constrained reply has neither a tool call nor content")
