"""The conversation log: every ``jarvis ask`` and ``jarvis chat`` answer, in SQLite under the jarvis home.

::

    from jarvis_core.convlog import ConversationLog

    with ConversationLog() as log:                  # $JARVIS_HOME/logs.db (or [log] path)
        for r in log.responses(limit=5):            # newest first
            print(r.conversation_id, r.model, r.prompt, "->", r.response)
        hits = log.responses(query="paris")         # full-text search (FTS5) of prompts and answers
        history = log.conversation(hits[0].conversation_id)   # oldest first

The file is created (mode 0600) on the first write. Writes do not wait for the disk (``synchronous=OFF``,
a rollback journal kept between writes): a crash of jarvis leaves the log whole, an OS crash or a power cut may lose
the last answers. Opening a log written by an older jarvis migrates it
(:mod:`jarvis_core.convlog.schema`). Every text is stored with the secrets the caller names masked.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
import uuid
from pathlib import Path
from typing import Any, Iterable, List, Mapping, Optional, Sequence, Union

from jarvis_core.convlog.record import LoggedResponse
from jarvis_core.convlog.schema import CATCH_UP, migrate
from jarvis_core.engine.redaction import scrub_value
from jarvis_core.errors import UsageError

__all__ = ["ConversationLog", "new_conversation_id"]

#: How long a write waits for another process's write to finish before giving up.
_BUSY_TIMEOUT_S = 2.0


def new_conversation_id() -> str:
    """A fresh conversation id: 16 hex digits, random."""
    return uuid.uuid4().hex[:16]


def _fts_query(text: str) -> str:
    # Every word is quoted, so a user's text is never FTS5 syntax: "c++ (beta)" searches for its words.
    words = [w.replace('"', '""') for w in text.split()]
    return " ".join(f'"{w}"' for w in words if w)


class ConversationLog:
    """Read and write one conversation log file.

    :param path: the SQLite file; ``None`` is :func:`jarvis_core.convlog.default_log_path`.

    Reading a log that does not exist returns nothing and creates nothing. The connection is opened on first
    use; :meth:`close` (or ``with``) closes it.
    """

    def __init__(self, path: Union[str, os.PathLike[str], None] = None) -> None:
        if path is None:
            from jarvis_core.convlog.settings import default_log_path

            path = default_log_path()
        self.path = Path(path).expanduser()
        self._conn: Optional[sqlite3.Connection] = None

    # -- connection -------------------------------------------------------------------------------
    def _connect(self, *, create: bool) -> Optional[sqlite3.Connection]:
        if self._conn is not None:
            return self._conn
        if not self.path.exists():
            if not create:
                return None
            self.path.parent.mkdir(parents=True, exist_ok=True)
            # The log holds private conversations: only its owner may read it.
            os.close(os.open(self.path, os.O_CREAT | os.O_WRONLY, 0o600))
        conn = sqlite3.connect(self.path, timeout=_BUSY_TIMEOUT_S, isolation_level=None,
                               check_same_thread=False)
        conn.row_factory = sqlite3.Row
        try:
            # No fsync: on a busy disk one costs 10-25 ms, ten times the log's budget per answer. An
            # application crash still leaves the file whole (the journal, kept between writes so that a write
            # changes no directory, is written before the file is changed); an OS crash or power cut may lose
            # the last answers.
            conn.execute("PRAGMA journal_mode=PERSIST")
            conn.execute("PRAGMA synchronous=OFF")
            migrate(conn)
        except BaseException:
            conn.close()
            raise
        self._conn = conn
        return conn

    def close(self) -> None:
        """Close the connection (idempotent)."""
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()

    def __enter__(self) -> ConversationLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<ConversationLog {str(self.path)!r}>"

    # -- writing ----------------------------------------------------------------------------------
    def record(
        self,
        *,
        prompt: str,
        response: str,
        conversation_id: Optional[str] = None,
        system: Optional[str] = None,
        reasoning: Optional[str] = None,
        tool_calls: Sequence[Mapping[str, Any]] = (),
        tool_results: Sequence[Mapping[str, Any]] = (),
        model: Optional[str] = None,
        engine: Optional[str] = None,
        agent: Optional[str] = None,
        usage: Optional[Mapping[str, int]] = None,
        duration_s: Optional[float] = None,
        secrets: Iterable[Any] = (),
    ) -> LoggedResponse:
        """Store one answer (in a new conversation when ``conversation_id`` is ``None``) and return it as
        stored. Every text, tool call and tool result has each of ``secrets`` (strings or
        :class:`~jarvis_core.engine.redaction.Secret`) masked. Raises :class:`sqlite3.Error` or
        :class:`OSError` when the file cannot be written."""
        conn = self._connect(create=True)
        assert conn is not None
        cid = conversation_id or new_conversation_id()
        masked = scrub_value(
            {"prompt": prompt, "response": response, "system": system, "reasoning": reasoning,
             "tool_calls": [dict(c) for c in tool_calls], "tool_results": [dict(r) for r in tool_results]},
            tuple(secrets),
        )
        now = time.time()
        u = usage or {}
        with conn:  # one transaction: the conversation row and the response row together
            conn.execute("BEGIN")
            conn.execute("INSERT OR IGNORE INTO conversations(id, created) VALUES (?, ?)", (cid, now))
            cursor = conn.execute(
                "INSERT INTO responses(conversation_id, created, prompt, system, response, reasoning, tool_calls,"
                " tool_results, model, engine, agent, prompt_tokens, completion_tokens, total_tokens, duration_s)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (cid, now, masked["prompt"], masked["system"], masked["response"], masked["reasoning"] or None,
                 json.dumps(masked["tool_calls"], ensure_ascii=False) if tool_calls else None,
                 json.dumps(masked["tool_results"], ensure_ascii=False) if tool_results else None,
                 model, engine, agent, u.get("prompt_tokens") if usage else None,
                 u.get("completion_tokens") if usage else None, u.get("total_tokens") if usage else None,
                 duration_s),
            )
            row_id = cursor.lastrowid
        return LoggedResponse(
            id=int(row_id or 0), conversation_id=cid, created=now, prompt=masked["prompt"], response=masked["response"],
            system=masked["system"], reasoning=masked["reasoning"] or None, tool_calls=tuple(masked["tool_calls"]),
            tool_results=tuple(masked["tool_results"]), model=model, engine=engine, agent=agent,
            usage=dict(usage) if usage else None, duration_s=duration_s,
        )

    # -- reading ----------------------------------------------------------------------------------
    def responses(
        self, *, limit: Optional[int] = None, conversation_id: Optional[str] = None, query: Optional[str] = None,
    ) -> List[LoggedResponse]:
        """Logged answers, newest first: all of them, one conversation's (``conversation_id``, or a unique
        prefix of it), or those whose prompt or answer matches every word of ``query`` (best match first)."""
        conn = self._connect(create=False)
        if conn is None:
            return []
        where: List[str] = []
        params: List[Any] = []
        order = "r.id DESC"
        if conversation_id:
            where.append("r.conversation_id = ?")
            params.append(self.conversation_id(conversation_id))
        source = "responses r"
        if query is not None:
            match = _fts_query(query)
            if not match:
                raise UsageError("the search is empty: give a word to look for", argument="QUERY")
            with conn:
                conn.execute("BEGIN IMMEDIATE")
                for statement in CATCH_UP:
                    conn.execute(statement)
            source = "responses_fts f JOIN responses r ON r.id = f.rowid"
            where.append("responses_fts MATCH ?")
            params.append(match)
            order = "f.rank, r.id DESC"
        sql = f"SELECT r.* FROM {source}" + (f" WHERE {' AND '.join(where)}" if where else "") + f" ORDER BY {order}"
        if limit is not None:
            sql += " LIMIT ?"
            params.append(int(limit))
        return [LoggedResponse.from_row(row) for row in conn.execute(sql, params)]

    def get(self, response_id: int) -> LoggedResponse:
        """One logged answer by id; :class:`~jarvis_core.errors.UsageError` when there is none."""
        conn = self._connect(create=False)
        row = None if conn is None else conn.execute("SELECT * FROM responses WHERE id = ?", (response_id,)).fetchone()
        if row is None:
            raise UsageError(f"no logged answer has id {response_id} (see 'jarvis logs')", argument="ID")
        return LoggedResponse.from_row(row)

    def conversation_id(self, prefix: str) -> str:
        """The conversation whose id is ``prefix`` or starts with it; a
        :class:`~jarvis_core.errors.UsageError` when none or several do."""
        conn = self._connect(create=False)
        pattern = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        rows = [] if conn is None else conn.execute(
            "SELECT id FROM conversations WHERE id LIKE ? ESCAPE '\\' ORDER BY id LIMIT 2", (pattern,)).fetchall()
        ids = [r[0] for r in rows]
        if prefix in ids:
            return prefix
        if len(ids) == 1:
            return str(ids[0])
        what = "no logged conversation" if not ids else "more than one logged conversation"
        raise UsageError(f"{what} has an id starting with {prefix!r} (see 'jarvis logs')", argument="--cid")

    def latest_conversation_id(self) -> Optional[str]:
        """The conversation of the most recent answer, or ``None`` for an empty log."""
        conn = self._connect(create=False)
        row = None if conn is None else conn.execute(
            "SELECT conversation_id FROM responses ORDER BY id DESC LIMIT 1").fetchone()
        return None if row is None else str(row[0])

    def conversation(self, conversation_id: str) -> List[LoggedResponse]:
        """One conversation's answers, oldest first (``conversation_id`` may be a unique prefix)."""
        return list(reversed(self.responses(conversation_id=conversation_id)))
