"""The core's :class:`~jarvis_core.stores.SessionStore` and :class:`~jarvis_core.stores.StateStore` over the
server's own database, for agents that keep memory between runs (``accepts_stores``, e.g. ``operative``).

Ids map onto the managed agent whose memory it is (its operator id is its managed-agent id):

- session ``operator:<agent_id>`` ↔ the agent's ``messages`` rows with ``source = 'session'``, each holding the
  exact :class:`~jarvis_core.types.Message` JSON in ``message_json`` (and ``role``, ``content``,
  ``tool_calls_json`` for the API's listing);
- state key ``operator:<agent_id>:<name>`` ↔ the ``state`` row ``(agent_id, name)``, the value as JSON that
  comes back equal (:mod:`jarvis_core.stores.codec`), in first-stored order (``seq``).

Every statement runs on the store's one thread (:meth:`Store.run_sync`), an append in one transaction. Any
failure is a :class:`~jarvis_core.stores.StoreError`: an id that names no managed agent, a value that would
not come back equal, a closed store, SQLite's own errors.
"""

from __future__ import annotations

import json
import sqlite3
import time
from typing import Any, Callable, List, Optional, Sequence, Tuple, TypeVar

from jarvis_core.stores.codec import decode_message, decode_value, encode_message, encode_value
from jarvis_core.stores.errors import StoreError
from jarvis_core.types import Message
from jarvis_server.managed.store import Store, new_id

__all__ = ["PREFIX", "ServerSessionStore", "ServerStateStore", "session_id_of", "state_key_of"]

T = TypeVar("T")

#: What every session id and state key of this store starts with (the operative agents' own naming).
PREFIX = "operator:"


def session_id_of(agent_id: str) -> str:
    """The session id of managed agent ``agent_id``."""
    return f"{PREFIX}{agent_id}"


def state_key_of(agent_id: str, name: str) -> str:
    """The state key of ``name`` of managed agent ``agent_id``."""
    return f"{PREFIX}{agent_id}:{name}"


class _Adapter:
    def __init__(self, store: Store) -> None:
        self.store = store

    def _run(self, operation: str, fn: Callable[..., T], *args: Any) -> T:
        try:
            return self.store.run_sync(fn, *args)
        except StoreError:
            raise
        except sqlite3.Error as exc:
            raise StoreError(f"{operation} failed on {self.store.path}: {type(exc).__name__}: {exc}",
                             path=str(self.store.path), operation=operation) from exc

    def _text(self, value: Any, operation: str, what: str) -> str:
        if not isinstance(value, str) or not value:
            raise StoreError(f"{operation}: the {what} must be a non-empty string, got {value!r}",
                             path=str(self.store.path), operation=operation)
        return value

    def _require_agent(self, agent_id: str, named: str, operation: str) -> None:
        if self.store.get_agent(agent_id) is None:
            raise StoreError(f"{operation}: {named!r} names no managed agent (ids here are "
                             f"'{PREFIX}<agent id>'{'' if operation == 'append' else ':<name>'})",
                             path=str(self.store.path), operation=operation)


class ServerSessionStore(_Adapter):
    """Sessions ``operator:<agent_id>`` in the ``messages`` table.

    :param run_id: the run these appends belong to (its rows carry it; a successful run whose agent appended
        its session writes no second answer row).
    """

    def __init__(self, store: Store, *, run_id: Optional[str] = None) -> None:
        super().__init__(store)
        self.run_id = run_id

    def _agent(self, session_id: Any, operation: str) -> Optional[str]:
        text = self._text(session_id, operation, "session id")
        agent_id = text[len(PREFIX):] if text.startswith(PREFIX) else ""
        return agent_id if agent_id and ":" not in agent_id else None

    def append(self, session_id: str, messages: Sequence[Message]) -> None:
        """Add ``messages`` after the session's last one, all in one transaction."""
        agent_id = self._agent(session_id, "append")
        path = str(self.store.path)
        rows = []
        for msg in messages:
            text = encode_message(msg, path=path)
            calls = [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in msg.tool_calls]
            rows.append((msg.role.value, msg.content or "", json.dumps(calls) if calls else None, text))
        if agent_id is None:
            raise StoreError(f"append: session {session_id!r} names no managed agent (sessions here are "
                             f"'{PREFIX}<agent id>')", path=path, operation="append")
        if rows:
            self._run("append", self._insert, agent_id, session_id, rows)

    def _insert(self, agent_id: str, session_id: str, rows: List[Tuple[str, str, Optional[str], str]]) -> None:
        with self.store.transaction():
            self._require_agent(agent_id, session_id, "append")
            now = time.time()
            self.store.conn.executemany(
                "INSERT INTO messages (id, agent_id, role, content, tool_calls_json, message_json, source, status, "
                "run_id, created_at) VALUES (?, ?, ?, ?, ?, ?, 'session', 'complete', ?, ?)",
                [(new_id("msg"), agent_id, *row, self.run_id, now) for row in rows])

    def tail(self, session_id: str, limit: int) -> List[Message]:
        """The session's last ``limit`` messages, oldest first (``[]`` for a session of no agent)."""
        agent_id = self._agent(session_id, "tail")
        if agent_id is None or limit <= 0:
            return []
        rows = self._run("tail", self.store.rows,
                         "SELECT message_json FROM (SELECT seq, message_json FROM messages WHERE agent_id = ? AND "
                         "source = 'session' ORDER BY seq DESC LIMIT ?) ORDER BY seq", (agent_id, min(int(limit), 2**63 - 1)))  # past SQLite's integers: all
        return [decode_message(text, path=str(self.store.path)) for (text,) in rows]

    def count(self, session_id: str) -> int:
        """How many messages the session holds."""
        agent_id = self._agent(session_id, "count")
        if agent_id is None:
            return 0
        rows = self._run("count", self.store.rows,
                         "SELECT COUNT(*) FROM messages WHERE agent_id = ? AND source = 'session'", (agent_id,))
        return int(rows[0][0])


class ServerStateStore(_Adapter):
    """State keys ``operator:<agent_id>:<name>`` in the ``state`` table."""

    def _split(self, key: Any, operation: str) -> Optional[Tuple[str, str]]:
        text = self._text(key, operation, "key")
        agent_id, sep, name = text[len(PREFIX):].partition(":") if text.startswith(PREFIX) else ("", "", "")
        return (agent_id, name) if agent_id and sep and name else None

    def get(self, key: str, default: Any = None) -> Any:
        """The value stored under exactly ``key``, or ``default``."""
        parts = self._split(key, "get")
        if parts is None:
            return default
        rows = self._run("get", self.store.rows, "SELECT value FROM state WHERE agent_id = ? AND key = ?", parts)
        return decode_value(key, rows[0][0], path=str(self.store.path)) if rows else default

    def put(self, key: str, value: Any) -> None:
        """Store ``value`` (JSON that comes back equal) under ``key``, replacing what it held."""
        parts = self._split(key, "put")
        text = encode_value(key, value, path=str(self.store.path))
        if parts is None:
            raise StoreError(f"put: key {key!r} is not '{PREFIX}<agent id>:<name>'", path=str(self.store.path),
                             operation="put")
        self._run("put", self._upsert, key, parts, text)

    def _upsert(self, key: str, parts: Tuple[str, str], text: str) -> None:
        with self.store.transaction():
            self._require_agent(parts[0], key, "put")
            self.store.conn.execute(
                "INSERT INTO state (agent_id, key, value, updated_at) VALUES (?, ?, ?, ?) ON CONFLICT(agent_id, key) "
                "DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at", (*parts, text, time.time()))

    def delete(self, key: str) -> bool:
        """Remove ``key``; whether it existed."""
        parts = self._split(key, "delete")
        if parts is None:
            return False
        return self._run("delete", self._delete, parts)

    def _delete(self, parts: Tuple[str, str]) -> bool:
        return self.store.conn.execute("DELETE FROM state WHERE agent_id = ? AND key = ?", parts).rowcount > 0

    def items(self, prefix: str = "", *, limit: Optional[int] = None) -> List[Tuple[str, Any]]:
        """``(key, value)`` pairs whose full key starts with ``prefix`` (exactly, no wildcards), in first-stored
        order; with ``limit``, the last ``limit`` of them."""
        full = f"'{PREFIX}' || agent_id || ':' || key"
        sql = f"SELECT seq, {full} AS full_key, value FROM state WHERE substr({full}, 1, ?) = ?"
        params: List[Any] = [len(prefix), prefix]
        if limit is not None:
            if limit <= 0:
                return []
            sql = f"SELECT * FROM ({sql} ORDER BY seq DESC LIMIT ?)"
            params.append(int(limit))
        rows = self._run("items", self.store.rows, f"{sql} ORDER BY seq", params)
        return [(key, decode_value(key, text, path=str(self.store.path))) for _seq, key, text in rows]
