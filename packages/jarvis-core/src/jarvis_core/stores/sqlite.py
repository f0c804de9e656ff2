"""The SQLite stores: :class:`SQLiteStore` holds a :class:`SQLiteSessionStore` and a :class:`SQLiteStateStore`
in one file (standard library ``sqlite3`` only).

- Messages are ordered by ``seq INTEGER PRIMARY KEY AUTOINCREMENT`` (insertion order, never a clock), indexed
  on ``(session_id, seq)``, each stored as the JSON of a :class:`~jarvis_core.types.Message`, so a message
  comes back equal to what was appended (tool calls, tool-call ids, reasoning and all).
- State values are JSON; a value that would not come back equal (a tuple, a non-string dict key, ``nan``)
  is refused rather than changed.
- One connection per thread (WAL journal, a busy timeout), so tools running on worker threads and an agent
  on its event loop can share a store. Writes are ``BEGIN IMMEDIATE`` transactions.
- The schema version is ``PRAGMA user_version``; :data:`MIGRATIONS` bring an older file up to date in order,
  each in one transaction with its version number. A file newer than this code is refused.
- Every failure is a :class:`~jarvis_core.stores.StoreError` naming the file and the operation.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any, Iterator, List, Optional, Sequence, Tuple, Union

from jarvis_core.stores.codec import decode_message, decode_value, encode_message, encode_value
from jarvis_core.stores.errors import StoreError
from jarvis_core.types import Message

__all__ = ["MIGRATIONS", "SCHEMA_VERSION", "SQLiteSessionStore", "SQLiteStateStore", "SQLiteStore"]

#: The schema, version ``n`` being ``MIGRATIONS[n - 1]`` (a tuple of statements). Append; never edit.
MIGRATIONS: Tuple[Tuple[str, ...], ...] = (
    (
        "CREATE TABLE session_messages (seq INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL, "
        "role TEXT NOT NULL, message_json TEXT NOT NULL, created_at REAL NOT NULL)",
        "CREATE INDEX session_messages_by_session ON session_messages(session_id, seq)",
        "CREATE TABLE state (id INTEGER PRIMARY KEY AUTOINCREMENT, key TEXT NOT NULL UNIQUE, "
        "value_json TEXT NOT NULL, updated_at REAL NOT NULL)",
    ),
)
SCHEMA_VERSION = len(MIGRATIONS)

PathArg = Union[str, "os.PathLike[str]"]


class SQLiteStore:
    """One SQLite file holding sessions (:attr:`sessions`) and state (:attr:`state`).

    Opening creates the file (and its directory) or migrates it; a file that is not a database, is newer
    than this code, or cannot be opened is a :class:`StoreError` here, not at the first write.

    :param path: the file (``":memory:"`` is refused: each thread would get a different database).
    :param timeout: seconds a write waits for another writer before failing.
    """

    def __init__(self, path: PathArg, *, timeout: float = 10.0,
                 migrations: Sequence[Sequence[str]] = MIGRATIONS) -> None:
        text = os.fspath(path)
        if not text or text == ":memory:" or text.startswith("file:"):
            raise StoreError(f"a SQLite store needs a file path, got {text!r}", path=text, operation="open")
        self.path = Path(os.path.expanduser(text))
        self.timeout = timeout
        self._migrations = tuple(tuple(m) for m in migrations)
        self._local = threading.local()
        self._lock = threading.Lock()
        self._connections: List[Tuple[threading.Thread, sqlite3.Connection]] = []
        self._closed = False
        with self.guard("open"):
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._migrate(self.connection())
        self.sessions = SQLiteSessionStore(self)
        self.state = SQLiteStateStore(self)

    # -- connections --------------------------------------------------------------------------------
    def connection(self) -> sqlite3.Connection:
        """This thread's connection (opened on first use)."""
        if self._closed:
            raise StoreError(f"the store {self.path} is closed", path=str(self.path), operation="connect")
        conn: Optional[sqlite3.Connection] = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(str(self.path), timeout=self.timeout, isolation_level=None,
                                   check_same_thread=False)  # closed from close()'s thread; used only by its own
            try:
                conn.execute(f"PRAGMA busy_timeout = {int(self.timeout * 1000)}")
                conn.execute("PRAGMA journal_mode = WAL")
            except sqlite3.Error:
                conn.close()
                raise
            self._local.conn = conn
            with self._lock:
                # Connections of threads that have ended are closed here, so they do not pile up.
                alive = []
                for thread, other in self._connections:
                    if thread.is_alive():
                        alive.append((thread, other))
                    else:
                        other.close()
                alive.append((threading.current_thread(), conn))
                self._connections = alive
        return conn

    @contextlib.contextmanager
    def guard(self, operation: str) -> Iterator[None]:
        """Turn a ``sqlite3`` (or file system) failure inside the block into a :class:`StoreError`."""
        try:
            yield
        except StoreError:
            raise
        except (sqlite3.Error, OSError) as exc:
            raise StoreError(f"{operation} failed on {self.path}: {type(exc).__name__}: {exc}",
                             path=str(self.path), operation=operation) from exc

    @contextlib.contextmanager
    def transaction(self, operation: str) -> Iterator[sqlite3.Connection]:
        """A write transaction (``BEGIN IMMEDIATE``): committed when the block ends, rolled back on error."""
        with self.guard(operation):
            conn = self.connection()
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    def read(self, operation: str, sql: str, params: Sequence[Any] = ()) -> List[Tuple[Any, ...]]:
        """The rows of one query."""
        with self.guard(operation):
            return list(self.connection().execute(sql, tuple(params)).fetchall())

    def _migrate(self, conn: sqlite3.Connection) -> None:
        latest = len(self._migrations)
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version > latest:
            raise StoreError(f"{self.path} has schema version {version}, newer than this jarvis-core understands "
                             f"({latest}); upgrade jarvis-core or use another file", path=str(self.path),
                             operation="open")
        while version < latest:
            with self.transaction("migrate"):
                # Read again inside the lock: another process may have migrated meanwhile.
                version = conn.execute("PRAGMA user_version").fetchone()[0]
                if version >= latest:
                    break
                for statement in self._migrations[version]:
                    conn.execute(statement)
                version += 1
                conn.execute(f"PRAGMA user_version = {version}")

    def schema_version(self) -> int:
        """The file's ``PRAGMA user_version``."""
        return int(self.read("read the schema version", "PRAGMA user_version")[0][0])

    def close(self) -> None:
        """Close every thread's connection; later operations raise :class:`StoreError`."""
        with self._lock:
            self._closed = True
            for _thread, conn in self._connections:
                conn.close()
            self._connections = []

    def __enter__(self) -> SQLiteStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<SQLiteStore {str(self.path)!r}>"


def _check_key(store: SQLiteStore, key: Any, operation: str, what: str = "key") -> str:
    if not isinstance(key, str) or not key:
        raise StoreError(f"{operation}: the {what} must be a non-empty string, got {key!r}", path=str(store.path),
                         operation=operation)
    return key


class SQLiteSessionStore:
    """The :class:`~jarvis_core.stores.SessionStore` of a :class:`SQLiteStore` (use ``store.sessions``)."""

    def __init__(self, store: SQLiteStore) -> None:
        self.store = store

    def append(self, session_id: str, messages: Sequence[Message]) -> None:
        """Add ``messages`` at the end of the session, all in one transaction."""
        _check_key(self.store, session_id, "append", "session id")
        rows = []
        now = time.time()
        for msg in messages:
            rows.append((session_id, msg.role.value if isinstance(msg, Message) else "",
                         encode_message(msg, path=str(self.store.path)), now))
        if not rows:
            return
        with self.store.transaction("append") as conn:
            conn.executemany("INSERT INTO session_messages(session_id, role, message_json, created_at) "
                             "VALUES (?, ?, ?, ?)", rows)

    def tail(self, session_id: str, limit: int) -> List[Message]:
        """The last ``limit`` messages of the session, oldest first."""
        _check_key(self.store, session_id, "tail", "session id")
        if limit <= 0:
            return []
        rows = self.store.read(
            "tail", "SELECT message_json FROM (SELECT seq, message_json FROM session_messages WHERE session_id = ? "
            "ORDER BY seq DESC LIMIT ?) ORDER BY seq", (session_id, min(int(limit), 2**63 - 1)))  # past SQLite's integers: all
        return [decode_message(text, path=str(self.store.path)) for (text,) in rows]

    def count(self, session_id: str) -> int:
        """How many messages the session holds."""
        rows = self.store.read("count", "SELECT COUNT(*) FROM session_messages WHERE session_id = ?", (session_id,))
        return int(rows[0][0])


class SQLiteStateStore:
    """The :class:`~jarvis_core.stores.StateStore` of a :class:`SQLiteStore` (use ``store.state``)."""

    def __init__(self, store: SQLiteStore) -> None:
        self.store = store

    def get(self, key: str, default: Any = None) -> Any:
        """The value stored under exactly ``key``, or ``default``."""
        _check_key(self.store, key, "get")
        rows = self.store.read("get", "SELECT value_json FROM state WHERE key = ?", (key,))
        return decode_value(key, rows[0][0], path=str(self.store.path)) if rows else default

    def put(self, key: str, value: Any) -> None:
        """Store ``value`` (JSON that comes back equal) under ``key``."""
        _check_key(self.store, key, "put")
        text = encode_value(key, value, path=str(self.store.path))
        with self.store.transaction("put") as conn:
            conn.execute("INSERT INTO state(key, value_json, updated_at) VALUES (?, ?, ?) ON CONFLICT(key) DO UPDATE "
                         "SET value_json = excluded.value_json, updated_at = excluded.updated_at",
                         (key, text, time.time()))

    def delete(self, key: str) -> bool:
        """Remove ``key``; whether it existed."""
        _check_key(self.store, key, "delete")
        with self.store.transaction("delete") as conn:
            return conn.execute("DELETE FROM state WHERE key = ?", (key,)).rowcount > 0

    def items(self, prefix: str = "", *, limit: Optional[int] = None) -> List[Tuple[str, Any]]:
        """``(key, value)`` pairs under ``prefix`` in first-stored order; with ``limit``, the last ones."""
        sql = "SELECT id, key, value_json FROM state WHERE substr(key, 1, ?) = ?"
        params: List[Any] = [len(prefix), prefix]
        if limit is not None:
            if limit <= 0:
                return []
            sql = f"SELECT * FROM ({sql} ORDER BY id DESC LIMIT ?)"
            params.append(int(limit))
        rows = self.store.read("items", f"{sql} ORDER BY id", params)
        return [(key, decode_value(key, text, path=str(self.store.path))) for _id, key, text in rows]
