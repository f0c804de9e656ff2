"""The managed-agents SQLite store on a real file: schema version and migrations (an older file holding data
is upgraded in place), refusing a newer file, claiming a run, recovery at startup, one transaction for a
run's end, and state."""

from __future__ import annotations

import sqlite3

import pytest

from jarvis_core.stores import StoreError
from jarvis_server.managed.memory import ServerStateStore
from jarvis_server.managed.store import MIGRATIONS, SCHEMA_VERSION, Store


@pytest.fixture
def store(tmp_path):
    s = Store.open(tmp_path / "agents.db")
    yield s
    s.close()


def test_new_file_has_the_current_schema_version(tmp_path):
    Store.open(tmp_path / "a.db").close()
    with sqlite3.connect(tmp_path / "a.db") as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert {"agents", "messages", "runs", "state"} <= tables
    Store.open(tmp_path / "a.db").close()  # reopening migrates nothing and keeps working


def test_a_newer_file_is_refused(tmp_path):
    path = tmp_path / "future.db"
    with sqlite3.connect(path) as conn:
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    with pytest.raises(StoreError, match="newer than this jarvis-server"):
        Store.open(path)


def test_recover_fails_leftover_runs_and_frees_their_agents(store):
    agent = store.run_sync(store.create_agent, "a", "plain", {})
    store.run_sync(store.add_message, agent["id"], "user", "hi", status="pending")
    outcome, run_id, pending = store.run_sync(store.claim_agent, agent["id"])
    assert outcome == "ok" and [m["content"] for m in pending] == ["hi"]
    assert store.run_sync(store.claim_agent, agent["id"]) == ("running", None, [])
    assert store.run_sync(store.recover) == 1
    assert store.run_sync(store.get_agent, agent["id"])["status"] == "idle"
    run = store.run_sync(store.get_run, agent["id"], run_id)
    assert run["status"] == "failed" and "stopped" in run["error"]


def test_messages_are_ordered_by_insertion_and_failed_runs_deliver_nothing(store):
    agent = store.run_sync(store.create_agent, "a", "plain", {})
    ids = [store.run_sync(store.add_message, agent["id"], "user", f"m{i}", status="pending")["id"] for i in range(3)]
    _, run_id, _ = store.run_sync(store.claim_agent, agent["id"])
    store.run_sync(store.finish_run, run_id, agent["id"], status="failed", answer="", tool_calls=None, delivered=ids,
                   stop_reason=None, error="boom", usage=None, release=True)
    assert [m["id"] for m in store.run_sync(store.pending, agent["id"])] == ids
    _, run_id, _ = store.run_sync(store.claim_agent, agent["id"])
    store.run_sync(store.finish_run, run_id, agent["id"], status="succeeded", answer="done", tool_calls=None,
                   delivered=ids[:2], stop_reason="final", error=None, usage={"total_tokens": 3}, release=True)
    rows = store.run_sync(store.messages, agent["id"])
    assert [(m["content"], m["status"]) for m in rows] == [
        ("m0", "delivered"), ("m1", "delivered"), ("m2", "pending"), ("done", "complete")]
    assert [m["seq"] for m in rows] == sorted(m["seq"] for m in rows)


def test_state_round_trip(store):
    agent = store.run_sync(store.create_agent, "a", "plain", {})
    state = ServerStateStore(store)
    key = f"operator:{agent['id']}:notes"
    assert state.get(key) is None
    state.put(key, {"seen": [1, 2]})
    state.put(key, {"seen": [1, 2, 3]})
    assert state.get(key) == {"seen": [1, 2, 3]}


def test_a_streams_own_message_is_not_pending_for_a_run_until_its_stream_fails(store):
    agent = store.run_sync(store.create_agent, "a", "plain", {})
    message, stream_run = store.run_sync(store.start_stream_run, agent["id"], "streamed")
    assert store.run_sync(store.pending, agent["id"]) == []
    assert store.run_sync(store.claim_agent, agent["id"]) == ("nothing_pending", None, [])
    assert store.run_sync(store.get_agent, agent["id"])["status"] == "idle"  # a refused claim changes nothing
    store.run_sync(store.finish_run, stream_run, agent["id"], status="failed", answer=None, tool_calls=None,
                   delivered=[message["id"]], stop_reason=None, error="boom", usage=None, release=False)
    outcome, _, pending = store.run_sync(store.claim_agent, agent["id"])
    assert outcome == "ok" and [m["id"] for m in pending] == [message["id"]]


# -- migrations -------------------------------------------------------------------------------------------


def _version(path):
    with sqlite3.connect(path) as conn:
        return conn.execute("PRAGMA user_version").fetchone()[0]


def _version_1_file_with_data(path):
    """A file exactly as schema version 1 left it, holding an agent, two messages, a run and state."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.executescript(MIGRATIONS[0])
    conn.executescript("""
        PRAGMA user_version = 1;
        INSERT INTO agents VALUES ('agent_old', 'old', 'plain', '{"temperature": 0.1}', 'idle', 1.0, 1.0);
        INSERT INTO runs (id, agent_id, kind, status, started_at, ended_at, stop_reason)
            VALUES ('run_old', 'agent_old', 'run', 'succeeded', 2.0, 3.0, 'final');
        INSERT INTO messages (id, agent_id, role, content, status, run_id, created_at)
            VALUES ('msg_q', 'agent_old', 'user', 'what; is this?', 'delivered', 'run_old', 2.0);
        INSERT INTO messages (id, agent_id, role, content, status, run_id, created_at)
            VALUES ('msg_a', 'agent_old', 'assistant', 'an old answer', 'complete', 'run_old', 3.0);
        INSERT INTO state VALUES ('agent_old', 'notes', '[1, 2]', 3.0);
        INSERT INTO state VALUES ('agent_old', 'later', '"x"', 4.0);
    """)
    conn.close()


def _assert_old_data_kept(store):
    assert store.run_sync(store.get_agent, "agent_old")["name"] == "old"
    rows = store.run_sync(store.messages, "agent_old")
    assert [(m["id"], m["content"]) for m in rows] == [("msg_q", "what; is this?"), ("msg_a", "an old answer")]
    assert store.run_sync(store.get_run, "agent_old", "run_old")["status"] == "succeeded"
    # State rows keep the order they were first stored in (not the key's), across migration 2.
    assert ServerStateStore(store).items("operator:agent_old:") == [("operator:agent_old:notes", [1, 2]),
                                                                   ("operator:agent_old:later", "x")]


# A later schema version: a new column filled from the old rows, a table, a trigger whose body holds ';'.
EXTRA = """
    ALTER TABLE agents ADD COLUMN description TEXT NOT NULL DEFAULT '';
    UPDATE agents SET description = 'was: ' || name || '; migrated';
    CREATE TABLE audit (agent_id TEXT NOT NULL, note TEXT NOT NULL);
    CREATE TRIGGER audit_rename AFTER UPDATE OF name ON agents BEGIN
        INSERT INTO audit VALUES (new.id, 'renamed; from ' || old.name);
    END;
"""


def test_a_version_1_file_holding_data_is_upgraded_in_order_and_keeps_it(tmp_path):
    path = tmp_path / "old.db"
    _version_1_file_with_data(path)
    store = Store.open(path, migrations=(*MIGRATIONS, EXTRA))
    try:
        _assert_old_data_kept(store)
        assert store.run_sync(store.get_agent, "agent_old")["description"] == "was: old; migrated"
        store.run_sync(store.update_agent, "agent_old", name="new", agent_type=None, config=None)
        new = store.run_sync(store.create_agent, "fresh", "plain", {})  # the code works on the upgraded file
        added = store.run_sync(store.add_message, new["id"], "user", "hi", status="pending")
        assert added["seq"] > max(m["seq"] for m in store.run_sync(store.messages, "agent_old"))
    finally:
        store.close()
    assert _version(path) == SCHEMA_VERSION + 1
    with sqlite3.connect(path) as conn:  # the trigger whose body holds ';' was created whole
        assert conn.execute("SELECT * FROM audit").fetchall() == [("agent_old", "renamed; from old")]
    # The current code alone finds the file newer than it understands, and refuses it.
    with pytest.raises(StoreError, match="newer than this jarvis-server"):
        Store.open(path)


def test_a_version_1_file_holding_data_opens_with_the_current_code(tmp_path):
    path = tmp_path / "old.db"
    _version_1_file_with_data(path)
    Store.open(path).close()
    assert _version(path) == SCHEMA_VERSION
    store = Store.open(path)
    try:
        _assert_old_data_kept(store)
    finally:
        store.close()


def test_a_version_0_file_without_tables_gets_every_migration(tmp_path):
    path = tmp_path / "empty.db"
    sqlite3.connect(path).close()  # an existing, empty SQLite file: user_version 0
    assert _version(path) == 0
    Store.open(path, migrations=(*MIGRATIONS, EXTRA)).close()
    assert _version(path) == SCHEMA_VERSION + 1
    with sqlite3.connect(path) as conn:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert {"agents", "messages", "runs", "state", "audit"} <= tables


def test_a_file_at_the_current_version_is_left_untouched(tmp_path):
    path = tmp_path / "current.db"
    _version_1_file_with_data(path)
    # Version 1 is current for a store with one migration: it does not run again, whatever it says.
    Store.open(path, migrations=("CREATE TABLE must_not_run (x)",)).close()
    with sqlite3.connect(path) as conn:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert "must_not_run" not in tables and _version(path) == 1
    with sqlite3.connect(path) as conn:
        contents = conn.execute("SELECT content FROM messages ORDER BY seq").fetchall()
    assert contents == [("what; is this?",), ("an old answer",)]


def test_a_failing_migration_leaves_the_file_at_its_version_with_its_data(tmp_path):
    path = tmp_path / "old.db"
    _version_1_file_with_data(path)
    broken = "ALTER TABLE agents ADD COLUMN flag INTEGER; INSERT INTO no_such_table VALUES (1)"
    failed = rf"schema version {SCHEMA_VERSION + 1} failed.*unchanged at version {SCHEMA_VERSION}"
    with pytest.raises(StoreError, match=failed):
        Store.open(path, migrations=(*MIGRATIONS, broken))
    assert _version(path) == SCHEMA_VERSION  # the real migrations ran; the broken one left no trace
    with sqlite3.connect(path) as conn:
        columns = [r[1] for r in conn.execute("PRAGMA table_info(agents)")]
    assert "flag" not in columns  # the migration's first statement was rolled back with it
    store = Store.open(path)
    try:
        _assert_old_data_kept(store)
    finally:
        store.close()
