"""Managed-agent persistence: one SQLite file in the jarvis home (``agents.db``).

* Schema version in ``PRAGMA user_version``; :data:`MIGRATIONS` bring any older file up to date, in order, each
  in its own transaction together with its new version number (a migration that fails leaves the file as it
  was, at the previous version). A file newer than this code is refused (never silently downgraded).
* Tables: ``agents``; ``messages`` (``seq INTEGER PRIMARY KEY AUTOINCREMENT``: insertion order, never a clock;
  ``source`` is ``api`` for what the API wrote and ``session`` for what an agent that keeps its own memory
  appended, with the exact message in ``message_json``); ``runs``; ``state`` (per-agent key → JSON, in
  first-stored order). :mod:`.memory` adapts ``messages`` and ``state`` to the core's ``SessionStore`` and
  ``StateStore``.
* One writer at a time: every statement runs on one dedicated thread holding the only connection
  (:meth:`Store.call`), so the event loop never blocks on SQLite and no two writes interleave. Multi-step
  changes (claiming an agent, finishing a run) are single transactions.
* Every failure of the file (a newer schema, a failed migration, a closed store) is the core's
  :class:`~jarvis_core.stores.StoreError`.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import pathlib
import secrets
import sqlite3
import threading
import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, TypeVar

from jarvis_core.stores.errors import StoreError

__all__ = ["MIGRATIONS", "SCHEMA_VERSION", "Store"]

T = TypeVar("T")

MIGRATIONS: Sequence[str] = (
    # 1: the first schema
    """
    CREATE TABLE agents (
        id TEXT PRIMARY KEY, name TEXT NOT NULL, agent_type TEXT NOT NULL, config_json TEXT NOT NULL,
        status TEXT NOT NULL DEFAULT 'idle', created_at REAL NOT NULL, updated_at REAL NOT NULL);
    CREATE TABLE messages (
        seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE,
        agent_id TEXT NOT NULL REFERENCES agents(id), role TEXT NOT NULL, content TEXT NOT NULL,
        tool_calls_json TEXT, status TEXT NOT NULL, run_id TEXT, created_at REAL NOT NULL);
    CREATE INDEX messages_by_agent ON messages(agent_id, seq);
    CREATE TABLE runs (
        id TEXT PRIMARY KEY, agent_id TEXT NOT NULL REFERENCES agents(id), kind TEXT NOT NULL,
        status TEXT NOT NULL, started_at REAL NOT NULL, ended_at REAL, stop_reason TEXT, error TEXT,
        usage_json TEXT);
    CREATE TABLE state (
        agent_id TEXT NOT NULL REFERENCES agents(id), key TEXT NOT NULL, value TEXT NOT NULL,
        updated_at REAL NOT NULL, PRIMARY KEY (agent_id, key));
    """,
    # 2: agents that keep their own memory (the core's SessionStore/StateStore) use these tables: a message
    # keeps its exact JSON (tool-call ids, names, reasoning) and where it came from; state gets an insertion
    # order (``seq``), its rows copied in the order they were first stored.
    """
    ALTER TABLE messages ADD COLUMN message_json TEXT;
    ALTER TABLE messages ADD COLUMN source TEXT NOT NULL DEFAULT 'api';
    CREATE INDEX messages_by_source ON messages(agent_id, source, seq);
    CREATE INDEX messages_by_run ON messages(run_id);
    CREATE TABLE state_v2 (
        seq INTEGER PRIMARY KEY AUTOINCREMENT, agent_id TEXT NOT NULL REFERENCES agents(id), key TEXT NOT NULL,
        value TEXT NOT NULL, updated_at REAL NOT NULL, UNIQUE (agent_id, key));
    INSERT INTO state_v2 (agent_id, key, value, updated_at) SELECT agent_id, key, value, updated_at FROM state
        ORDER BY rowid;
    DROP TABLE state;
    ALTER TABLE state_v2 RENAME TO state;
    """,
)
SCHEMA_VERSION = len(MIGRATIONS)


def new_id(prefix: str) -> str:
    """A random id such as ``agent_3f2a…``."""
    return f"{prefix}_{secrets.token_hex(8)}"


def _statements(script: str) -> List[str]:
    """The statements of a migration script. Split where SQLite says a statement is complete, so a ``;``
    inside a string literal or a trigger body does not cut a statement in two."""
    out: List[str] = []
    pending = ""
    for piece in script.split(";"):
        pending += piece + ";"
        if sqlite3.complete_statement(pending):
            if pending.strip(" \t\r\n;"):
                out.append(pending.strip())
            pending = ""
    if pending.strip(" \t\r\n;"):
        raise StoreError(f"a migration ends with an incomplete statement: {pending.strip()[:80]!r}",
                         operation="migrate")
    return out


def _row(cursor: sqlite3.Cursor, row: Tuple[Any, ...]) -> Dict[str, Any]:
    return {d[0]: v for d, v in zip(cursor.description, row, strict=True)}


class Store:
    """The managed-agents database. Build with :meth:`open`; every method runs on the store's thread."""

    def __init__(self, path: pathlib.Path, *, migrations: Sequence[str] = MIGRATIONS) -> None:
        self.path = path
        self.migrations = tuple(migrations)
        self._pool = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="jarvis-agents-db")
        self._conn: Optional[sqlite3.Connection] = None
        self._thread: Optional[int] = None
        self._closed = False

    @classmethod
    def open(cls, path: pathlib.Path, *, migrations: Sequence[str] = MIGRATIONS) -> Store:
        """Open (creating or migrating) the database at ``path``.

        :param migrations: the schema's migrations, version ``n`` being ``migrations[n - 1]`` (default
            :data:`MIGRATIONS`; another list is for tests of the migration mechanism).
        """
        store = cls(path, migrations=migrations)
        try:
            store.run_sync(store._connect)
        except BaseException:
            store._closed = True
            store._pool.shutdown(wait=True)
            raise
        return store

    # -- the one thread -------------------------------------------------------------------------------
    def run_sync(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run ``fn(*args, **kwargs)`` on the store's thread and wait for it (for non-async callers; called on
        that thread itself, it just runs ``fn``)."""
        if threading.get_ident() == self._thread:
            return fn(*args, **kwargs)
        return self._submit(fn, *args, **kwargs).result()

    async def call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run ``fn(*args, **kwargs)`` on the store's thread without blocking the event loop."""
        return await asyncio.wrap_future(self._submit(fn, *args, **kwargs))

    def _submit(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> concurrent.futures.Future[T]:
        try:
            return self._pool.submit(fn, *args, **kwargs)
        except RuntimeError:  # the pool was shut down
            raise self._closed_error() from None

    def _closed_error(self) -> StoreError:
        return StoreError(f"the managed-agents store {self.path} is closed", path=str(self.path), operation="connect")

    def close(self) -> None:
        """Close the connection and stop the thread."""
        if self._closed:
            return
        self._closed = True
        self._pool.submit(self._disconnect).result()
        self._pool.shutdown(wait=True)

    @property
    def conn(self) -> sqlite3.Connection:
        """The connection (only on the store's thread)."""
        if self._conn is None:
            raise self._closed_error()
        return self._conn

    def _connect(self) -> None:
        self._thread = threading.get_ident()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(str(self.path), isolation_level=None, check_same_thread=True)
            self._conn = conn
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA foreign_keys=ON")
            conn.execute("PRAGMA busy_timeout=5000")
            version = conn.execute("PRAGMA user_version").fetchone()[0]
        except (sqlite3.Error, OSError) as exc:
            self._disconnect()
            raise StoreError(f"opening {self.path} failed: {type(exc).__name__}: {exc}", path=str(self.path),
                             operation="open") from None
        latest = len(self.migrations)
        if version > latest:
            self._disconnect()
            raise StoreError(f"{self.path} has schema version {version}, newer than this jarvis-server "
                             f"understands ({latest}); upgrade jarvis-server or use another --db",
                             path=str(self.path), operation="open")
        for number in range(version + 1, latest + 1):
            try:
                with self.transaction():
                    for statement in _statements(self.migrations[number - 1]):
                        conn.execute(statement)
                    conn.execute(f"PRAGMA user_version = {number}")
            except (sqlite3.Error, StoreError) as exc:
                self._disconnect()
                raise StoreError(f"migrating {self.path} to schema version {number} failed ({exc}); the file is "
                                 f"unchanged at version {number - 1}", path=str(self.path),
                                 operation="migrate") from None

    def _disconnect(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def transaction(self) -> Any:
        """A write transaction (``BEGIN IMMEDIATE``) for a ``with`` block: committed at its end, rolled back if
        it raises. Only on the store's thread."""
        store = self

        class _Tx:
            def __enter__(self) -> sqlite3.Connection:
                store.conn.execute("BEGIN IMMEDIATE")
                return store.conn

            def __exit__(self, exc_type: Any, *_: Any) -> None:
                store.conn.execute("ROLLBACK" if exc_type else "COMMIT")

        return _Tx()

    def rows(self, sql: str, params: Sequence[Any] = ()) -> List[Tuple[Any, ...]]:
        """The rows of one query, as tuples (on the store's thread)."""
        return list(self.conn.execute(sql, params).fetchall())

    def _all(self, sql: str, params: Sequence[Any] = ()) -> List[Dict[str, Any]]:
        cur = self.conn.execute(sql, params)
        return [_row(cur, r) for r in cur.fetchall()]

    def _one(self, sql: str, params: Sequence[Any] = ()) -> Optional[Dict[str, Any]]:
        rows = self._all(sql, params)
        return rows[0] if rows else None

    # -- agents ---------------------------------------------------------------------------------------
    def create_agent(self, name: str, agent_type: str, config: Dict[str, Any]) -> Dict[str, Any]:
        now = time.time()
        agent_id = new_id("agent")
        self.conn.execute("INSERT INTO agents (id, name, agent_type, config_json, status, created_at, updated_at) "
                          "VALUES (?, ?, ?, ?, 'idle', ?, ?)",
                          (agent_id, name, agent_type, json.dumps(config), now, now))
        row = self.get_agent(agent_id)
        assert row is not None
        return row

    def get_agent(self, agent_id: str) -> Optional[Dict[str, Any]]:
        return self._one("SELECT * FROM agents WHERE id = ?", (agent_id,))

    def list_agents(self, *, archived: bool = False) -> List[Dict[str, Any]]:
        where = "" if archived else "WHERE status != 'archived'"
        return self._all(f"SELECT * FROM agents {where} ORDER BY created_at, id")

    def update_agent(self, agent_id: str, *, name: Optional[str], agent_type: Optional[str],
                     config: Optional[Dict[str, Any]]) -> Optional[Dict[str, Any]]:
        with self.transaction():
            row = self.get_agent(agent_id)
            if row is None:
                return None
            self.conn.execute(
                "UPDATE agents SET name = ?, agent_type = ?, config_json = ?, updated_at = ? WHERE id = ?",
                (name if name is not None else row["name"], agent_type or row["agent_type"],
                 json.dumps(config) if config is not None else row["config_json"], time.time(), agent_id))
        return self.get_agent(agent_id)

    def archive_agent(self, agent_id: str) -> bool:
        cur = self.conn.execute("UPDATE agents SET status = 'archived', updated_at = ? WHERE id = ?",
                                (time.time(), agent_id))
        return cur.rowcount == 1

    def claim_agent(self, agent_id: str) -> Tuple[str, Optional[str], List[Dict[str, Any]]]:
        """For ``POST /run``, in one transaction: mark an idle agent running, create its run and take the
        messages it will answer (:meth:`pending`): ``("ok", run_id, messages)``, or
        ``("missing"|"archived"|"running"|"nothing_pending", None, [])``. One ``UPDATE … WHERE status =
        'idle'`` decides between two simultaneous claims."""
        with self.transaction():
            row = self.get_agent(agent_id)
            if row is None or row["status"] != "idle":
                return ("missing" if row is None else row["status"]), None, []
            pending = self.pending(agent_id)
            if not pending:
                return "nothing_pending", None, []
            now = time.time()
            cur = self.conn.execute("UPDATE agents SET status = 'running', updated_at = ? WHERE id = ? AND status = 'idle'",
                                    (now, agent_id))
            if cur.rowcount != 1:
                return "running", None, []
            run_id = new_id("run")
            self.conn.execute("INSERT INTO runs (id, agent_id, kind, status, started_at) VALUES (?, ?, 'run', 'running', ?)",
                              (run_id, agent_id, now))
        return "ok", run_id, pending

    # -- messages -------------------------------------------------------------------------------------
    def add_message(self, agent_id: str, role: str, content: str, *, status: str, run_id: Optional[str] = None,
                    tool_calls: Optional[List[Dict[str, Any]]] = None) -> Dict[str, Any]:
        msg_id = new_id("msg")
        self.conn.execute(
            "INSERT INTO messages (id, agent_id, role, content, tool_calls_json, status, run_id, created_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (msg_id, agent_id, role, content, json.dumps(tool_calls) if tool_calls else None, status, run_id,
             time.time()))
        row = self._one("SELECT * FROM messages WHERE id = ?", (msg_id,))
        assert row is not None
        return row

    def messages(self, agent_id: str, *, after: int = 0, limit: int = 500) -> List[Dict[str, Any]]:
        """The agent's messages as the API lists them, in ``seq`` order. An agent's session copy of its
        instruction (the user's own messages, joined) is left out: those messages are listed themselves."""
        return self._all("SELECT * FROM messages WHERE agent_id = ? AND seq > ? AND NOT (source = 'session' AND "
                         "role = 'user') ORDER BY seq LIMIT ?", (agent_id, after, limit))

    def pending(self, agent_id: str) -> List[Dict[str, Any]]:
        """The user messages a ``POST /run`` answers: pending ones, except those a streamed message's run is
        answering right now (a stream answers its own message; one whose stream failed or was cancelled is
        pending again)."""
        return self._all("SELECT * FROM messages AS m WHERE agent_id = ? AND role = 'user' AND status = 'pending' "
                         "AND NOT EXISTS (SELECT 1 FROM runs WHERE runs.id = m.run_id AND runs.status = 'running') "
                         "ORDER BY seq", (agent_id,))

    def history(self, agent_id: str, *, before: int) -> List[Dict[str, Any]]:
        """Earlier conversation for a run's context: delivered user messages and complete answers."""
        return self._all("SELECT * FROM messages WHERE agent_id = ? AND seq < ? AND ((role = 'user' AND "
                         "status = 'delivered') OR (role = 'assistant' AND status = 'complete')) ORDER BY seq",
                         (agent_id, before))

    # -- runs -----------------------------------------------------------------------------------------
    def start_stream_run(self, agent_id: str, content: str) -> Tuple[Dict[str, Any], str]:
        """For a streamed message: the user message (pending) and its run, in one transaction."""
        with self.transaction():
            run_id = new_id("run")
            self.conn.execute("INSERT INTO runs (id, agent_id, kind, status, started_at) VALUES (?, ?, 'stream', 'running', ?)",
                              (run_id, agent_id, time.time()))
            message = self.add_message(agent_id, "user", content, status="pending", run_id=run_id)
        return message, run_id

    def finish_run(self, run_id: str, agent_id: str, *, status: str, answer: Optional[str],
                   tool_calls: Optional[List[Dict[str, Any]]], delivered: Sequence[str], stop_reason: Optional[str],
                   error: Optional[str], usage: Optional[Dict[str, int]], release: bool) -> None:
        """End a run in ONE transaction: its answer (``complete`` when succeeded, ``partial`` otherwise), the
        user messages it delivered (only on success), the run row, and (``release``) the agent back to idle.
        A successful run whose agent appended its turns to its session in this store (rows with the run's id)
        already has its answer there, so no second answer row is written."""
        with self.transaction():
            if status == "succeeded" and self._one("SELECT 1 AS yes FROM messages WHERE run_id = ? AND "
                                                   "source = 'session' LIMIT 1", (run_id,)):
                answer = None
            if answer is not None and (answer or tool_calls):
                self.add_message(agent_id, "assistant", answer, status="complete" if status == "succeeded" else "partial",
                                 run_id=run_id, tool_calls=tool_calls)
            if status == "succeeded" and delivered:
                marks = ",".join("?" * len(delivered))
                self.conn.execute(f"UPDATE messages SET status = 'delivered', run_id = ? WHERE id IN ({marks})",
                                  (run_id, *delivered))
            self.conn.execute("UPDATE runs SET status = ?, ended_at = ?, stop_reason = ?, error = ?, usage_json = ? "
                              "WHERE id = ?", (status, time.time(), stop_reason, error,
                                               json.dumps(usage) if usage else None, run_id))
            if release:
                self.conn.execute("UPDATE agents SET status = 'idle', updated_at = ? WHERE id = ? AND status = 'running'",
                                  (time.time(), agent_id))

    def get_run(self, agent_id: str, run_id: str) -> Optional[Dict[str, Any]]:
        return self._one("SELECT * FROM runs WHERE id = ? AND agent_id = ?", (run_id, agent_id))

    def recover(self) -> int:
        """At startup: runs left ``running`` by a previous process failed; their agents are idle again."""
        with self.transaction():
            cur = self.conn.execute("UPDATE runs SET status = 'failed', ended_at = ?, error = 'the server stopped "
                                    "during the run' WHERE status = 'running'", (time.time(),))
            self.conn.execute("UPDATE agents SET status = 'idle' WHERE status = 'running'")
        return cur.rowcount
