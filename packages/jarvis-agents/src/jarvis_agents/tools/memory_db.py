"""The SQLite store behind the ``memory_*`` tools: exact recall by key, full-text search, and optionally
search by embedding similarity.

One file (default ``memory.db`` in the jarvis home). Rows have a unique ``key`` (given, or ``mem-<id>``),
the content, tags and timestamps. Search uses an FTS5 index kept in step by triggers when the SQLite
build has FTS5; otherwise it falls back to ``LIKE`` matching and says so once (a :class:`MemoryWarning`)
and in :attr:`MemoryDB.search_mode`. Each operation opens its own connection, so one store may be used
from several threads and processes (WAL journal, a busy timeout).

With embeddings (:meth:`MemoryDB.put_vectors`, :meth:`MemoryDB.similar`), each memory's vector is kept in
``memory_vectors`` as little-endian float32 (one row per memory, with the embedding model's name); a changed
content drops its vector (a trigger), and :meth:`MemoryDB.similar` embeds the memories that have no vector for
the model first, then ranks by cosine similarity in plain Python.
"""

from __future__ import annotations

import array
import contextlib
import json
import os
import re
import sqlite3
import sys
import threading
import time
import warnings
from pathlib import Path
from typing import Dict, Iterator, List, Mapping, Optional, Sequence, Tuple, Union

import attrs

from jarvis_agents.agents.strategies.retrieval import Embedder, cosine

__all__ = ["Memory", "MemoryDB", "MemoryWarning", "default_memory_path"]

SCHEMA_VERSION = 1
_WORD = re.compile(r"\w+", re.UNICODE)
_initialised: Dict[str, str] = {}
_init_lock = threading.Lock()


class MemoryWarning(UserWarning):
    """Memory search works in a reduced mode (no FTS5 in this SQLite build)."""


@attrs.frozen
class Memory:
    """One stored memory."""

    key: str
    content: str
    tags: Tuple[str, ...] = ()
    updated_at: float = 0.0


def default_memory_path() -> Path:
    """``memory.db`` in the jarvis home (``$JARVIS_HOME``, else ``~/.jarvis``)."""
    from jarvis_core.config import jarvis_home

    return jarvis_home() / "memory.db"


def _fts5_available(conn: sqlite3.Connection) -> bool:
    try:
        conn.execute("CREATE VIRTUAL TABLE temp.jarvis_fts5_probe USING fts5(x)")
        conn.execute("DROP TABLE temp.jarvis_fts5_probe")
        return True
    except sqlite3.OperationalError:
        return False


_TABLE = """
CREATE TABLE IF NOT EXISTS memories (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    key TEXT NOT NULL UNIQUE,
    content TEXT NOT NULL,
    tags TEXT NOT NULL DEFAULT '[]',
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL
)
"""
_VECTORS = [
    """CREATE TABLE IF NOT EXISTS memory_vectors (
        memory_id INTEGER PRIMARY KEY REFERENCES memories(id) ON DELETE CASCADE,
        model TEXT NOT NULL,
        vector BLOB NOT NULL)""",
    """CREATE TRIGGER IF NOT EXISTS memories_vec_au AFTER UPDATE OF content ON memories BEGIN
        DELETE FROM memory_vectors WHERE memory_id = old.id; END""",
    """CREATE TRIGGER IF NOT EXISTS memories_vec_ad AFTER DELETE ON memories BEGIN
        DELETE FROM memory_vectors WHERE memory_id = old.id; END""",
]
_FTS = [
    "CREATE VIRTUAL TABLE IF NOT EXISTS memories_fts USING fts5(content, tags, content='memories', content_rowid='id')",
    """CREATE TRIGGER IF NOT EXISTS memories_ai AFTER INSERT ON memories BEGIN
        INSERT INTO memories_fts(rowid, content, tags) VALUES (new.id, new.content, new.tags); END""",
    """CREATE TRIGGER IF NOT EXISTS memories_ad AFTER DELETE ON memories BEGIN
        INSERT INTO memories_fts(memories_fts, rowid, content, tags) VALUES ('delete', old.id, old.content, old.tags); END""",
    """CREATE TRIGGER IF NOT EXISTS memories_au AFTER UPDATE ON memories BEGIN
        INSERT INTO memories_fts(memories_fts, rowid, content, tags) VALUES ('delete', old.id, old.content, old.tags);
        INSERT INTO memories_fts(rowid, content, tags) VALUES (new.id, new.content, new.tags); END""",
]


class MemoryDB:
    """A memory file. ``path=None`` uses :func:`default_memory_path`.

    :param fts: ``None`` uses FTS5 when this SQLite has it; ``False`` forces the ``LIKE`` fallback.
    """

    def __init__(self, path: Union[str, os.PathLike[str], None] = None, *, fts: Optional[bool] = None) -> None:
        self.path = Path(os.path.expanduser(os.fspath(path))) if path is not None else default_memory_path()
        self._want_fts = fts
        self.search_mode = self._init()

    @contextlib.contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        """One connection for one operation: committed on success, rolled back on error, always closed."""
        conn = sqlite3.connect(self.path, timeout=10.0)
        try:
            with conn:
                yield conn
        finally:
            conn.close()

    def _init(self) -> str:
        key = f"{self.path}|{self._want_fts}"
        with _init_lock:
            if key in _initialised and self.path.exists():
                return _initialised[key]
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self._connect() as conn:
                conn.execute("PRAGMA journal_mode = WAL")
                conn.execute(_TABLE)
                for statement in _VECTORS:
                    conn.execute(statement)
                has_index = conn.execute(
                    "SELECT 1 FROM sqlite_master WHERE name = 'memories_fts'").fetchone() is not None
                use_fts = has_index or (self._want_fts is not False and _fts5_available(conn))
                if self._want_fts is False:
                    use_fts = False
                if use_fts and not has_index:
                    for statement in _FTS:
                        conn.execute(statement)
                    conn.execute("INSERT INTO memories_fts(memories_fts) VALUES ('rebuild')")
                conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            mode = "fts5" if use_fts else "like"
            if mode == "like":
                warnings.warn(
                    f"memory search in {self.path} uses simple LIKE matching: this SQLite build has no FTS5, "
                    "so results are not ranked by relevance", MemoryWarning, stacklevel=3)
            _initialised[key] = mode
            return mode

    # -- writing ------------------------------------------------------------------------------------
    def store(self, content: str, *, key: Optional[str] = None, tags: Sequence[str] = ()) -> str:
        """Store ``content`` (replacing what ``key`` held, if given); returns the key."""
        now = time.time()
        tag_text = json.dumps(sorted({str(t) for t in tags}), ensure_ascii=False)
        with self._connect() as conn:
            if key:
                conn.execute(
                    "INSERT INTO memories(key, content, tags, created_at, updated_at) VALUES (?, ?, ?, ?, ?) "
                    "ON CONFLICT(key) DO UPDATE SET content = excluded.content, tags = excluded.tags, "
                    "updated_at = excluded.updated_at",
                    (key, content, tag_text, now, now),
                )
                return key
            # The key is the row id, which only exists after the insert: insert a placeholder, then set it.
            cur = conn.execute(
                "INSERT INTO memories(key, content, tags, created_at, updated_at) VALUES (?, ?, ?, ?, ?)",
                (f"pending-{os.getpid()}-{threading.get_ident()}-{now}", content, tag_text, now, now),
            )
            new_key = f"mem-{cur.lastrowid}"
            conn.execute("UPDATE memories SET key = ? WHERE id = ?", (new_key, cur.lastrowid))
            return new_key

    # -- reading ------------------------------------------------------------------------------------
    def get(self, key: str) -> Optional[Memory]:
        """The memory stored under exactly ``key``, or ``None``."""
        with self._connect() as conn:
            row = conn.execute("SELECT key, content, tags, updated_at FROM memories WHERE key = ?", (key,)).fetchone()
        return _memory(row) if row else None

    def search(self, query: str, top_k: int = 5) -> List[Memory]:
        """Up to ``top_k`` memories matching any word of ``query``, best first (FTS5 rank, else word count)."""
        words = list(dict.fromkeys(w.lower() for w in _WORD.findall(query)))[:32]
        if not words or top_k < 1:
            return []
        with self._connect() as conn:
            if self.search_mode == "fts5":
                # Each word quoted, so nothing the model writes is read as FTS5 query syntax.
                match = " OR ".join('"' + w.replace('"', '""') + '"' for w in words)
                rows = conn.execute(
                    "SELECT m.key, m.content, m.tags, m.updated_at FROM memories_fts f JOIN memories m ON m.id = f.rowid "
                    "WHERE memories_fts MATCH ? ORDER BY f.rank, m.id DESC LIMIT ?",
                    (match, top_k),
                ).fetchall()
            else:
                hits = " + ".join(["((lower(content) || ' ' || lower(tags)) LIKE ? ESCAPE '\\')"] * len(words))
                params = [f"%{_escape_like(w)}%" for w in words]
                rows = conn.execute(
                    f"SELECT key, content, tags, updated_at FROM (SELECT *, ({hits}) AS hits FROM memories) "
                    "WHERE hits > 0 ORDER BY hits DESC, id DESC LIMIT ?",
                    (*params, top_k),
                ).fetchall()
        return [_memory(r) for r in rows]


    # -- embeddings ---------------------------------------------------------------------------------
    def put_vectors(self, model: str, vectors: Mapping[str, Sequence[float]]) -> None:
        """Keep ``vectors`` (by memory key) as the embeddings of those memories under ``model``."""
        with self._connect() as conn:
            for key, vector in vectors.items():
                conn.execute(
                    "INSERT INTO memory_vectors(memory_id, model, vector) SELECT id, ?, ? FROM memories WHERE key = ? "
                    "ON CONFLICT(memory_id) DO UPDATE SET model = excluded.model, vector = excluded.vector",
                    (model, _pack(vector), key))

    def vector_count(self, model: str) -> int:
        """How many memories have a vector under ``model``."""
        with self._connect() as conn:
            return int(conn.execute("SELECT count(*) FROM memory_vectors WHERE model = ?", (model,)).fetchone()[0])

    def similar(self, query: str, top_k: int, embed: Embedder, model: str) -> List[Memory]:
        """Up to ``top_k`` memories by cosine similarity of their ``model`` embeddings to ``query``'s, most
        similar first (newer first on a tie). Memories without a vector for ``model`` are embedded first."""
        if not query.strip() or top_k < 1:
            return []
        with self._connect() as conn:
            missing = conn.execute(
                "SELECT m.key, m.content FROM memories m LEFT JOIN memory_vectors v ON v.memory_id = m.id "
                "AND v.model = ? WHERE v.memory_id IS NULL ORDER BY m.id", (model,)).fetchall()
        vectors = list(embed([query, *(content for _k, content in missing)]))
        if len(vectors) != len(missing) + 1:
            raise ValueError(f"the embedding backend returned {len(vectors)} vectors for {len(missing) + 1} texts")
        if missing:
            self.put_vectors(model, {key: vec for (key, _c), vec in zip(missing, vectors[1:], strict=True)})
        with self._connect() as conn:
            rows = conn.execute(
                "SELECT m.key, m.content, m.tags, m.updated_at, v.vector, m.id FROM memories m "
                "JOIN memory_vectors v ON v.memory_id = m.id WHERE v.model = ?", (model,)).fetchall()
        scored = sorted(((cosine(vectors[0], _unpack(r[4])), r[5], r[:4]) for r in rows), key=lambda s: (-s[0], -s[1]))
        return [_memory(r) for _s, _id, r in scored[:top_k]]


def _pack(vector: Sequence[float]) -> bytes:
    packed = array.array("f", vector)
    if sys.byteorder == "big":
        packed.byteswap()
    return packed.tobytes()


def _unpack(blob: bytes) -> array.array[float]:
    packed = array.array("f")
    packed.frombytes(blob)
    if sys.byteorder == "big":
        packed.byteswap()
    return packed


def _escape_like(word: str) -> str:
    return word.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def _memory(row: Tuple[str, str, str, float]) -> Memory:
    key, content, tags, updated = row
    try:
        tag_list = tuple(json.loads(tags))
    except ValueError:
        tag_list = ()
    return Memory(key=key, content=content, tags=tag_list, updated_at=updated)
