"""Value types shared by every jarvis package (docs/contract.md §3).

All types are small immutable attrs classes, except :class:`StreamChunk`, an immutable named tuple built
once per streamed token. :data:`converter` (cattrs) turns them into plain dicts and JSON and back; :func:`to_dict`, :func:`from_dict`, :func:`to_json` and :func:`from_json` are the one way to
do that.

``finish_reason`` is always one of :data:`FINISH_REASONS`, whatever the provider said:
:func:`normalize_finish_reason` maps the providers' spellings.
"""

from __future__ import annotations

import enum
import json
import secrets
import string
from types import MappingProxyType
from typing import Any, Iterable, Mapping, NamedTuple, Optional, Sequence, Tuple, TypeVar, Union

import attrs
import cattrs

from jarvis_core.content import ContentPart, ImagePart, TextPart, content_parts, content_text

__all__ = [
    "as_tuple",
    "FINISH_REASONS",
    "STOP_REASONS",
    "AgentContext",
    "AgentResult",
    "Completion",
    "Message",
    "MessageContent",
    "MessageLike",
    "NO_METADATA",
    "Role",
    "StreamChunk",
    "ToolCall",
    "ToolResult",
    "ToolSpec",
    "Usage",
    "converter",
    "from_dict",
    "from_json",
    "new_call_id",
    "normalize_finish_reason",
    "to_dict",
    "to_json",
]

T = TypeVar("T")

FINISH_REASONS = ("stop", "length", "tool_calls", "content_filter", "error")

#: Why an agent run ended (:attr:`AgentResult.stop_reason`): the model gave its answer (``final``), the turn
#: limit was reached (``max_turns``), the loop guard stopped a model repeating itself (``loop_guard``), the
#: run failed (``error``) or was cancelled (``cancelled``).
STOP_REASONS = ("final", "max_turns", "loop_guard", "error", "cancelled")

_FINISH_ALIASES = {
    "stop": "stop",
    "eos": "stop",
    "end_turn": "stop",
    "stop_sequence": "stop",
    "finish_reason_stop": "stop",
    "unload": "stop",
    "load": "stop",
    "length": "length",
    "max_tokens": "length",
    "max_output_tokens": "length",
    "model_length": "length",
    "tool_calls": "tool_calls",
    "tool_use": "tool_calls",
    "function_call": "tool_calls",
    "content_filter": "content_filter",
    "safety": "content_filter",
    "recitation": "content_filter",
    "blocklist": "content_filter",
    "prohibited_content": "content_filter",
    "spii": "content_filter",
    "refusal": "content_filter",
    "image_safety": "content_filter",
    "error": "error",
    "abort": "error",
    "malformed_function_call": "error",
    "other": "stop",
    "finish_reason_unspecified": "stop",
}


def normalize_finish_reason(raw: Optional[str], *, has_tool_calls: bool = False) -> str:
    """Map a provider's finish reason onto :data:`FINISH_REASONS`.

    ``None`` or an unknown spelling becomes ``"tool_calls"`` when the response carried tool calls and
    ``"stop"`` otherwise; a ``"stop"`` with tool calls also becomes ``"tool_calls"`` (Gemini, Ollama).
    """
    reason = _FINISH_ALIASES.get(str(raw).lower(), None) if raw is not None else None
    if has_tool_calls and reason in (None, "stop"):
        return "tool_calls"
    return reason or "stop"


class Role(str, enum.Enum):
    """Who wrote a :class:`Message`."""

    SYSTEM = "system"
    USER = "user"
    ASSISTANT = "assistant"
    TOOL = "tool"

    def __str__(self) -> str:
        return self.value


_ALNUM = string.ascii_letters + string.digits


def new_call_id(style: str = "openai") -> str:
    """A fresh, unique tool-call id: ``call_`` + 24 hex digits, or 9 alphanumerics for Mistral (its
    tokenizer's rule). The one generator: every engine, parser and agent that must invent an id uses it, so
    ids never repeat across turns of a conversation."""
    if style == "mistral":
        return "".join(secrets.choice(_ALNUM) for _ in range(9))
    return "call_" + secrets.token_hex(12)


@attrs.frozen
class ToolCall:
    """One call of a tool by the model. ``arguments`` is always a JSON string (as in OpenAI's API)."""

    id: str
    name: str
    arguments: str = "{}"

    def parsed_arguments(self) -> Any:
        """The arguments decoded from JSON; raises :class:`ValueError` when they are not valid JSON."""
        return json.loads(self.arguments) if self.arguments else {}

    def to_openai(self) -> dict[str, Any]:
        """The OpenAI wire shape ``{id, type: function, function: {name, arguments}}``."""
        return {"id": self.id, "type": "function", "function": {"name": self.name, "arguments": self.arguments}}


def _role(value: Union[Role, str]) -> Role:
    return value if isinstance(value, Role) else Role(value)


def as_tuple(value: Optional[Iterable[Any]]) -> Tuple[Any, ...]:
    """attrs converter: any iterable (or ``None``) as a tuple, so frozen values hold no mutable sequence."""
    return tuple(value) if value else ()


#: A message's content: text (the fast path), typed parts (text and images, :mod:`jarvis_core.content`) or
#: ``None`` (an assistant turn that only called tools).
MessageContent = Union[str, Tuple[ContentPart, ...], None]


@attrs.frozen
class Message:
    """One chat message. ``reasoning`` holds a model's thinking, kept apart from ``content``.

    ``content`` is a ``str``, or a tuple of :class:`~jarvis_core.content.TextPart` and
    :class:`~jarvis_core.content.ImagePart` (a list, plain strings and OpenAI part dicts are converted);
    :attr:`text` is its text either way.
    """

    role: Role = attrs.field(converter=_role)
    content: MessageContent = attrs.field(default=None, converter=content_parts)
    tool_calls: Tuple[ToolCall, ...] = attrs.field(default=(), converter=as_tuple)
    tool_call_id: Optional[str] = None
    name: Optional[str] = None
    reasoning: Optional[str] = None

    @property
    def text(self) -> Optional[str]:
        """The content's text: the str itself, or the text parts joined (images left out)."""
        return content_text(self.content)

    @property
    def images(self) -> Tuple[ImagePart, ...]:
        """The content's image parts (none for text content)."""
        if self.content is None or isinstance(self.content, str):
            return ()
        return tuple(p for p in self.content if isinstance(p, ImagePart))

    @classmethod
    def system(cls, content: str) -> Message:
        return cls(Role.SYSTEM, content)

    @classmethod
    def user(cls, content: Union[str, Iterable[Union[ContentPart, str]]]) -> Message:
        return cls(Role.USER, content)

    @classmethod
    def assistant(cls, content: Optional[str], tool_calls: Sequence[ToolCall] = ()) -> Message:
        return cls(Role.ASSISTANT, content, tool_calls=tuple(tool_calls))

    @classmethod
    def tool(cls, content: str, tool_call_id: str, name: Optional[str] = None) -> Message:
        return cls(Role.TOOL, content, tool_call_id=tool_call_id, name=name)


#: What engines accept as a message: a :class:`Message` or a plain OpenAI-style dict.
MessageLike = Union[Message, Mapping[str, Any]]


@attrs.frozen
class Usage:
    """Token counts of one request. ``total_tokens`` defaults to the sum of the other two."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = attrs.field()

    @total_tokens.default
    def _total(self) -> int:
        return self.prompt_tokens + self.completion_tokens


def _finish(value: Optional[str]) -> str:
    return value if value in FINISH_REASONS else normalize_finish_reason(value)


@attrs.frozen
class Completion:
    """A whole model response, normalized across providers.

    ``metadata`` carries provider extras that have no common field (llama.cpp ``timings``, Ollama
    durations, request ids); it never holds secrets. ``parsed`` is the decoded answer of a structured-output
    request (``response_format``, :mod:`jarvis_core.structured`); ``None`` otherwise.
    """

    content: Optional[str] = None
    reasoning: Optional[str] = None
    tool_calls: Tuple[ToolCall, ...] = attrs.field(default=(), converter=as_tuple)
    usage: Usage = attrs.field(factory=Usage)
    model: str = ""
    finish_reason: str = attrs.field(default="stop", converter=_finish)
    metadata: Mapping[str, Any] = attrs.field(factory=dict)
    parsed: Any = None

    def to_dict(self) -> dict[str, Any]:
        """The OpenJarvis engine dict: ``{content, usage, model, finish_reason, tool_calls?}``."""
        out: dict[str, Any] = {
            "content": self.content or "",
            "usage": to_dict(self.usage),
            "model": self.model,
            "finish_reason": self.finish_reason,
        }
        if self.tool_calls:
            out["tool_calls"] = [to_dict(c) for c in self.tool_calls]
        if self.reasoning:
            out["reasoning"] = self.reasoning
        if self.parsed is not None:
            out["parsed"] = self.parsed
        return out

    def to_message(self) -> Message:
        """This response as the assistant message to append to a conversation."""
        return Message(Role.ASSISTANT, self.content, tool_calls=self.tool_calls, reasoning=self.reasoning)


#: The metadata of a chunk that has none (every delta chunk of a stream): shared and read-only.
NO_METADATA: Mapping[str, Any] = MappingProxyType({})
_tuple_new = tuple.__new__


class _ChunkFields(NamedTuple):
    content: Optional[str] = None
    reasoning: Optional[str] = None
    tool_calls: Tuple[ToolCall, ...] = ()
    finish_reason: Optional[str] = None
    usage: Optional[Usage] = None
    metadata: Mapping[str, Any] = NO_METADATA
    parsed: Any = None


class StreamChunk(_ChunkFields):
    """One piece of a streamed response.

    ``content`` and ``reasoning`` are deltas (text added since the previous chunk). ``tool_calls`` holds
    *complete* calls: engines assemble the providers' argument deltas by index and emit each call once, in
    the chunk that carries ``finish_reason``. ``usage`` arrives once, usually in the last chunk. ``parsed``
    (a structured-output request) is set on the last chunk only, decoded from the whole text.

    Unlike the other value types it is an immutable named tuple, not an attrs class: a stream builds one
    per token, and a tuple is built about five times faster than a frozen attrs instance (docs/contract.md
    §3). It compares equal only to another ``StreamChunk``; :meth:`replace` is its ``attrs.evolve``, and
    :func:`to_dict` / :func:`from_dict` convert it like any value type. :meth:`delta` is the hot path.
    """

    __slots__ = ()

    def __new__(
        cls,
        content: Optional[str] = None,
        reasoning: Optional[str] = None,
        tool_calls: Optional[Iterable[ToolCall]] = (),
        finish_reason: Optional[str] = None,
        usage: Optional[Usage] = None,
        metadata: Optional[Mapping[str, Any]] = None,
        parsed: Any = None,
    ) -> StreamChunk:
        return _tuple_new(cls, (content, reasoning, tuple(tool_calls) if tool_calls else (), finish_reason, usage,
                                {} if metadata is None else metadata, parsed))

    @staticmethod
    def delta(content: Optional[str], reasoning: Optional[str] = None) -> StreamChunk:
        """A content and/or reasoning delta with nothing else (its metadata is :data:`NO_METADATA`): what
        engines build for each token, at the cost of one tuple."""
        return _tuple_new(StreamChunk, (content, reasoning, (), None, None, NO_METADATA, None))

    def replace(self, **changes: Any) -> StreamChunk:
        """A copy with ``changes`` applied (unknown field names raise ``TypeError``)."""
        return StreamChunk(**{**self._asdict(), **changes})

    __replace__ = replace  # copy.replace() (Python 3.13+)

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and tuple.__eq__(self, other)

    def __ne__(self, other: object) -> bool:
        return not self == other

    __hash__ = tuple.__hash__


@attrs.frozen
class ToolSpec:
    """A tool the model may call: a name, a description and a JSON schema for its arguments."""

    name: str
    description: str = ""
    parameters: Mapping[str, Any] = attrs.field(factory=lambda: {"type": "object", "properties": {}})

    def to_openai(self) -> dict[str, Any]:
        """The OpenAI function-calling shape ``{type: function, function: {name, description, parameters}}``."""
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": dict(self.parameters)},
        }

    @classmethod
    def from_openai(cls, spec: Mapping[str, Any]) -> ToolSpec:
        """Accept either the OpenAI wrapper ``{type, function: {...}}`` or the bare function dict."""
        fn = spec.get("function", spec)
        return cls(
            name=fn["name"],
            description=fn.get("description", "") or "",
            parameters=fn.get("parameters") or {"type": "object", "properties": {}},
        )


@attrs.frozen
class ToolResult:
    """The outcome of running one tool call. A failure is a result with ``ok=False``, never an exception."""

    tool_call_id: str
    name: str
    content: str
    ok: bool = True
    truncated: bool = False
    duration_s: float = 0.0

    def to_message(self) -> Message:
        return Message(Role.TOOL, self.content, tool_call_id=self.tool_call_id, name=self.name)


@attrs.frozen
class AgentContext:
    """What an agent gets besides its input: prior conversation, tools it may use, free-form metadata."""

    messages: Tuple[Message, ...] = attrs.field(default=(), converter=as_tuple)
    tools: Tuple[ToolSpec, ...] = attrs.field(default=(), converter=as_tuple)
    metadata: Mapping[str, Any] = attrs.field(factory=dict)


def _stop_reason(value: str) -> str:
    if value not in STOP_REASONS:
        raise ValueError(f"stop_reason must be one of {', '.join(STOP_REASONS)}, got {value!r}")
    return value


@attrs.frozen
class AgentResult:
    """What an agent run produced: the final answer, the whole transcript and the tool results.

    ``usage`` sums every model call of the run; ``messages`` is the whole transcript (the final assistant
    message included); ``tool_results`` are in call order; ``stop_reason`` is one of :data:`STOP_REASONS`.
    """

    content: str
    messages: Tuple[Message, ...] = attrs.field(default=(), converter=as_tuple)
    tool_results: Tuple[ToolResult, ...] = attrs.field(default=(), converter=as_tuple)
    turns: int = 0
    usage: Usage = attrs.field(factory=Usage)
    metadata: Mapping[str, Any] = attrs.field(factory=dict)
    stop_reason: str = attrs.field(default="final", converter=_stop_reason)


@attrs.frozen
class _ChunkRecord:
    # StreamChunk's fields as an attrs class: its dict form, checked by cattrs as every other type's is.
    content: Optional[str] = None
    reasoning: Optional[str] = None
    tool_calls: Tuple[ToolCall, ...] = attrs.field(default=(), converter=as_tuple)
    finish_reason: Optional[str] = None
    usage: Optional[Usage] = None
    metadata: Mapping[str, Any] = attrs.field(factory=dict)
    parsed: Any = None


def _part_to_dict(part: ContentPart) -> dict[str, Any]:
    if isinstance(part, TextPart):
        return {"type": "text", "text": part.text}
    out: dict[str, Any] = {"type": "image"}
    if part.url is not None:
        out["url"] = part.url
    else:
        out["data"], out["media_type"] = part.as_url().partition(",")[2], part.media_type
    if part.detail:
        out["detail"] = part.detail
    return out


def _part_from_dict(raw: Any) -> ContentPart:
    import base64

    if not isinstance(raw, Mapping) or raw.get("type") not in ("text", "image"):
        raise ValueError(f"a content part must be a dict with type 'text' or 'image', got {raw!r:.80}")
    if raw["type"] == "text":
        return TextPart(str(raw["text"]))
    data = raw.get("data")
    return ImagePart(url=raw.get("url"), data=base64.b64decode(data) if isinstance(data, str) else None,
                     media_type=raw.get("media_type"), detail=raw.get("detail"))


def _content_to_plain(content: MessageContent) -> Any:
    if content is None or isinstance(content, str):
        return content
    return [_part_to_dict(p) for p in content]


def _content_from_plain(value: Any, _: Any) -> MessageContent:
    if value is None or isinstance(value, str):
        return value
    if not isinstance(value, (list, tuple)):
        raise ValueError(f"message content must be a string, null or a list of parts, got {type(value).__name__}")
    return tuple(_part_from_dict(p) for p in value)


def _make_converter() -> cattrs.Converter:
    conv = cattrs.Converter(forbid_extra_keys=True, omit_if_default=False)
    conv.register_unstructure_hook(Role, lambda r: r.value)
    conv.register_structure_hook(Role, lambda v, _: _role(v))
    conv.register_unstructure_hook_func(lambda t: t == MessageContent, _content_to_plain)
    conv.register_structure_hook_func(lambda t: t == MessageContent, _content_from_plain)
    conv.register_unstructure_hook(StreamChunk, lambda c: conv.unstructure(_ChunkRecord(*c)))
    conv.register_structure_hook(StreamChunk, lambda v, _: StreamChunk(*attrs.astuple(conv.structure(v, _ChunkRecord),
                                                                                       recurse=False)))
    return conv


#: The cattrs converter for every type in this module (extra keys are an error when structuring).
converter = _make_converter()


def to_dict(obj: Any) -> Any:
    """Unstructure an attrs value (or a list of them) into plain dicts, lists and scalars."""
    return converter.unstructure(obj)


def from_dict(cls: type[T], data: Any) -> T:
    """Structure plain data into ``cls``; unknown keys and wrong types raise ``cattrs`` errors."""
    return converter.structure(data, cls)


def to_json(obj: Any) -> str:
    """``to_dict`` then ``json.dumps``."""
    return json.dumps(to_dict(obj), ensure_ascii=False)


def from_json(cls: type[T], text: str) -> T:
    """``json.loads`` then ``from_dict``."""
    return from_dict(cls, json.loads(text))
