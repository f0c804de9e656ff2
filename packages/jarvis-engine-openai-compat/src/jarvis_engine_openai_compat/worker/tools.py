"""Tools for the worker's tool loop: the pluggable runner, the default in-process runner, and the limits.

The worker owns the uniform part (offering tools in the OpenAI function-calling schema, parsing calls,
checking arguments with :mod:`jarvis_core.tools.schema`, enforcing the per-tool timeout and the output cap, resuming the conversation); a
:class:`ToolRunner` owns how a tool runs (in this process, in a subprocess, remotely), so it decides how
heavy a tool is. :func:`run_tool_call` is the enforcement point: whatever the runner does, a call that
overruns its timeout ends as a ``timeout`` result and the loop moves on (the runner's work is abandoned,
not awaited), and output beyond the cap is cut with a marker the model can read.

Control tools (:mod:`.signals`) never reach a runner.
"""

from __future__ import annotations

import threading
import time
from typing import Any, Callable, Dict, List, Mapping, Optional, Protocol, Sequence, Tuple, runtime_checkable

import attrs

from jarvis_core.tools.output import cap_output, to_text
from jarvis_core.types import ToolCall, ToolResult, ToolSpec

__all__ = [
    "InProcessToolRunner",
    "ToolRun",
    "ToolRunner",
    "run_tool_call",
]

@runtime_checkable
class ToolRunner(Protocol):
    """What the worker needs from a tool runner."""

    def tool_specs(self) -> Sequence[ToolSpec]:
        """The tools this runner offers (name, description, JSON-schema parameters)."""

    def run(self, call: ToolCall, arguments: Mapping[str, Any], *, timeout: float) -> ToolResult:
        """Run one call with already-checked ``arguments``; should return within ``timeout`` seconds.

        A failure is a :class:`ToolResult` with ``ok=False`` (raising works too: the worker turns the
        exception into such a result).
        """


@attrs.frozen
class ToolRun:
    """What :func:`run_tool_call` produced: the ``result`` for the model, an ``outcome`` (``ok``, ``error``,
    ``timeout`` or ``canceled``) and the size of the output before the cap."""

    result: ToolResult
    outcome: str
    output_chars: int = 0


def run_tool_call(
    runner: ToolRunner,
    call: ToolCall,
    arguments: Mapping[str, Any],
    *,
    timeout: float,
    output_cap: int,
    cancel: Optional[threading.Event] = None,
) -> ToolRun:
    """Run ``call`` through ``runner`` under the worker's limits; never raises.

    The runner runs in a helper thread; after ``timeout`` seconds (or once ``cancel`` is set) the outcome
    is ``timeout`` (``canceled``) and the thread is left to finish on its own: Python cannot kill a thread,
    so runners whose tools may hang should run them out of process.
    """
    box: List[Any] = []
    finished = threading.Event()
    started = time.monotonic()

    def target() -> None:
        try:
            box.append(runner.run(call, arguments, timeout=timeout))
        except BaseException as exc:
            box.append(exc)
        finally:
            finished.set()

    threading.Thread(target=target, name=f"tool-{call.name}", daemon=True).start()
    deadline = started + timeout
    while not finished.is_set():
        left = deadline - time.monotonic()
        if left <= 0 or (cancel is not None and cancel.is_set()):
            break
        finished.wait(min(left, 0.1) if cancel is not None else left)
    duration = time.monotonic() - started
    if not box:
        canceled = cancel is not None and cancel.is_set()
        text = "error: the request was canceled" if canceled else f"error: tool {call.name!r} timed out after {timeout:g}s"
        return ToolRun(ToolResult(call.id, call.name, text, ok=False, duration_s=duration),
                       "canceled" if canceled else "timeout")
    value = box[0]
    if isinstance(value, BaseException):
        text = f"error: {type(value).__name__}: {value}"
        return ToolRun(ToolResult(call.id, call.name, text, ok=False, duration_s=duration), "error", len(text))
    if not isinstance(value, ToolResult):
        value = ToolResult(call.id, call.name, to_text(value))
    raw = value.content or ""
    content, cut = cap_output(raw, output_cap)
    result = ToolResult(call.id, call.name, content, ok=value.ok, truncated=cut or value.truncated, duration_s=duration)
    return ToolRun(result, "ok" if value.ok else "error", len(raw))


class InProcessToolRunner:
    """The default runner: plain Python callables called with the arguments as keywords.

    Meant for light tools. The return value becomes the tool message (strings as they are, anything else as
    JSON). A tool that may hang or run long belongs in a runner that runs it out of process.

    >>> runner = InProcessToolRunner()
    >>> runner.register(lambda city: f"sunny in {city}", name="weather", description="The weather.",
    ...                 parameters={"type": "object", "properties": {"city": {"type": "string"}}})
    """

    def __init__(self) -> None:
        self._tools: Dict[str, Tuple[ToolSpec, Callable[..., Any]]] = {}

    def register(
        self,
        fn: Callable[..., Any],
        *,
        name: Optional[str] = None,
        description: str = "",
        parameters: Optional[Mapping[str, Any]] = None,
    ) -> ToolSpec:
        """Offer ``fn`` as a tool (``name`` defaults to the function's name). Returns its spec."""
        tool_name = name or getattr(fn, "__name__", "")
        if not tool_name or not tool_name.replace("_", "").replace("-", "").isalnum():
            raise ValueError(f"a tool name must be letters, digits, '_' or '-', got {tool_name!r}")
        if tool_name in self._tools:
            raise ValueError(f"a tool named {tool_name!r} is already registered")
        spec = ToolSpec(tool_name, description or (fn.__doc__ or "").strip(),
                        dict(parameters or {"type": "object", "properties": {}}))
        self._tools[tool_name] = (spec, fn)
        return spec

    def tool_specs(self) -> Sequence[ToolSpec]:
        return [spec for spec, _ in self._tools.values()]

    def run(self, call: ToolCall, arguments: Mapping[str, Any], *, timeout: float) -> ToolResult:
        entry = self._tools.get(call.name)
        if entry is None:
            return ToolResult(call.id, call.name, f"error: no tool named {call.name!r}", ok=False)
        started = time.monotonic()
        value = entry[1](**arguments)
        return ToolResult(call.id, call.name, to_text(value), duration_s=time.monotonic() - started)
