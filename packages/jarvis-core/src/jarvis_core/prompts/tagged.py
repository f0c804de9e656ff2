"""The base of text-mode providers whose model writes its calls as tags in the reply text.

:class:`TaggedCallsProvider` is what such a family shares whatever its tags: the provider's name is its class
name, the response format is plain text (no JSON grammar may constrain tagged output), model noise is
removed by :meth:`~TaggedCallsProvider.clean_output` before the calls are read by
:meth:`~TaggedCallsProvider.read_calls` (default: :func:`~jarvis_core.prompts.output.parse_tagged_calls` over
``<tool_call>`` tags), and training completions are written in the model's own call format.

When cleaning removed noise and what is left is already Jarvis JSON, that Jarvis JSON is returned (not None):
None would hand the *uncleaned* text on.
"""

from __future__ import annotations

import json
from typing import Any, Dict, FrozenSet, Mapping, Optional, Sequence, Tuple

from jarvis_core.prompts.blocks import (
    fallback_line,
    function_calling_intro,
    identity_header,
    join_sections,
    rules_block,
    tool_call_format,
)
from jarvis_core.prompts.context import NodeContext, ToolsInput
from jarvis_core.prompts.jarvis_json import JarvisReply
from jarvis_core.prompts.output import ARRAY_PARAMS, parse_tagged_calls
from jarvis_core.prompts.provider import PromptProvider

__all__ = ["TEXT_FORMAT", "TaggedCallsProvider"]

#: The response format of every text-tag provider.
TEXT_FORMAT: Dict[str, Any] = {"type": "text"}


class TaggedCallsProvider(PromptProvider):
    """A provider reading ``<tool_call>{json}</tool_call>``-style calls from the reply text.

    Subclasses set :attr:`call_tags` for other tags, :attr:`array_params` for the parameters always given as
    lists, override :meth:`clean_output` to strip their model's noise and :meth:`read_calls` for another
    call syntax, and implement :meth:`prompt_sections` (the system prompt's sections, in order), or
    :meth:`build_system_prompt` itself.
    """

    training_tier = "untrained"
    #: The tags around one call, as the model writes them.
    call_tags: Tuple[str, str] = ("<tool_call>", "</tool_call>")
    #: Parameters whose single-string value becomes a one-element list.
    array_params: FrozenSet[str] = ARRAY_PARAMS

    @property
    def name(self) -> str:
        return type(self).__name__

    def build_system_prompt(
        self,
        node_context: Mapping[str, Any],
        timezone: Optional[str],
        tools: ToolsInput,
        available_commands: Optional[Sequence[Mapping[str, Any]]] = None,
    ) -> str:
        """The sections :meth:`prompt_sections` gives for the coerced ``node_context``, joined (empty ones
        left out)."""
        return join_sections(*self.prompt_sections(NodeContext.coerce(node_context), tools, available_commands))

    def prompt_sections(
        self, ctx: NodeContext, tools: ToolsInput, available_commands: Optional[Sequence[Mapping[str, Any]]],
    ) -> Sequence[str]:
        """The system prompt's sections in order (``""`` for one left out)."""
        raise NotImplementedError(f"{type(self).__name__} implements neither prompt_sections nor build_system_prompt")

    def get_response_format(self) -> Optional[Dict[str, Any]]:
        """Plain text: the calls are tags in the text, so no JSON grammar may constrain the output."""
        return dict(TEXT_FORMAT)

    def clean_output(self, raw: str) -> str:
        """Model noise removed before the calls are read (default: nothing)."""
        return raw

    def read_calls(self, text: str) -> Optional[JarvisReply]:
        """The reply read from cleaned ``text``; None when the text needs no change (see
        :func:`~jarvis_core.prompts.output.parse_tagged_calls`)."""
        open_tag, close_tag = self.call_tags
        return parse_tagged_calls(text, open_tag=open_tag, close_tag=close_tag, array_params=self.array_params)

    def parse_response(self, raw_content: str) -> Optional[str]:
        """Tagged calls, a bare or fenced call object, Jarvis JSON or plain text, read into Jarvis JSON.
        Never raises."""
        raw = raw_content or ""
        cleaned = self.clean_output(raw)
        reply = self.read_calls(cleaned)
        if reply is None and cleaned.strip() != raw.strip():
            reply = JarvisReply.parse(cleaned)  # noise removed around Jarvis JSON: hand on the clean JSON
        return None if reply is None else reply.to_json()

    def sanitize_text(self, text: str) -> str:
        """What is spoken: the text without the model's noise."""
        return self.clean_output(text).strip()

    def build_training_system_prompt(self) -> str:
        """The inference prompt's fixed parts (identity, format, rules), without tools or devices."""
        open_tag, close_tag = self.call_tags
        return join_sections(identity_header(), function_calling_intro(), tool_call_format(open_tag, close_tag),
                             rules_block(), fallback_line())

    def build_training_completion(self, tool_call: Mapping[str, Any]) -> str:
        """The call as the model writes it at inference: a tagged block after a space."""
        open_tag, close_tag = self.call_tags
        return f" {open_tag}\n{json.dumps(dict(tool_call), ensure_ascii=False)}\n{close_tag}"

    def get_capabilities(self) -> Dict[str, Any]:
        caps = super().get_capabilities()
        caps.update(force_tool_calls=self.force_tool_calls, lazy_tool_loading=self.lazy_tool_loading,
                    user_message_suffix=self.user_message_suffix)
        return caps
