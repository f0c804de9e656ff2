"""The managed-agents SQLite store on a real file: schema version, refusing a newer file, recovery at startup,
one transaction for a run's end, and state."""

from __future__ import annotations

import sqlite3

import pytest

from jarvis_core.errors import ConfigError
from jarvis_server.managed.store import SCHEMA_VERSION, Store


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
    with pytest.raises(ConfigError, match="newer than this jarvis-server"):
        Store.open(path)


def test_recover_fails_leftover_runs_and_frees_their_agents(store):
    agent = store.run_sync(store.create_agent, "a", "plain", {})
    outcome, run_id = store.run_sync(store.claim_agent, agent["id"])
    assert outcome == "ok"
    assert store.run_sync(store.claim_agent, agent["id"]) == ("running", None)
    assert store.run_sync(store.recover) == 1
    assert store.run_sync(store.get_agent, agent["id"])["status"] == "idle"
    run = store.run_sync(store.get_run, agent["id"], run_id)
    assert run["status"] == "failed" and "stopped" in run["error"]


def test_messages_are_ordered_by_insertion_and_failed_runs_deliver_nothing(store):
    agent = store.run_sync(store.create_agent, "a", "plain", {})
    ids = [store.run_sync(store.add_message, agent["id"], "user", f"m{i}", status="pending")["id"] for i in range(3)]
    _, run_id = store.run_sync(store.claim_agent, agent["id"])
    store.run_sync(store.finish_run, run_id, agent["id"], status="failed", answer="", tool_calls=None, delivered=ids,
                   stop_reason=None, error="boom", usage=None, release=True)
    assert [m["id"] for m in store.run_sync(store.pending, agent["id"])] == ids
    _, run_id = store.run_sync(store.claim_agent, agent["id"])
    store.run_sync(store.finish_run, run_id, agent["id"], status="succeeded", answer="done", tool_calls=None,
                   delivered=ids[:2], stop_reason="final", error=None, usage={"total_tokens": 3}, release=True)
    rows = store.run_sync(store.messages, agent["id"])
    assert [(m["content"], m["status"]) for m in rows] == [
        ("m0", "delivered"), ("m1", "delivered"), ("m2", "pending"), ("done", "complete")]
    assert [m["seq"] for m in rows] == sorted(m["seq"] for m in rows)


def test_state_round_trip(store):
    agent = store.run_sync(store.create_agent, "a", "plain", {})
    assert store.run_sync(store.get_state, agent["id"], "notes") is None
    store.run_sync(store.set_state, agent["id"], "notes", {"seen": [1, 2]})
    store.run_sync(store.set_state, agent["id"], "notes", {"seen": [1, 2, 3]})
    assert store.run_sync(store.get_state, agent["id"], "notes") == {"seen": [1, 2, 3]}
