"""Tool-call and reasoning parsers for models that write them as raw text (docs/contract.md §5).

    from jarvis_core.parsers import get_tool_parser, get_reasoning_parser
    result = get_tool_parser("hermes").parse(text, tools=tools)   # .content, .tool_calls, .diagnostics
    split = get_reasoning_parser("qwen3").parse(text)             # .content, .reasoning

    parser = get_tool_parser("hermes", tools)                     # incremental
    for delta in stream: events = parser.feed(delta)              # certain content as it comes
    events = parser.finish(); parser.result                       # complete calls at the end

Parsers are found through the plugin registry (kinds ``tool:<name>`` / ``reasoning:<name>``), so a plugin
can add one. Names are imported lazily: the built-in plugin module lives in this package.
"""

from __future__ import annotations

from jarvis_core.lazy import lazy_exports

_EXPORTS = {
    "Diagnostic": "base",
    "ParsedDelta": "base",
    "ReasoningParser": "base",
    "ReasoningResult": "base",
    "StreamSnapshot": "base",
    "ToolCallPreview": "base",
    "ToolParseResult": "base",
    "ToolParser": "base",
    "OutputParser": "compose",
    "ParsedOutput": "compose",
    "get_reasoning_parser": "lookup",
    "get_tool_parser": "lookup",
    "parse_output": "compose",
    "reasoning_parser_names": "lookup",
    "tool_parser_names": "lookup",
}

__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, {k: f"{__name__}.{m}" for k, m in _EXPORTS.items()}, globals())


