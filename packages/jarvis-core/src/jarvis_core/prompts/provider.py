"""The prompt-provider contract: how to talk to one model family at one size and training tier.

A provider builds the system prompt (identity, rules, tools, devices), says how the request is shaped
(tools in the prompt or native tools, the response format, a suffix for user turns) and turns the model's
reply into Jarvis JSON. Plugins register subclasses through ``jarvis_register_prompt_providers``; see
``docs/prompts.md`` for a worked example.

Only :attr:`PromptProvider.name` and :meth:`PromptProvider.build_system_prompt` are required; every other
member has a default.
"""

from __future__ import annotations

import abc
import warnings
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from jarvis_core.prompts.context import ToolsInput, coerce_tools
from jarvis_core.prompts.jarvis_json import JarvisReply, JarvisToolCall

__all__ = ["JARVIS_JSON_RESPONSE_FORMAT", "PromptProvider", "append_suffix"]

#: The response format a text-mode provider gets when it does not choose one: a JSON schema for Jarvis JSON.
JARVIS_JSON_RESPONSE_FORMAT: Dict[str, Any] = {
    "type": "json_schema",
    "json_schema": {
        "name": "jarvis_reply",
        "schema": {
            "type": "object",
            "properties": {
                "message": {"type": "string"},
                "tool_calls": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "name": {"type": "string"},
                            "arguments": {"type": "object"},
                            "failure_message": {"type": "string"},
                        },
                        "required": ["name", "arguments"],
                    },
                },
                "error": {"type": ["string", "null"]},
            },
            "required": ["message", "tool_calls"],
        },
    },
}


def append_suffix(text: str, suffix: str) -> str:
    """A user turn with the provider's suffix: ``"text /no_think"``. One space joins them unless the suffix
    starts with whitespace of its own; an empty suffix leaves the text as is, and a turn already ending with
    the suffix is not given it twice."""
    if not suffix or text.endswith(suffix):
        return text
    return text + suffix if suffix[:1].isspace() else f"{text.rstrip()} {suffix}"


class PromptProvider(abc.ABC):
    """Base class of every prompt provider (the ``IJarvisPromptProvider`` contract).

    Subclasses set the class attributes that describe them and implement :attr:`name` and
    :meth:`build_system_prompt`; the rest is optional.
    """

    #: Metadata reported by :meth:`get_capabilities`.
    model_family: str = "unknown"
    size_tier: str = "unknown"
    training_tier: str = "unknown"
    #: Let a tool router pre-filter the tools before the prompt is built (trained/cloud providers: False).
    use_tool_classifier: bool = True
    #: True: tools go to the engine's ``tools`` and structured calls come back; ``parse_response`` is not used.
    supports_native_tools: bool = False
    #: Appended to every user turn (control tokens such as ``/no_think``); see :func:`append_suffix`.
    user_message_suffix: str = ""
    #: The prompt lists capabilities plus one ``get_tools`` meta-tool; schemas are fetched on demand (the
    #: session answers ``get_tools`` itself, see :mod:`jarvis_core.prompts.lazy`).
    lazy_tool_loading: bool = False
    #: The model must act through a tool: when tools were given and its first reply calls none, the request
    #: is retried once with a corrective user turn (:data:`jarvis_core.prompts.session.TOOL_CALL_REQUIRED`).
    force_tool_calls: bool = False
    #: Reasoning delimiters streaming code hides from the user.
    think_delimiters: Tuple[str, str] = ("<think>", "</think>")

    @property
    @abc.abstractmethod
    def name(self) -> str:
        """The unique provider name (``Qwen25MediumUntrained``); looked up case-insensitively."""

    @abc.abstractmethod
    def build_system_prompt(
        self,
        node_context: Mapping[str, Any],
        timezone: Optional[str],
        tools: ToolsInput,
        available_commands: Optional[Sequence[Mapping[str, Any]]] = None,
    ) -> str:
        """The whole system prompt.

        :param node_context: the node's room, user (``speaker_name``), voice mode, memories and agent data;
            read it with :meth:`jarvis_core.prompts.NodeContext.coerce`.
        :param timezone: the node's IANA timezone, or None.
        :param tools: OpenAI function schemas (``ToolSpec`` values are accepted too); they may carry Jarvis
            extras such as ``allow_direct_answer``, ``included_system_prompt_text`` and ``antipatterns``.
        :param available_commands: flags per command (``command_name``, ``allow_direct_answer``, ``examples``).
        """

    # -- request shape --------------------------------------------------------------------------------
    def get_response_format(self) -> Optional[Dict[str, Any]]:
        """The ``response_format`` sent in text mode. ``None`` (the default) means the shared Jarvis JSON
        schema (:data:`JARVIS_JSON_RESPONSE_FORMAT`); text-tag providers return ``{"type": "text"}``."""
        return None

    def build_tools(self, tools: ToolsInput) -> List[Dict[str, Any]]:
        """The tools sent to the engine in native mode. Default: OpenAI wrappers with the standard keys."""
        out = []
        for tool in coerce_tools(tools):
            fn = tool["function"]
            out.append({"type": "function",
                        "function": {k: fn[k] for k in ("name", "description", "parameters") if k in fn}})
        return out

    # -- reading replies ------------------------------------------------------------------------------
    def parse_response(self, raw_content: str) -> Optional[str]:
        """Turn the model's own output into a Jarvis JSON string, or return None to pass the text on
        unchanged (it is then read as Jarvis JSON or as a plain message). Must never raise. Default: None."""
        return None

    def sanitize_text(self, text: str) -> str:
        """Scrub user-facing text (what is spoken): thinking, tags, chat tokens. Default: unchanged."""
        return text

    # -- training -------------------------------------------------------------------------------------
    def build_training_system_prompt(self) -> str:
        """The system message of a fine-tuning example (the inference prompt without per-request parts)."""
        return ("You are Jarvis, a voice assistant. Reply with one JSON object: "
                '{"message": "", "tool_calls": [{"name": "<tool>", "arguments": {...}}], "error": null}.')

    def build_training_completion(self, tool_call: Mapping[str, Any]) -> str:
        """The assistant message of a fine-tuning example for ``tool_call`` (``{"name", "arguments"}``), in the
        format the model writes at inference. Default: a space, then Jarvis JSON with that one call."""
        call = JarvisToolCall.from_object(tool_call)
        reply = JarvisReply.calls([call]) if call is not None else JarvisReply()
        return " " + reply.to_json()

    def build_training_prompt(self, voice_command: str) -> str:
        """Deprecated: use :meth:`build_training_system_prompt` with the command as the user message."""
        warnings.warn(
            "PromptProvider.build_training_prompt() is deprecated; use build_training_system_prompt() and send "
            "the voice command as the user message", DeprecationWarning, stacklevel=2,
        )
        return f"{self.build_training_system_prompt()}\n\nUser: {voice_command}"

    # -- metadata -------------------------------------------------------------------------------------
    def get_capabilities(self) -> Dict[str, Any]:
        """``provider_name``, ``model_family``, ``size_tier``, ``training_tier``, ``use_tool_classifier`` and
        ``supports_native_tools`` (subclasses may add keys)."""
        return {
            "provider_name": self.name,
            "model_family": self.model_family,
            "size_tier": self.size_tier,
            "training_tier": self.training_tier,
            "use_tool_classifier": self.use_tool_classifier,
            "supports_native_tools": self.supports_native_tools,
        }

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}>"
