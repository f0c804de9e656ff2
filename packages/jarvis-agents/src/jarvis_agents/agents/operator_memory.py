"""An operator's memory: where its conversation and state live, and the tools its model uses to read and write
them (:class:`OperatorMemory`): ``memory_store``, ``memory_retrieve`` and ``memory_search`` with the arguments of
the registered tools of those names, over the operator's state store instead of ``memory.db``.

Keys (in a :class:`~jarvis_core.stores.StateStore`):

- ``operator:<id>:state``: the state shown to the model at the start of every tick;
- ``operator:<id>:<name>``: anything else the operator keeps (its notes, a monitor's extraction rows).

The conversation is the session ``operator:<id>`` of a :class:`~jarvis_core.stores.SessionStore`. A key the
model writes is always put under its operator's prefix, so one operator cannot touch another's keys.
"""

from __future__ import annotations

import re
import uuid
from typing import Any, List, Optional

from jarvis_agents.agents.strategies.retrieval import item_text, keyword_rank
from jarvis_agents.tools.memory import MAX_CONTENT, MemoryRetrieveTool, MemorySearchTool
from jarvis_core.errors import ConfigError
from jarvis_core.stores import StateStore
from jarvis_core.tools import ToolPolicy
from jarvis_core.types import ToolSpec

__all__ = ["MEMORY_TOOL_NAMES", "OperatorMemory", "check_operator_id"]

_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
#: The names of the tools an operative gives its model (a tool of the same name cannot be added).
MEMORY_TOOL_NAMES = ("memory_store", "memory_retrieve", "memory_search")


def check_operator_id(operator_id: Any) -> str:
    """``operator_id`` if it is a valid id (letters, digits, ``_ . -``, up to 64), else a ConfigError."""
    if not isinstance(operator_id, str) or not _ID.match(operator_id):
        raise ConfigError(f"an operator id is 1-64 letters, digits, '_', '.' or '-' (starting with a letter or "
                          f"digit), got {operator_id!r}", key="operator_id")
    return operator_id


class OperatorMemory:
    """The keys of operator ``operator_id`` in ``state``, and its model's memory tools (:meth:`tools`)."""

    def __init__(self, state: StateStore, operator_id: str) -> None:
        self.state = state
        self.operator_id = check_operator_id(operator_id)
        self.session_id = f"operator:{operator_id}"
        self.prefix = f"{self.session_id}:"
        self.state_key = self.key("state")

    def key(self, name: Optional[str]) -> str:
        """The full key for a name the model gave (already prefixed names are kept)."""
        name = (name or "").strip()
        return name if name.startswith(self.prefix) else self.prefix + name

    def short(self, key: str) -> str:
        """A full key as the model knows it (without the operator prefix)."""
        return key[len(self.prefix):] if key.startswith(self.prefix) else key

    def tools(self) -> List[Any]:
        """``memory_store``, ``memory_retrieve`` and ``memory_search`` over this operator's keys."""
        return [_StoreTool(self), _RetrieveTool(self), _SearchTool(self)]


class _StoreTool:
    spec = ToolSpec(
        name="memory_store",
        description="Remember text between runs. key='state' replaces your state (shown to you at the start of "
                    "every run); any other key stores a note you can recall with memory_retrieve or memory_search.",
        parameters={
            "type": "object",
            "properties": {
                "content": {"type": "string", "description": "what to remember", "maxLength": MAX_CONTENT},
                "key": {"type": "string", "description": "'state', or a name for a note (optional)", "maxLength": 200},
            },
            "required": ["content"],
            "additionalProperties": False,
        },
    )
    policy = ToolPolicy(side_effects="write", timeout=15.0)

    def __init__(self, memory: OperatorMemory) -> None:
        self.memory = memory

    def run(self, content: str, key: Optional[str] = None) -> str:
        if not content.strip():
            raise ValueError("content is empty; there is nothing to remember")
        full = self.memory.key(key) if (key or "").strip() else self.memory.key(f"note:{uuid.uuid4().hex[:10]}")
        self.memory.state.put(full, content)
        if full == self.memory.state_key:
            return "stored as your state (you will see it at the start of every run)"
        return f"stored under key {self.memory.short(full)!r}"


class _RetrieveTool:
    spec = ToolSpec(
        name="memory_retrieve",
        description="Recall exactly what a key holds ('state' is your state).",
        parameters=MemoryRetrieveTool.spec.parameters,
    )
    policy = ToolPolicy(side_effects="read", timeout=15.0)

    def __init__(self, memory: OperatorMemory) -> None:
        self.memory = memory

    def run(self, key: str) -> str:
        missing = object()
        value = self.memory.state.get(self.memory.key(key), missing)
        if value is missing:
            raise KeyError(f"nothing is stored under key {key!r}; use memory_search to find notes by their words")
        return item_text(value)


class _SearchTool:
    spec = ToolSpec(
        name="memory_search",
        description="Find remembered notes by their words. Returns the best matches with their keys.",
        parameters=MemorySearchTool.spec.parameters,
    )
    policy = ToolPolicy(side_effects="read", timeout=15.0)

    def __init__(self, memory: OperatorMemory) -> None:
        self.memory = memory

    def run(self, query: str, top_k: int = 5) -> str:
        found = keyword_rank(query, self.memory.state.items(self.memory.prefix), top_k)
        if not found:
            return "no notes match"
        return "\n".join(f"{self.memory.short(k)}: {item_text(v)[:1000]}" for k, v in found)
