"""How jarvis runs a tool: :class:`ToolPolicy`. A policy is never sent to the model."""

from __future__ import annotations

from typing import Any, Literal, Optional

import attrs

__all__ = ["ISOLATIONS", "SIDE_EFFECTS", "ToolPolicy", "policy_of"]

#: ``inline``: in the caller's thread (no timeout can be enforced); ``thread``: a dedicated daemon thread
#: per call (the wait is abandoned on timeout); ``process``: a child process in its own process group,
#: killed with the group on timeout.
ISOLATIONS = ("inline", "thread", "process")
#: What running the tool may change: nothing, it reads (files, the network), or it writes.
SIDE_EFFECTS = ("none", "read", "write")


def _one_of(choices: tuple[str, ...]) -> Any:
    def check(_: Any, attribute: attrs.Attribute[Any], value: str) -> None:
        if value not in choices:
            raise ValueError(f"ToolPolicy.{attribute.name} must be one of {', '.join(choices)}, got {value!r}")

    return check


def _timeout(_: Any, __: Any, value: Optional[float]) -> None:
    if value is not None and not value > 0:
        raise ValueError(f"ToolPolicy.timeout must be a positive number of seconds or None, got {value!r}")


def _cap(_: Any, __: Any, value: int) -> None:
    if value < 64:
        raise ValueError(f"ToolPolicy.max_output_chars must be at least 64, got {value!r}")


@attrs.frozen
class ToolPolicy:
    """How the :class:`~jarvis_core.tools.ToolExecutor` runs a tool.

    :ivar confirm: the call needs an approver's yes; with no approver it is denied (fails closed).
    :ivar timeout: seconds before the call is given up (``None``: no limit; not enforceable ``inline``).
    :ivar max_output_chars: the tool's output is cut to this many characters, with a visible marker.
    :ivar isolation: ``inline``, ``thread`` or ``process`` (see :data:`ISOLATIONS`).
    :ivar side_effects: ``none``, ``read`` or ``write``: informs approvers and listings.
    :ivar open_world: the tool reaches things outside jarvis's own machine and stores (the web, other
        people's services; MCP's ``openWorldHint``): informs approvers and listings.
    """

    confirm: bool = False
    timeout: Optional[float] = attrs.field(default=30.0, validator=_timeout)
    max_output_chars: int = attrs.field(default=16_000, validator=_cap)
    isolation: Literal["inline", "thread", "process"] = attrs.field(default="thread", validator=_one_of(ISOLATIONS))
    side_effects: Literal["none", "read", "write"] = attrs.field(default="none", validator=_one_of(SIDE_EFFECTS))
    open_world: bool = False


_DEFAULT = ToolPolicy()


def policy_of(tool: Any) -> ToolPolicy:
    """The tool's ``policy`` attribute, or the default :class:`ToolPolicy` when it has none (or ``None``).

    :raises TypeError: the attribute is set to something that is not a :class:`ToolPolicy`.
    """
    policy = getattr(tool, "policy", None)
    if policy is None:
        return _DEFAULT
    if not isinstance(policy, ToolPolicy):
        raise TypeError(f"a tool's policy must be a jarvis_core.tools.ToolPolicy, got {type(policy).__name__}")
    return policy
