"""Control tools: how the model signals the orchestrator, one way.

The worker offers these alongside the caller's tools (unless the request opts out), intercepts every call
to them (they never reach a tool runner) and records each as a :class:`~.state.Signal` on the request. The
model gets a short acknowledgement and carries on, except after ``decision_request`` when the worker's
``stop_on_decision_request`` is on (the default): generation ends at once, with the request's
``stop_reason`` set to ``decision_request``, and no other tool of that turn runs.
"""

from __future__ import annotations

import time
from typing import Dict, Iterable, List, Optional, Sequence

from jarvis_core.arguments import decode_arguments
from jarvis_core.types import ToolCall, ToolSpec

from .state import Signal

__all__ = [
    "CONTROL_TOOLS",
    "DECISION_REQUEST",
    "acknowledgement",
    "control_tool_specs",
    "is_control_tool",
    "signal_from_call",
]

DECISION_REQUEST = "decision_request"

# Bounded, so that a grammar-constrained model (json_schema tool mode) cannot ramble inside one argument.
_STR = {"type": "string", "maxLength": 400}
_OPTION = {"type": "string", "maxLength": 120}

#: Every control tool, in the order they are offered.
CONTROL_TOOLS: Dict[str, ToolSpec] = {
    spec.name: spec
    for spec in (
        ToolSpec(
            "low_confidence",
            "Tell the orchestrator you are not confident in your answer, and why.",
            {"type": "object", "properties": {"reason": _STR}, "required": ["reason"]},
        ),
        ToolSpec(
            "needs_external_info",
            "Tell the orchestrator you need information you do not have and cannot get with your tools.",
            {"type": "object", "properties": {"what": _STR}, "required": ["what"]},
        ),
        ToolSpec(
            "needs_stronger_reasoner",
            "Tell the orchestrator this task needs a stronger model than you.",
            {"type": "object", "properties": {"reason": _STR}, "required": ["reason"]},
        ),
        ToolSpec(
            "tool_limits_reached",
            "Tell the orchestrator your tool budget or limits stop you from finishing, and what is left to do.",
            {"type": "object", "properties": {"remaining_work": _STR}, "required": ["remaining_work"]},
        ),
        ToolSpec(
            DECISION_REQUEST,
            "Ask the orchestrator (or the user) to decide between options before you go on. Ends your turn.",
            {
                "type": "object",
                "properties": {"question": _STR, "options": {"type": "array", "items": _OPTION, "maxItems": 4}},
                "required": ["question", "options"],
            },
        ),
    )
}


def is_control_tool(name: str) -> bool:
    """True for the name of a control tool."""
    return name in CONTROL_TOOLS


def control_tool_specs(names: Optional[Iterable[str]] = None) -> List[ToolSpec]:
    """The specs of the named control tools (all of them when ``names`` is ``None``); unknown names are an
    error naming the known ones."""
    if names is None:
        return list(CONTROL_TOOLS.values())
    out = []
    for name in names:
        if name not in CONTROL_TOOLS:
            raise ValueError(f"unknown control tool {name!r}; known: {', '.join(CONTROL_TOOLS)}")
        out.append(CONTROL_TOOLS[name])
    return out


def signal_from_call(call: ToolCall, iteration: int) -> Signal:
    """The :class:`Signal` a control-tool call carries. Arguments that are not a JSON object are kept as
    ``{"raw": text}``: a signal is never lost to a formatting slip of the model."""
    args, _problem = decode_arguments(call.arguments)
    if args is None:
        args = {"raw": call.arguments}
    return Signal(kind=call.name, arguments=args, tool_call_id=call.id, iteration=iteration, at=time.time())


def acknowledgement(call: ToolCall) -> str:
    """The tool message the model gets back for a non-terminal control tool."""
    return f"noted: the orchestrator received your {call.name} signal; continue with the task."


def first_decision(calls: Sequence[ToolCall], *, streaming: bool = False) -> Optional[ToolCall]:
    """The first ``decision_request`` among ``calls`` whose arguments are a complete JSON object, if any.

    With ``streaming`` the calls are still arriving: a call counts only once its arguments hold every
    required argument, or once a later call has started (so its own are final).
    """
    required = CONTROL_TOOLS[DECISION_REQUEST].parameters.get("required", ())
    for index, call in enumerate(calls):
        if call.name != DECISION_REQUEST:
            continue
        args, _problem = decode_arguments(call.arguments)
        if args is None:
            continue
        later_started = index < len(calls) - 1
        if streaming and not later_started and not all(k in args for k in required):
            continue
        return call
    return None
