"""What a prompt provider knows about the request: the node (room, speaker, voice mode, memories, devices)
and the commands that may be answered directly.

Providers receive the node context as a mapping (the shape clients send) and read it through
:class:`NodeContext`, which accepts the spellings seen in the wild (``user`` or ``speaker_name``) and never
fails on a missing key.
"""

from __future__ import annotations

from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

import attrs

from jarvis_core.errors import JarvisError

__all__ = ["NodeContext", "ToolsInput", "coerce_commands", "coerce_tools"]

#: Tools as providers take them: OpenAI function schemas (dicts), ToolSpec values, or objects with ``spec``.
ToolsInput = Sequence[Any]


def _text(value: Any, default: str = "") -> str:
    return default if value is None else str(value)


def _strings(value: Optional[Iterable[str]]) -> Tuple[str, ...]:
    return tuple(value or ())


def _memories(value: Any) -> Tuple[str, ...]:
    if not value:
        return ()
    if isinstance(value, str):
        return tuple(line.strip("-• ").strip() for line in value.splitlines() if line.strip())
    return tuple(str(v) for v in value)


@attrs.frozen
class NodeContext:
    """The node a request comes from. Every field has a neutral default."""

    room: str = "unknown"
    user: str = "default"
    voice_mode: str = "brief"
    user_memories: Tuple[str, ...] = attrs.field(default=(), converter=_memories)
    #: Agent data keyed by agent name, e.g. ``{"home_assistant": {"devices": [...]}}``.
    agents: Mapping[str, Any] = attrs.field(factory=dict)
    room_hierarchy: Mapping[str, Any] = attrs.field(factory=dict)
    date_keys: Tuple[str, ...] = attrs.field(default=(), converter=_strings)

    @classmethod
    def coerce(cls, value: Any) -> NodeContext:
        """A :class:`NodeContext` from itself, ``None`` or a mapping; a wrong type is a :class:`JarvisError`."""
        if isinstance(value, NodeContext):
            return value
        if value is None:
            return cls()
        if not isinstance(value, Mapping):
            raise JarvisError(f"node context must be a mapping (JSON object), got {type(value).__name__}")
        agents = value.get("agents")
        hierarchy = value.get("room_hierarchy")
        keys = value.get("date_keys")
        return cls(
            room=_text(value.get("room"), "unknown") or "unknown",
            user=_text(value.get("user", value.get("speaker_name")), "default") or "default",
            voice_mode=_text(value.get("voice_mode"), "brief") or "brief",
            user_memories=value.get("user_memories"),
            agents=dict(agents) if isinstance(agents, Mapping) else {},
            room_hierarchy=dict(hierarchy) if isinstance(hierarchy, Mapping) else {},
            date_keys=[str(k) for k in keys] if isinstance(keys, (list, tuple)) else (),
        )

    def to_dict(self) -> Dict[str, Any]:
        return {
            "room": self.room, "user": self.user, "voice_mode": self.voice_mode,
            "user_memories": list(self.user_memories), "agents": dict(self.agents),
            "room_hierarchy": dict(self.room_hierarchy), "date_keys": list(self.date_keys),
        }


def _function(tool: Any) -> Optional[Dict[str, Any]]:
    spec = getattr(tool, "spec", tool)
    if hasattr(spec, "to_openai"):
        spec = spec.to_openai()
    if not isinstance(spec, Mapping):
        return None
    fn = spec.get("function", spec)
    if not isinstance(fn, Mapping) or not isinstance(fn.get("name"), str) or not fn["name"]:
        return None
    return dict(fn)


def coerce_tools(tools: Optional[ToolsInput]) -> List[Dict[str, Any]]:
    """Tools as OpenAI wrappers ``{"type": "function", "function": {...}}``, extras such as
    ``allow_direct_answer`` kept. Accepts dicts (wrapped or bare), :class:`~jarvis_core.types.ToolSpec` values
    and tool objects with a ``spec``; anything else is a :class:`JarvisError` naming its position."""
    out: List[Dict[str, Any]] = []
    for i, tool in enumerate(tools or ()):
        fn = _function(tool)
        if fn is None:
            raise JarvisError(f"tool #{i + 1} is not a function schema (need a 'name'): {str(tool)[:80]!r}")
        fn.setdefault("description", "")
        fn.setdefault("parameters", {"type": "object", "properties": {}})
        out.append({"type": "function", "function": fn})
    return out


def coerce_commands(commands: Optional[Sequence[Any]]) -> List[Dict[str, Any]]:
    """Available-command flags (``command_name``, ``allow_direct_answer``, ``examples``) as dicts; entries
    without a ``command_name`` are a :class:`JarvisError`."""
    out: List[Dict[str, Any]] = []
    for i, cmd in enumerate(commands or ()):
        if not isinstance(cmd, Mapping) or not isinstance(cmd.get("command_name"), str):
            raise JarvisError(f"available command #{i + 1} needs a 'command_name': {str(cmd)[:80]!r}")
        out.append(dict(cmd))
    return out
