"""What a tool is: the :class:`Tool` protocol, and :class:`BaseTool` for authors.

A tool has a ``spec`` (:class:`~jarvis_core.types.ToolSpec`: the name, description and JSON schema the
model sees), an optional ``policy`` (:class:`~jarvis_core.tools.ToolPolicy`: how jarvis runs it, never
sent to the model) and ``run(**arguments) -> str``, or an async ``arun(**arguments) -> str``, or both.
The executor validates the arguments against ``spec.parameters`` before calling either, so a tool gets
keyword arguments of the types its schema promises.
"""

from __future__ import annotations

import inspect
from typing import Any, ClassVar, Optional, Protocol, runtime_checkable

from jarvis_core.errors import PluginError
from jarvis_core.tools.policy import ToolPolicy, policy_of
from jarvis_core.types import ToolSpec

__all__ = ["BaseTool", "InvalidToolError", "Tool", "check_tool", "has_async_run", "has_sync_run", "spec_problem"]


@runtime_checkable
class Tool(Protocol):
    """The tool contract. ``policy`` is optional (the executor uses ``ToolPolicy()`` when absent), and a
    tool may implement ``arun`` instead of (or besides) ``run``."""

    spec: ToolSpec

    def run(self, **arguments: Any) -> str:
        """Run the tool with schema-checked keyword arguments; return the text the model will read.

        Raise on failure: the executor turns any exception into a failed result naming its type.
        """
        ...  # pragma: no cover


class BaseTool:
    """A convenient base for tools: set the class attributes ``spec`` (and ``policy``), implement ``run``.

    ::

        class Clock(BaseTool):
            spec = ToolSpec("clock", "The current UTC time.", {"type": "object", "properties": {}})
            policy = ToolPolicy(timeout=2.0, isolation="inline")

            def run(self) -> str:
                return datetime.now(timezone.utc).isoformat()

    A tool that needs something at construction (an engine, a directory) takes it as a keyword argument of
    ``__init__``; :func:`~jarvis_core.tools.create_tool` passes what the signature names.
    """

    spec: ClassVar[ToolSpec]
    policy: ClassVar[ToolPolicy] = ToolPolicy()

    def run(self, **arguments: Any) -> str:
        """Run the tool. Subclasses override this (or ``arun``)."""
        raise NotImplementedError(f"{type(self).__name__} implements neither run nor arun")

    @property
    def name(self) -> str:
        """The tool's name (``spec.name``)."""
        return self.spec.name

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.spec.name!r}>"


class InvalidToolError(PluginError):
    """An object offered as a tool lacks ``spec`` or a ``run``/``arun``, or its policy is not a ToolPolicy.

    The message names the tool key and the distribution that registered it, when known.
    """


def has_sync_run(tool: Any) -> bool:
    """True when ``tool`` has a usable synchronous ``run`` (not :class:`BaseTool`'s placeholder)."""
    run = getattr(tool, "run", None)
    if not callable(run) or getattr(run, "__func__", None) is BaseTool.run:
        return False
    return not inspect.iscoroutinefunction(run)


def has_async_run(tool: Any) -> bool:
    """True when ``tool`` has an async ``arun``."""
    return inspect.iscoroutinefunction(getattr(tool, "arun", None))


#: The problem of an object without a usable ``spec``, worded for "<tool> has no 'spec' …" messages.
NO_SPEC = "has no 'spec' (a jarvis_core.types.ToolSpec describing the tool to the model)"


def spec_problem(spec: ToolSpec) -> Optional[str]:
    """What is wrong with a spec's ``parameters`` as a JSON schema (checked against its draft's metaschema,
    once per schema object), worded to follow the tool's name; ``None`` if nothing."""
    from jarvis_core.tools.schema import schema_problem

    if not spec.parameters:
        return None
    problem = schema_problem(spec.parameters)
    return None if problem is None else f"has a broken parameters schema: {problem}"


def tool_problem(tool: Any) -> Optional[str]:
    """What keeps ``tool`` from honouring the contract, worded to follow its name; ``None`` if nothing."""
    if not isinstance(getattr(tool, "spec", None), ToolSpec):
        return NO_SPEC
    broken = spec_problem(tool.spec)
    if broken is not None:
        return broken
    if not (has_sync_run(tool) or has_async_run(tool)):
        return "has neither run(**arguments) nor async arun(**arguments)"
    try:
        policy_of(tool)
    except TypeError as exc:
        return f"has a bad policy: {exc}"
    return None


def check_tool(tool: Any, *, key: Optional[str] = None, distribution: Optional[str] = None) -> Any:
    """Return ``tool`` when it honours the contract; raise :class:`InvalidToolError` otherwise."""
    problem = tool_problem(tool)
    if problem is None:
        return tool
    where = f"tool {key!r}" if key else f"tool object {type(tool).__name__}"
    if distribution:
        where += f" (from distribution {distribution!r})"
    raise InvalidToolError(f"{where} {problem}")
