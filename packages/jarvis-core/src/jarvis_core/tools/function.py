"""A plain function as a tool: :func:`function_tool`."""

from __future__ import annotations

import inspect
from typing import Any, Callable, Mapping, Optional

from jarvis_core.errors import UsageError
from jarvis_core.tools.policy import ToolPolicy
from jarvis_core.types import ToolSpec

__all__ = ["function_tool"]


class FunctionTool:
    """A plain function honouring the tool contract (see :func:`function_tool`)."""

    def __init__(self, fn: Callable[..., Any], spec: ToolSpec, policy: ToolPolicy) -> None:
        self.spec = spec
        self.policy = policy
        self._fn = fn

    def run(self, **arguments: Any) -> Any:
        """Call the function with the (schema-checked) arguments as keywords."""
        return self._fn(**arguments)

    def __repr__(self) -> str:
        return f"<function tool {self.spec.name!r}>"


def function_tool(fn: Callable[..., Any], *, name: Optional[str] = None, description: str = "",
                  parameters: Optional[Mapping[str, Any]] = None, policy: Optional[ToolPolicy] = None) -> FunctionTool:
    """A plain (synchronous) function as a tool, called with the arguments as keywords. Its return value
    becomes the tool message (strings as they are, anything else as JSON).

    ``name`` defaults to the function's name, ``description`` to its docstring, ``parameters`` (a JSON
    schema) to "no arguments", ``policy`` to :class:`~jarvis_core.tools.ToolPolicy`'s defaults.

    >>> weather = function_tool(lambda city: f"sunny in {city}", name="weather", description="The weather.",
    ...                         parameters={"type": "object", "properties": {"city": {"type": "string"}}})

    :raises UsageError: the name is not letters, digits, ``_`` or ``-``, or ``fn`` is async (an async tool
        implements ``arun``: subclass :class:`~jarvis_core.tools.BaseTool`).
    """
    tool_name = name or getattr(fn, "__name__", "")
    if not tool_name or not tool_name.replace("_", "").replace("-", "").isalnum():
        raise UsageError(f"a tool name must be letters, digits, '_' or '-', got {tool_name!r}", argument="name")
    if inspect.iscoroutinefunction(fn):
        raise UsageError(f"tool {tool_name!r}: an async function needs a tool with arun (jarvis_core.tools.BaseTool)",
                         argument="fn")
    spec = ToolSpec(tool_name, description or (fn.__doc__ or "").strip(),
                    dict(parameters or {"type": "object", "properties": {}}))
    return FunctionTool(fn, spec, policy or ToolPolicy())
