"""``memory_store``, ``memory_retrieve`` and ``memory_search``: a persistent memory the model can use.

All three share one SQLite file (:class:`~.memory_db.MemoryDB`, default ``memory.db`` in the jarvis home;
``path = "..."`` in ``[tools.memory_store]`` etc. to move it; give the three tools the same path).
``memory_store(key?, content, tags?)`` stores (a key gives exact recall later), ``memory_retrieve(key)``
returns exactly what a key holds, ``memory_search(query, top_k)`` finds memories by their words.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Optional, Sequence, Union

from jarvis_core.tools import BaseTool, ToolPolicy
from jarvis_core.types import ToolSpec

from jarvis_agents.tools.memory_db import MemoryDB

__all__ = ["MemoryRetrieveTool", "MemorySearchTool", "MemoryStoreTool"]

PathArg = Union[str, "os.PathLike[str]", None]
MAX_CONTENT = 16_000


def _db(path: PathArg, home: Optional[Path]) -> MemoryDB:
    if path is None and home is not None:
        path = Path(home) / "memory.db"
    return MemoryDB(path)


class MemoryStoreTool(BaseTool):
    """``memory_store(content, key?, tags?)`` → the key it was stored under.

    :param path: the SQLite file (default: ``memory.db`` in the jarvis home).
    :param home: the jarvis home (passed by the core when the tool is built).
    """

    spec = ToolSpec(
        name="memory_store",
        description="Remember a piece of text for later. Give a key to recall it exactly with memory_retrieve.",
        parameters={
            "type": "object",
            "properties": {
                "content": {"type": "string", "description": "what to remember", "maxLength": MAX_CONTENT},
                "key": {"type": "string", "description": "optional name to recall it by; replaces what it held",
                        "maxLength": 200},
                "tags": {"type": "array", "items": {"type": "string", "maxLength": 50}, "maxItems": 20},
            },
            "required": ["content"],
            "additionalProperties": False,
        },
    )
    policy = ToolPolicy(side_effects="write", timeout=15.0)

    def __init__(self, path: PathArg = None, home: Optional[Path] = None) -> None:
        self.db = _db(path, home)

    def run(self, content: str, key: Optional[str] = None, tags: Sequence[str] = ()) -> str:
        """Store ``content``; returns which key holds it."""
        if not content.strip():
            raise ValueError("content is empty; there is nothing to remember")
        stored = self.db.store(content, key=(key or "").strip() or None, tags=tags)
        return f"stored under key {stored!r}"


class MemoryRetrieveTool(BaseTool):
    """``memory_retrieve(key)`` → exactly what ``key`` holds (an error when nothing does)."""

    spec = ToolSpec(
        name="memory_retrieve",
        description="Recall the text stored under a key with memory_store.",
        parameters={
            "type": "object",
            "properties": {"key": {"type": "string", "description": "the key it was stored under", "maxLength": 200}},
            "required": ["key"],
            "additionalProperties": False,
        },
    )
    policy = ToolPolicy(side_effects="read", timeout=15.0)

    def __init__(self, path: PathArg = None, home: Optional[Path] = None) -> None:
        self.db = _db(path, home)

    def run(self, key: str) -> str:
        """The content stored under ``key``."""
        memory = self.db.get(key)
        if memory is None:
            raise KeyError(f"nothing is stored under key {key!r}; use memory_search to find memories by their words")
        return memory.content


class MemorySearchTool(BaseTool):
    """``memory_search(query, top_k=5)`` → the best matches, one JSON object per line."""

    spec = ToolSpec(
        name="memory_search",
        description="Search remembered text by words. Returns the best matches with their keys.",
        parameters={
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "words to look for", "maxLength": 500},
                "top_k": {"type": "integer", "minimum": 1, "maximum": 50, "description": "how many results (5)"},
            },
            "required": ["query"],
            "additionalProperties": False,
        },
    )
    policy = ToolPolicy(side_effects="read", timeout=15.0)

    def __init__(self, path: PathArg = None, home: Optional[Path] = None) -> None:
        self.db = _db(path, home)

    def run(self, query: str, top_k: int = 5) -> str:
        """The matches for ``query``, or a line saying there are none."""
        found = self.db.search(query, top_k)
        if not found:
            return "no memories match"
        return "\n".join(
            json.dumps({"key": m.key, "content": m.content, "tags": list(m.tags)}, ensure_ascii=False) for m in found
        )
