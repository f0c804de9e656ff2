"""Counting the model calls tools make (the ``llm`` tool) into the usage of the agent run that called them.

The core's :class:`~jarvis_core.types.ToolResult` carries text, not usage, so the run's total reaches the
tool through a context variable: the agents of this package set it for the duration of a run
(:func:`usage_sink`), and a tool that calls a model reports its usage with :func:`report_usage`. Tools
that do so implement ``arun`` (run on the agent's event loop, where the variable is visible); asyncio
tasks copy the context, so parallel calls report into the right run too. Outside an agent run the
report goes nowhere.
"""

from __future__ import annotations

import contextlib
import contextvars
from typing import Any, Iterator, Optional

from jarvis_core.types import Usage

__all__ = ["report_usage", "usage_sink"]

_SINK: contextvars.ContextVar[Optional[Any]] = contextvars.ContextVar("jarvis_agents_usage_sink", default=None)


@contextlib.contextmanager
def usage_sink(run: Any) -> Iterator[None]:
    """While active, :func:`report_usage` adds to ``run.usage`` (an :class:`~jarvis_core.agents.AgentRun`)."""
    token = _SINK.set(run)
    try:
        yield
    finally:
        try:
            _SINK.reset(token)
        except ValueError:  # finalised in another context (an async generator closed elsewhere)
            _SINK.set(None)


def report_usage(usage: Optional[Usage]) -> bool:
    """Add ``usage`` to the current run's total; returns whether a run was listening."""
    run = _SINK.get()
    if run is None or usage is None:
        return False
    from jarvis_core.agents.run import add_usage

    run.usage = add_usage(run.usage, usage)
    run.model_calls += 1
    return True
