"""The conversation log's SQLite schema and its migrations.

The schema version is SQLite's ``user_version``. Each entry of :data:`MIGRATIONS` moves a database from the
version before it to its own number, in one transaction; :func:`migrate` applies the missing ones in order,
so a log written by an older jarvis is upgraded in place when it is opened, never rebuilt.
"""

from __future__ import annotations

import sqlite3
from typing import Optional, Sequence

__all__ = ["CATCH_UP", "LATEST", "MIGRATIONS", "migrate", "version_of"]

#: Version 1: conversations and their responses.
_V1 = """
CREATE TABLE conversations (
    id TEXT PRIMARY KEY,
    created REAL NOT NULL
);
CREATE TABLE responses (
    id INTEGER PRIMARY KEY,
    conversation_id TEXT NOT NULL REFERENCES conversations(id),
    created REAL NOT NULL,
    prompt TEXT NOT NULL,
    system TEXT,
    response TEXT NOT NULL,
    reasoning TEXT,
    tool_calls TEXT,
    tool_results TEXT,
    model TEXT,
    engine TEXT,
    agent TEXT,
    prompt_tokens INTEGER,
    completion_tokens INTEGER,
    total_tokens INTEGER,
    duration_s REAL
);
CREATE INDEX responses_by_conversation ON responses(conversation_id, id);
"""

#: Version 2: the full-text index of prompts and responses (FTS5). It is brought up to date when searched
#: (:data:`CATCH_UP`), not on every write: a trigger would add half the cost of logging an answer.
_V2 = """
CREATE VIRTUAL TABLE responses_fts USING fts5(
    prompt, response, content='responses', content_rowid='id'
);
CREATE TABLE responses_fts_indexed (last_id INTEGER NOT NULL);
INSERT INTO responses_fts_indexed VALUES (0);
"""

#: Index the answers written since the last search (run in one transaction before a search).
CATCH_UP = (
    "INSERT INTO responses_fts(rowid, prompt, response) SELECT id, prompt, response FROM responses"
    " WHERE id > (SELECT last_id FROM responses_fts_indexed) ORDER BY id",
    "UPDATE responses_fts_indexed SET last_id = (SELECT coalesce(max(id), 0) FROM responses)",
)

#: ``MIGRATIONS[n - 1]`` brings a database to version ``n``.
MIGRATIONS: Sequence[str] = (_V1, _V2)
#: The version this code writes.
LATEST = len(MIGRATIONS)


def version_of(conn: sqlite3.Connection) -> int:
    """The schema version of an open database (0: empty)."""
    return int(conn.execute("PRAGMA user_version").fetchone()[0])


def migrate(conn: sqlite3.Connection, target: Optional[int] = None) -> int:
    """Apply the migrations the database lacks, up to ``target`` (default :data:`LATEST`); return the version.

    A database newer than this code is left alone (its extra columns are ignored by the queries here).
    """
    goal = LATEST if target is None else target
    current = version_of(conn)
    while current < goal:
        script = MIGRATIONS[current]
        current += 1
        # executescript commits any pending transaction first; BEGIN makes the step atomic.
        conn.executescript(f"BEGIN;\n{script}\nPRAGMA user_version = {current};\nCOMMIT;")
    return current
