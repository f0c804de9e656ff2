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

from typing import TYPE_CHECKING

from jarvis_core.lazy import lazy_exports

_LAZY = {
    "Diagnostic": "jarvis_core.parsers.base",
    "ParsedDelta": "jarvis_core.parsers.base",
    "ReasoningParser": "jarvis_core.parsers.base",
    "ReasoningResult": "jarvis_core.parsers.base",
    "StreamSnapshot": "jarvis_core.parsers.base",
    "ToolCallPreview": "jarvis_core.parsers.base",
    "ToolParseResult": "jarvis_core.parsers.base",
    "ToolParser": "jarvis_core.parsers.base",
    "OutputParser": "jarvis_core.parsers.compose",
    "ParsedOutput": "jarvis_core.parsers.compose",
    "get_reasoning_parser": "jarvis_core.parsers.lookup",
    "get_tool_parser": "jarvis_core.parsers.lookup",
    "parse_output": "jarvis_core.parsers.compose",
    "reasoning_parser_names": "jarvis_core.parsers.lookup",
    "tool_parser_names": "jarvis_core.parsers.lookup",
}

__all__ = [
    "Diagnostic",
    "OutputParser",
    "ParsedDelta",
    "ParsedOutput",
    "ReasoningParser",
    "ReasoningResult",
    "StreamSnapshot",
    "ToolCallPreview",
    "ToolParseResult",
    "ToolParser",
    "get_reasoning_parser",
    "get_tool_parser",
    "parse_output",
    "reasoning_parser_names",
    "tool_parser_names",
]

__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals())

if TYPE_CHECKING:  # pragma: no cover
    from jarvis_core.parsers.base import (
        Diagnostic,
        ParsedDelta,
        ReasoningParser,
        ReasoningResult,
        StreamSnapshot,
        ToolCallPreview,
        ToolParser,
        ToolParseResult,
    )
    from jarvis_core.parsers.compose import OutputParser, ParsedOutput, parse_output
    from jarvis_core.parsers.lookup import (
        get_reasoning_parser,
        get_tool_parser,
        reasoning_parser_names,
        tool_parser_names,
    )
