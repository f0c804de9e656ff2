"""A provider put to work: the messages and request options it shapes, and the replies it reads.

:class:`PromptSession` is what ``Jarvis.ask(prompt_provider=…)`` uses, and the hook point for agents: an
agent given a session builds each turn's messages with :meth:`PromptSession.messages`, sends them with
:meth:`PromptSession.request_options` and reads the reply with :meth:`PromptSession.read`, so the same
provider drives its prompts and parsing (:class:`~jarvis_core.prompts.PromptDrivenAgent` does exactly that).

Text mode (``supports_native_tools`` False): the tools are in the system prompt, the engine gets no
``tools`` but the provider's ``response_format``, and the reply text goes through ``parse_response``.
Native mode: the engine gets ``build_tools(tools)`` and no ``response_format``; its structured tool calls
are used as they are and ``parse_response`` is not called. In both modes the provider's suffix is appended
to every user turn.

Two provider flags need the caller's help, and the session gives it: with ``lazy_tool_loading`` the model's
``get_tools`` calls are answered here (:meth:`PromptSession.answer_get_tools`; in native mode the tools it
fetched are sent from then on), and with ``force_tool_calls`` a first reply without a tool call is asked
again once with :data:`TOOL_CALL_REQUIRED` (:meth:`PromptSession.needs_tool_call`).
"""

from __future__ import annotations

import functools
from typing import Any, Collection, Dict, List, Mapping, Optional, Sequence, Tuple

import attrs

from jarvis_core.content import TextPart
from jarvis_core.errors import JarvisError
from jarvis_core.prompts.context import NodeContext, coerce_commands, coerce_tools
from jarvis_core.prompts.jarvis_json import JarvisReply
from jarvis_core.prompts.lazy import GET_TOOLS_NAME, get_tools_answer, get_tools_spec
from jarvis_core.prompts.provider import JARVIS_JSON_RESPONSE_FORMAT, PromptProvider, append_suffix
from jarvis_core.types import Completion, Message, MessageLike, Role, ToolCall, ToolResult

__all__ = ["TOOL_CALL_REQUIRED", "PromptReply", "PromptSession"]

#: The corrective user turn sent once when a provider forces tool calls and the model answered without one.
TOOL_CALL_REQUIRED = ("You answered without calling a tool. Call the tool that does what I asked now; answer in "
                      "words only if none of the tools can do it.")


@attrs.frozen
class PromptReply:
    """What came back: the Jarvis JSON reply, the engine completion rewritten to carry its message as
    ``content`` and its calls as ``tool_calls``, and whether ``parse_response`` was used."""

    reply: JarvisReply
    completion: Completion
    parsed_by_provider: bool


def _tools(value: Any) -> Tuple[Dict[str, Any], ...]:
    return tuple(coerce_tools(value))


def _node_context(value: Any) -> NodeContext:
    return NodeContext.coerce(value)


def _commands(value: Any) -> Tuple[Dict[str, Any], ...]:
    return tuple(coerce_commands(value))


@attrs.frozen
class PromptSession:
    """One provider with one request's context and tools (immutable; build one per conversation)."""

    provider: PromptProvider
    tools: Tuple[Dict[str, Any], ...] = attrs.field(default=(), converter=_tools)
    node_context: NodeContext = attrs.field(factory=NodeContext, converter=_node_context)
    timezone: Optional[str] = None
    available_commands: Tuple[Dict[str, Any], ...] = attrs.field(
        default=(), converter=_commands)

    @property
    def native(self) -> bool:
        """True when the provider sends tools natively."""
        return bool(self.provider.supports_native_tools)

    @functools.cached_property
    def system_prompt(self) -> str:
        """The provider's system prompt for this context and these tools (built once)."""
        return self.provider.build_system_prompt(
            self.node_context.to_dict(), self.timezone, list(self.tools), list(self.available_commands) or None
        )

    def messages(self, prompt: Any) -> List[Message]:
        """The messages to send: the provider's system prompt, then the conversation with the suffix on
        every user turn. ``prompt`` is text or a conversation; a conversation with a system message of its
        own is a :class:`JarvisError` (the provider's prompt would be lost)."""
        from jarvis_core.engine.messages import coerce_messages

        convo: Sequence[MessageLike] = [Message.user(prompt)] if isinstance(prompt, str) else list(prompt)
        out: List[Message] = [Message.system(self.system_prompt)]
        suffix = self.provider.user_message_suffix
        for msg in coerce_messages(convo):
            if msg.role is Role.SYSTEM:
                raise JarvisError(f"the conversation has its own system message; prompt provider "
                                  f"{self.provider.name!r} builds the system prompt (drop it, or ask without a provider)")
            if msg.role is Role.USER and suffix:
                content = msg.content
                msg = attrs.evolve(msg, content=append_suffix(content or "", suffix) if not isinstance(content, tuple)
                                   else (*content, TextPart(append_suffix("", suffix))))
            out.append(msg)
        return out

    def response_format(self) -> Optional[Dict[str, Any]]:
        """The ``response_format`` of text mode (the provider's, else the shared Jarvis JSON schema); None
        in native mode."""
        if self.native:
            return None
        fmt = self.provider.get_response_format()
        return dict(fmt) if fmt is not None else JARVIS_JSON_RESPONSE_FORMAT

    def request_options(self, engine: Any = None, *, loaded: Collection[str] = ()) -> Dict[str, Any]:
        """Keyword arguments for ``engine.generate``: ``tools`` in native mode, ``response_format`` in text mode.

        With ``engine`` given, an engine that takes no ``response_format`` option is checked: a plain-text
        format is left out (it asks for nothing), a JSON format is a :class:`JarvisError` naming the engine.
        A lazy-loading provider in native mode sends ``get_tools`` plus the tools named in ``loaded`` (those
        the model has fetched so far).
        """
        if self.native:
            if not self.tools:
                return {}
            if self.provider.lazy_tool_loading:
                fetched = [t for t in self.tools if t["function"]["name"] in loaded]
                return {"tools": [get_tools_spec(), *(self.provider.build_tools(fetched) if fetched else [])]}
            return {"tools": self.provider.build_tools(list(self.tools))}
        fmt = self.response_format()
        if engine is not None and "response_format" not in getattr(engine, "allowed_options", ()):
            if fmt is None or fmt.get("type") == "text":
                return {}
            name = getattr(engine, "engine_id", "") or type(engine).__name__
            raise JarvisError(f"prompt provider {self.provider.name!r} needs a JSON response format, which engine "
                              f"{name!r} does not accept; use an OpenAI-compatible engine (llamacpp, vllm, …)")
        return {"response_format": fmt}

    def read(self, completion: Completion) -> PromptReply:
        """Read the engine's reply. Never raises on model output.

        Native mode: the engine's structured calls and content are used as they are. Text mode: the content
        goes through ``parse_response``; when that returns None the text is read as Jarvis JSON or, failing
        that, as a plain message (after ``sanitize_text``). Calls an engine-side parser already extracted
        are kept when the provider found none.
        """
        content = completion.content or ""
        if self.native:
            reply = JarvisReply(message=self.provider.sanitize_text(content))
            return PromptReply(reply, completion, parsed_by_provider=False)
        parsed = _safe_parse(self.provider, content)
        reply = JarvisReply.from_text(parsed) if parsed is not None else JarvisReply.from_text(
            self.provider.sanitize_text(content))
        calls = reply.to_tool_calls() or tuple(completion.tool_calls)
        finish = "tool_calls" if calls else ("stop" if completion.finish_reason == "tool_calls" else completion.finish_reason)
        rewritten = attrs.evolve(completion, content=reply.message, tool_calls=calls, finish_reason=finish)
        return PromptReply(reply, rewritten, parsed_by_provider=parsed is not None)

    # -- lazy tool loading and forced tool calls ----------------------------------------------------------
    def is_get_tools(self, call: ToolCall) -> bool:
        """True for a ``get_tools`` call this session answers itself (a lazy-loading provider, and no real
        tool of that name among the session's tools)."""
        return (bool(self.provider.lazy_tool_loading) and call.name == GET_TOOLS_NAME
                and all(t["function"]["name"] != GET_TOOLS_NAME for t in self.tools))

    def answer_get_tools(self, call: ToolCall) -> Tuple[ToolResult, Tuple[str, ...]]:
        """The result of a ``get_tools`` call: the requested tools' definitions from this session's tools
        (see :func:`~jarvis_core.prompts.lazy.get_tools_answer`), and the names it defined."""
        content, names = get_tools_answer(self.tools, call.arguments)
        return ToolResult(call.id, call.name, content, ok=True), names

    def needs_tool_call(self, calls: Sequence[ToolCall]) -> bool:
        """True when the provider forces tool calls, tools were given, and ``calls`` (a reply's) is empty."""
        return bool(self.provider.force_tool_calls) and bool(self.tools) and not calls

    def tool_call_required(self) -> Message:
        """The corrective user turn (:data:`TOOL_CALL_REQUIRED` with the provider's suffix)."""
        return Message.user(append_suffix(TOOL_CALL_REQUIRED, self.provider.user_message_suffix))

    def describe(self) -> Mapping[str, Any]:
        """What this session sends, for ``--json`` output and logs (no prompt text)."""
        return {"provider": self.provider.name, "mode": "native" if self.native else "text",
                "tools": [t["function"]["name"] for t in self.tools],
                "user_message_suffix": self.provider.user_message_suffix,
                "response_format": self.response_format(),
                "lazy_tool_loading": bool(self.provider.lazy_tool_loading),
                "force_tool_calls": bool(self.provider.force_tool_calls)}


def _safe_parse(provider: PromptProvider, content: str) -> Optional[str]:
    """``parse_response``; a provider that raises broke its contract, reported as a :class:`JarvisError`
    naming it (a bug in the plugin, not in the model's output)."""
    try:
        out = provider.parse_response(content)
    except Exception as exc:
        raise JarvisError(f"prompt provider {provider.name!r} failed to parse the reply: "
                          f"{type(exc).__name__}: {exc}") from exc
    if out is not None and not isinstance(out, str):
        raise JarvisError(f"prompt provider {provider.name!r} returned {type(out).__name__} from parse_response; "
                          "expected a Jarvis JSON string or None")
    return out
