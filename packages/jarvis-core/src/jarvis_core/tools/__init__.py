"""Tools: the contract (:class:`Tool`, :class:`ToolPolicy`, :class:`BaseTool`), :func:`create_tool`,
:func:`tool` and :func:`function_tool` (a plain function as a tool, its schema from the signature) and the one :class:`ToolExecutor`; the JSON-schema
argument checker (:mod:`.schema`) and the JSON-schema tool-call mode (:mod:`.json_mode`). Names load on
first use, so importing this package is cheap.

Writing a tool::

    from jarvis_core.tools import BaseTool, ToolPolicy
    from jarvis_core.types import ToolSpec

    class Echo(BaseTool):
        spec = ToolSpec("echo", "Repeat the text.", {
            "type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]})
        policy = ToolPolicy(timeout=5.0)

        def run(self, text: str) -> str:
            return text
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from jarvis_core.lazy import lazy_exports

_LAZY = {
    "ToolContext": "jarvis_core.tools.context",
    "ToolPolicy": "jarvis_core.tools.policy",
    "policy_of": "jarvis_core.tools.policy",
    "Tool": "jarvis_core.tools.base",
    "BaseTool": "jarvis_core.tools.base",
    "InvalidToolError": "jarvis_core.tools.base",
    "check_tool": "jarvis_core.tools.base",
    "create_tool": "jarvis_core.tools.factory",
    "function_tool": "jarvis_core.tools.function",
    "tool": "jarvis_core.tools.function",
    "ToolExecutor": "jarvis_core.tools.executor",
    "Approver": "jarvis_core.tools.executor",
    "cap_output": "jarvis_core.tools.output",
    "check_arguments": "jarvis_core.tools.schema",
    "validate": "jarvis_core.tools.schema",
    "schema_problem": "jarvis_core.tools.schema",
}

__all__ = [
    "Approver",
    "BaseTool",
    "InvalidToolError",
    "Tool",
    "ToolContext",
    "ToolExecutor",
    "ToolPolicy",
    "cap_output",
    "check_arguments",
    "check_tool",
    "create_tool",
    "function_tool",
    "policy_of",
    "schema_problem",
    "tool",
    "validate",
]

__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals())

if TYPE_CHECKING:  # pragma: no cover
    from jarvis_core.tools.base import BaseTool, InvalidToolError, Tool, check_tool
    from jarvis_core.tools.context import ToolContext
    from jarvis_core.tools.executor import Approver, ToolExecutor
    from jarvis_core.tools.factory import create_tool
    from jarvis_core.tools.function import function_tool, tool
    from jarvis_core.tools.output import cap_output
    from jarvis_core.tools.policy import ToolPolicy, policy_of
    from jarvis_core.tools.schema import check_arguments, schema_problem, validate
