"""``memory_store``, ``memory_retrieve`` and ``memory_search``: a persistent memory the model can use.

All three share one SQLite file (:class:`~.memory_db.MemoryDB`, default ``memory.db`` in the jarvis home;
``path = "..."`` in ``[tools.memory_store]`` etc. to move it; give the three tools the same path).
``memory_store(key?, content, tags?)`` stores (a key gives exact recall later), ``memory_retrieve(key)``
returns exactly what a key holds, ``memory_search(query, top_k)`` finds memories by their words.

``embeddings = true`` (or the name of an embedding model) in ``[tools.memory_store]`` and
``[tools.memory_search]`` makes them use the run's engine's ``embed``: ``memory_store`` keeps each memory's
vector in the file, and ``memory_search`` ranks by cosine similarity to the query (embedding the memories
that have no vector for that model first). ``true`` embeds with the run's model. Unset, search is full-text
(FTS5) as before. An engine without embeddings is an
:class:`~jarvis_core.errors.EmbeddingsNotSupportedError` naming it, never a quiet switch to FTS.
"""

from __future__ import annotations

import json
import os
from typing import Optional, Sequence, Union

from jarvis_agents.agents.strategies.retrieval import Embedder, engine_embedder
from jarvis_agents.tools.memory_db import MemoryDB
from jarvis_core.errors import ConfigError, EmbeddingsNotSupportedError
from jarvis_core.tools import ToolContext, ToolPolicy
from jarvis_core.types import ToolSpec

__all__ = ["MemoryRetrieveTool", "MemorySearchTool", "MemoryStoreTool"]

PathArg = Union[str, "os.PathLike[str]", None]
EmbeddingsArg = Union[bool, str, None]
MAX_CONTENT = 16_000


def _db(path: PathArg, context: Optional[ToolContext]) -> MemoryDB:
    if path is None and context is not None and context.home is not None:
        path = context.home / "memory.db"
    return MemoryDB(path)


class _Embedding:
    """The ``embeddings`` option of a memory tool: which model, through which engine (checked when built)."""

    def __init__(self, tool: str, embeddings: EmbeddingsArg, context: Optional[ToolContext]) -> None:
        if embeddings is not None and not isinstance(embeddings, (bool, str)):
            raise ConfigError(f"{tool} embeddings must be true, false or an embedding model name, "
                              f"got {type(embeddings).__name__}", key=f"tools.{tool}.embeddings")
        engine, model = (context.engine, context.model) if context is not None else (None, None)
        self.tool = tool
        self.model = (embeddings.strip() if isinstance(embeddings, str) else model or "") if embeddings else ""
        self.wanted = bool(embeddings)
        self._embed: Optional[Embedder] = engine_embedder(engine, self.model) if self.wanted and engine else None

    def embed(self) -> Optional[Embedder]:
        """The embedder, ``None`` when embeddings are off.

        :raises EmbeddingsNotSupportedError: embeddings are on and the tool was built without an engine."""
        if self.wanted and self._embed is None:
            raise EmbeddingsNotSupportedError(f"{self.tool} has embeddings = on but was built without an engine "
                                              "to embed with")
        return self._embed


class MemoryStoreTool:
    """``memory_store(content, key?, tags?)`` → the key it was stored under.

    :param path: the SQLite file (default: ``memory.db`` in the jarvis home).
    :param embeddings: ``true`` or an embedding model name: also keep the memory's vector from the engine.
    :param context: the jarvis home and the run's engine and model (passed by the core).
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

    def __init__(self, path: PathArg = None, embeddings: EmbeddingsArg = False, *,
                 context: Optional[ToolContext] = None) -> None:
        self.db = _db(path, context)
        self.embedding = _Embedding("memory_store", embeddings, context)

    def run(self, content: str, key: Optional[str] = None, tags: Sequence[str] = ()) -> str:
        """Store ``content``; returns which key holds it."""
        if not content.strip():
            raise ValueError("content is empty; there is nothing to remember")
        embed = self.embedding.embed()
        stored = self.db.store(content, key=(key or "").strip() or None, tags=tags)
        if embed is not None:
            self.db.put_vectors(self.embedding.model, {stored: embed([content])[0]})
        return f"stored under key {stored!r}"


class MemoryRetrieveTool:
    """``memory_retrieve(key)`` → exactly what ``key`` holds (an error when nothing does).

    :param path: the SQLite file (default: ``memory.db`` in the jarvis home).
    :param context: the jarvis home (passed by the core).
    """

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

    def __init__(self, path: PathArg = None, *, context: Optional[ToolContext] = None) -> None:
        self.db = _db(path, context)

    def run(self, key: str) -> str:
        """The content stored under ``key``."""
        memory = self.db.get(key)
        if memory is None:
            raise KeyError(f"nothing is stored under key {key!r}; use memory_search to find memories by their words")
        return memory.content


class MemorySearchTool:
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

    def __init__(self, path: PathArg = None, embeddings: EmbeddingsArg = False, *,
                 context: Optional[ToolContext] = None) -> None:
        self.db = _db(path, context)
        self.embedding = _Embedding("memory_search", embeddings, context)

    def run(self, query: str, top_k: int = 5) -> str:
        """The matches for ``query`` (by meaning with embeddings on, else by words), or a line saying there
        are none."""
        embed = self.embedding.embed()
        if embed is not None:
            found = self.db.similar(query, top_k, embed, self.embedding.model)
        else:
            found = self.db.search(query, top_k)
        if not found:
            return "no memories match"
        return "\n".join(
            json.dumps({"key": m.key, "content": m.content, "tags": list(m.tags)}, ensure_ascii=False) for m in found
        )
