"""Typed keys for the per-run values this package's agents and their tools share through ``run.state``.

``run.state`` (:class:`~jarvis_core.agents.AgentRun`) is a plain dict of ``Any``. A :class:`RunKey` names
one of its entries together with the entry's type, as a :class:`contextvars.ContextVar` does for a context
value: a reader gets an ``int`` or a :class:`~jarvis_agents.agents.cells.CellTool` rather than ``Any``, and
a misspelt key is a ``NameError`` instead of a silent miss. The entry keeps its name, so
``run.state["window"]`` still holds what ``WINDOW.set(run, ...)`` put there.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Generic, TypeVar, Union, cast, overload

if TYPE_CHECKING:
    from jarvis_core.agents import AgentRun

__all__ = ["RunKey"]

T = TypeVar("T")
D = TypeVar("D")

_MISSING = object()


class RunKey(Generic[T]):
    """One typed entry of ``run.state``."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    @overload
    def get(self, run: AgentRun) -> T: ...

    @overload
    def get(self, run: AgentRun, default: D) -> Union[T, D]: ...

    def get(self, run: AgentRun, default: object = _MISSING) -> object:
        """The run's value; ``default`` when it has none (without one: :class:`KeyError`)."""
        if default is _MISSING:
            return cast(T, run.state[self.name])
        return run.state.get(self.name, default)

    def set(self, run: AgentRun, value: T) -> None:
        """Give the run its value."""
        run.state[self.name] = value

    def pop(self, run: AgentRun, default: D) -> Union[T, D]:
        """Remove the run's value and return it (``default`` when it had none)."""
        return cast(Union[T, D], run.state.pop(self.name, default))

    def __repr__(self) -> str:
        return f"<RunKey {self.name!r}>"
