"""Lazy tool loading: the ``get_tools`` meta-tool and the answer to it.

A provider with ``lazy_tool_loading`` lists what each tool is for and offers one tool, ``get_tools``; the
model calls it to fetch the full definitions of the tools it needs, then calls those. The caller, not the
model's tools, answers ``get_tools``: :class:`~jarvis_core.prompts.PromptSession` does it (from the session's
own tools), for ``Jarvis.ask`` and for :class:`~jarvis_core.prompts.PromptDrivenAgent` alike.

The answer is a JSON object ``{"tools": [<OpenAI function schema>, …]}``, with ``"unknown"`` and
``"available"`` name lists added when the model asked for names that do not exist. ``names`` omitted or
empty means every tool (the reference meta-tool took no arguments and returned them all).
"""

from __future__ import annotations

import copy
import json
from typing import Any, Dict, List, Mapping, Sequence, Tuple

from jarvis_core.prompts.jarvis_json import decode_object

__all__ = ["GET_TOOLS", "GET_TOOLS_NAME", "get_tools_answer", "get_tools_spec", "requested_names"]

#: The name of the meta-tool a lazy-loading prompt offers.
GET_TOOLS_NAME = "get_tools"

#: Its OpenAI function schema (use :func:`get_tools_spec` for a copy you may change).
GET_TOOLS: Mapping[str, Any] = {
    "type": "function",
    "function": {
        "name": GET_TOOLS_NAME,
        "description": "Get the full definitions (parameters) of tools by name; call it before calling them.",
        "parameters": {
            "type": "object",
            "properties": {"names": {"type": "array", "items": {"type": "string"},
                                     "description": "tool names from the capability list; omit for all"}},
        },
    },
}


def get_tools_spec() -> Dict[str, Any]:
    """A fresh copy of :data:`GET_TOOLS`."""
    return copy.deepcopy(dict(GET_TOOLS))


def requested_names(arguments: Any) -> Tuple[str, ...]:
    """The tool names a ``get_tools`` call asks for, read leniently: ``arguments`` is the call's JSON string
    or a mapping; ``names`` may be a list or one string (``tools`` and ``name`` are accepted for it). An
    empty tuple means "all". Never raises on model output."""
    args = decode_object(arguments) if isinstance(arguments, str) else arguments
    if not isinstance(args, Mapping):
        return ()
    value = next((args[k] for k in ("names", "tools", "name") if k in args), None)
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, (list, tuple)):
        return ()
    return tuple(dict.fromkeys(str(v).strip() for v in value if isinstance(v, str) and v.strip()))


def _standard(tool: Mapping[str, Any]) -> Dict[str, Any]:
    fn = tool["function"]
    return {"type": "function", "function": {k: fn[k] for k in ("name", "description", "parameters") if k in fn}}


def get_tools_answer(tools: Sequence[Mapping[str, Any]], arguments: Any) -> Tuple[str, Tuple[str, ...]]:
    """The content of the answer to a ``get_tools`` call, and the names of the tools it defines.

    ``tools`` are OpenAI wrappers (as :func:`~jarvis_core.prompts.context.coerce_tools` gives them); only the
    standard keys of each go into the answer (Jarvis extras stay out, as in the prompt).
    """
    by_name = {t["function"]["name"]: t for t in tools}
    wanted = requested_names(arguments) or tuple(by_name)
    found: List[Dict[str, Any]] = [_standard(by_name[n]) for n in wanted if n in by_name]
    doc: Dict[str, Any] = {"tools": found}
    unknown = [n for n in wanted if n not in by_name]
    if unknown:
        doc["unknown"] = unknown
        doc["available"] = list(by_name)
    names = tuple(t["function"]["name"] for t in found)
    return json.dumps(doc, ensure_ascii=False, separators=(",", ":")), names
