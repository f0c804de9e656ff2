"""Llama providers: Llama 3.1's ``<function=name>{…}</function>`` calls, read tolerantly.

- ``LlamaSmallUntrained``: the reference layout with Jarvis JSON as the reply (the shared JSON-schema
  response format; no reading of its own).
- ``Llama32_3B_Compressed``: ``<function=…>`` calls; tools listed compactly as ``name(param: type)``.
- ``Llama31MediumUntrained``: ``<function=…>`` calls with the full layout.
- ``Llama33ThinkingMediumUntrained``: a thinking Llama 3.3 tune: ``/no_think`` on every user turn, thinking
  stripped, ``<tool_call>`` blocks read first, then ``<function=…>`` tags; a reply cut off while thinking is
  an empty reply with an error, not the thinking text.

What :func:`function_tag_calls` tolerates (small Llamas drift): no ``=`` (``<function>name>{…}``), a missing
or malformed closing tag, a self-closing no-argument call (``<function=name />``), ``;`` or ``"`` after the
arguments, over-escaped quotes (``{\\"a\\": 1}``) and arguments nested in ``{"param": {…}}`` (a dict only: a
scalar ``param`` is a real parameter). Calls are rebuilt as ``{name, arguments}``; date keys become lists.
"""

from __future__ import annotations

import json
import re
from typing import Any, Dict, List, Optional

from jarvis_core.parsers.scan import raw_decode
from jarvis_core.prompts.blocks import tool_catalogue
from jarvis_core.prompts.jarvis_json import JarvisReply, JarvisToolCall
from jarvis_core.prompts.output import ARRAY_PARAMS, normalize_array_params, parse_tagged_calls, strip_think
from jarvis_core.prompts.provider import PromptProvider
from jarvis_prompts_families.layout import FamilyProvider

__all__ = [
    "Llama31MediumUntrained",
    "Llama32_3B_Compressed",
    "Llama33ThinkingMediumUntrained",
    "LlamaSmallUntrained",
    "function_tag_calls",
]

_OPEN = "<function"
_CLOSE = "</function>"
_HEAD = re.compile(r"<function(?:\s*=\s*|\s*>\s*|\s+)([A-Za-z_][\w.\-]*)\s*(/\s*>|>)?")
#: Bounds the work on long, tag-heavy output.
_MAX_CALLS = 32


def _arguments(body: str) -> Optional[Dict[str, Any]]:
    """The first JSON object in ``body`` (text after it ignored), over-escaped quotes undone; None if none."""
    start = body.find("{")
    if start == -1:
        return {} if not body.strip(" \t\r\n;\"'") else None
    for text in (body[start:], body[start:].replace('\\"', '"')):
        try:
            obj, _end = raw_decode(text)
        except ValueError:
            continue
        if isinstance(obj, dict):
            inner = obj.get("param")
            return dict(inner) if len(obj) == 1 and isinstance(inner, dict) else obj
    return None


def function_tag_calls(text: str) -> List[JarvisToolCall]:
    """Every readable ``<function=name>{args}</function>`` call in ``text``, in order (see the module doc)."""
    calls: List[JarvisToolCall] = []
    pos = text.find(_OPEN)
    while pos != -1 and len(calls) < _MAX_CALLS:
        nxt = text.find(_OPEN, pos + len(_OPEN))
        segment = text[pos: nxt if nxt != -1 else len(text)]
        head = _HEAD.match(segment)
        if head is not None:
            closing = head.group(2) or ""
            body = "" if closing.startswith("/") else segment[head.end():]
            end = body.find(_CLOSE)
            args = _arguments(body[:end] if end != -1 else body)
            if args is not None:
                calls.append(JarvisToolCall(head.group(1), normalize_array_params(args, ARRAY_PARAMS)))
        pos = nxt
    return calls


LLAMA_CALL_FORMAT = (
    "To call a function, reply with only this, the arguments as a JSON object:\n"
    '<function=example_function_name>{"example_name": "example_value"}</function>\n'
    "Several calls follow each other the same way."
)


class LlamaSmallUntrained(FamilyProvider):
    """Small Llamas with the reference layout, replying in Jarvis JSON (the shared JSON schema)."""

    model_family = "llama"
    size_tier = "small"

    def get_response_format(self) -> None:
        return None

    def call_format(self) -> str:
        return ('Reply with one JSON object: {"message": "<what to say>", "tool_calls": [{"name": "<function>", '
                '"arguments": {…}}], "error": null}; leave tool_calls empty to just answer.')

    def read_calls(self, text: str) -> None:
        return None  # Jarvis JSON: read downstream as it is

    def build_training_completion(self, tool_call: Any) -> str:
        return PromptProvider.build_training_completion(self, tool_call)  # space + Jarvis JSON


class Llama31MediumUntrained(FamilyProvider):
    """Llama 3.1 8B: the full layout, ``<function=name>{…}</function>`` calls read tolerantly."""

    model_family = "llama"
    call_tags = ("<function=", "</function>")

    def call_format(self) -> str:
        return LLAMA_CALL_FORMAT

    def read_calls(self, text: str) -> Optional[JarvisReply]:
        calls = function_tag_calls(text)
        return JarvisReply.calls(calls) if calls else parse_tagged_calls(text)

    def build_training_completion(self, tool_call: Any) -> str:
        call = JarvisToolCall.from_object(tool_call)
        if call is None:
            return super().build_training_completion(tool_call)
        return f" <function={call.name}>{json.dumps(dict(call.arguments), ensure_ascii=False)}</function>"


class Llama32_3B_Compressed(Llama31MediumUntrained):
    """Llama 3.2 3B: the compressed layout, tools as ``name(param: type): description`` lines."""

    size_tier = "small"
    compressed = True

    def tools_block(self, tools: List[Dict[str, Any]]) -> str:
        listing = tool_catalogue(self.shown_tools(tools), with_parameters=True)
        return "Functions:\n" + listing if listing else ""


CUT_OFF_WHILE_THINKING = "the reply was cut off while the model was still thinking"


class Llama33ThinkingMediumUntrained(Llama31MediumUntrained):
    """A thinking Llama 3.3 tune: ``/no_think``, thinking stripped, ``<tool_call>`` first, then
    ``<function=…>``."""

    user_message_suffix = "/no_think"
    call_tags = ("<tool_call>", "</tool_call>")

    def call_format(self) -> str:
        return FamilyProvider.call_format(self)

    def clean_output(self, raw: str) -> str:
        return strip_think(raw, *self.think_delimiters)

    def read_calls(self, text: str) -> Optional[JarvisReply]:
        tagged = parse_tagged_calls(text)
        if tagged is not None and tagged.tool_calls:
            return tagged
        calls = function_tag_calls(text)
        return JarvisReply.calls(calls) if calls else tagged

    def parse_response(self, raw_content: str) -> Optional[str]:
        raw = raw_content or ""
        open_tag, close_tag = self.think_delimiters
        last = raw.rfind(open_tag)
        if last != -1 and close_tag not in raw[last:] and not self.clean_output(raw):
            return JarvisReply(error=CUT_OFF_WHILE_THINKING).to_json()
        return super().parse_response(raw)

    def build_training_completion(self, tool_call: Any) -> str:
        return FamilyProvider.build_training_completion(self, tool_call)
