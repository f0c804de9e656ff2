"""A plain function as a tool: the :func:`tool` decorator and :func:`function_tool`.

Without ``parameters=``, the JSON schema is built from the function's type hints and its docstring's
argument descriptions (:mod:`jarvis_core.tools.signature`)::

    @tool
    def weather(city: str, unit: Literal["C", "F"] = "C") -> str:
        \"\"\"The weather in a city.

        Args:
            city: the city's name.
            unit: Celsius or Fahrenheit.
        \"\"\"
        return f"sunny in {city}, 21 {unit}"
"""

from __future__ import annotations

import inspect
from typing import Any, Callable, Dict, Mapping, Optional, Union, overload

from jarvis_core.errors import UsageError
from jarvis_core.tools.policy import ToolPolicy
from jarvis_core.types import ToolSpec

__all__ = ["AsyncFunctionTool", "FunctionTool", "function_tool", "tool"]


class FunctionTool:
    """A plain (synchronous) function honouring the tool contract (see :func:`function_tool`)."""

    def __init__(self, fn: Callable[..., Any], spec: ToolSpec, policy: ToolPolicy,
                 convert: Optional[Dict[str, Callable[[Any], Any]]] = None) -> None:
        self.spec = spec
        self.policy = policy
        self._fn = fn
        self._convert = convert or {}

    def _arguments(self, arguments: Dict[str, Any]) -> Dict[str, Any]:
        if not self._convert:
            return arguments
        return {k: (self._convert[k](v) if k in self._convert else v) for k, v in arguments.items()}

    def run(self, **arguments: Any) -> Any:
        """Call the function with the (schema-checked) arguments as keywords."""
        return self._fn(**self._arguments(arguments))

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """The decorated function stays callable as before."""
        return self._fn(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<function tool {self.spec.name!r}>"


class AsyncFunctionTool(FunctionTool):
    """An async function honouring the tool contract: the executor awaits :meth:`arun`."""

    run = None  # type: ignore[assignment]  # no sync run: the executor awaits arun (or runs it on a loop)

    async def arun(self, **arguments: Any) -> Any:
        """Await the function with the (schema-checked) arguments as keywords."""
        return await self._fn(**self._arguments(arguments))


def function_tool(fn: Callable[..., Any], *, name: Optional[str] = None, description: str = "",
                  parameters: Optional[Mapping[str, Any]] = None, policy: Optional[ToolPolicy] = None) -> FunctionTool:
    """A plain function (sync or async) as a tool, called with the arguments as keywords. Its return value
    becomes the tool message (strings as they are, anything else as JSON).

    ``name`` defaults to the function's name; ``parameters`` (a JSON schema) to the schema built from the
    signature and docstring (:mod:`jarvis_core.tools.signature`); ``description`` to the docstring's summary;
    ``policy`` to :class:`~jarvis_core.tools.ToolPolicy`'s defaults.

    >>> weather = function_tool(lambda city: f"sunny in {city}", name="weather", description="The weather.",
    ...                         parameters={"type": "object", "properties": {"city": {"type": "string"}}})

    :raises UsageError: the name is not letters, digits, ``_`` or ``-``; or a parameter's type has no JSON
        schema (when ``parameters`` is not given).
    """
    tool_name = name or getattr(fn, "__name__", "")
    if not tool_name or not tool_name.replace("_", "").replace("-", "").isalnum():
        raise UsageError(f"a tool name must be letters, digits, '_' or '-', got {tool_name!r}", argument="name")
    convert: Dict[str, Callable[[Any], Any]] = {}
    if parameters is None:
        from jarvis_core.tools.signature import signature_of

        built = signature_of(fn, tool_name=tool_name)
        schema, convert, summary = built.parameters, built.convert, built.description
    else:
        schema, summary = dict(parameters), (fn.__doc__ or "").strip()
    spec = ToolSpec(tool_name, description or summary, schema)
    cls = AsyncFunctionTool if inspect.iscoroutinefunction(fn) else FunctionTool
    return cls(fn, spec, policy or ToolPolicy(), convert)


@overload
def tool(fn: Callable[..., Any], /) -> FunctionTool: ...


@overload
def tool(*, name: Optional[str] = None, description: str = "",
         policy: Optional[ToolPolicy] = None) -> Callable[[Callable[..., Any]], FunctionTool]: ...


def tool(fn: Optional[Callable[..., Any]] = None, /, *, name: Optional[str] = None, description: str = "",
         policy: Optional[ToolPolicy] = None) -> Union[FunctionTool, Callable[[Callable[..., Any]], FunctionTool]]:
    """Decorate a function (sync or async) to make it a tool whose schema comes from its signature and
    docstring: ``@tool`` or ``@tool(name=..., policy=ToolPolicy(...))``. The result is still callable as
    the function; see :func:`function_tool` for the rest."""
    def wrap(f: Callable[..., Any]) -> FunctionTool:
        return function_tool(f, name=name, description=description, policy=policy)

    return wrap(fn) if fn is not None else wrap
