"""The SQLite session and state stores (real files): insertion order, exact values, one connection per thread,
schema versions and migrations, every failure a StoreError; and cutting history without splitting tool-call
groups."""

from __future__ import annotations

import sqlite3
import threading

import pytest

from jarvis_core.errors import JarvisError
from jarvis_core.stores import (
    SCHEMA_VERSION,
    SessionStore,
    SQLiteStore,
    StateStore,
    StoreError,
    whole_groups,
)
from jarvis_core.stores.sqlite import MIGRATIONS
from jarvis_core.testing import store_conformance
from jarvis_core.types import Message, Role, ToolCall


@pytest.fixture
def store(tmp_path):
    s = SQLiteStore(tmp_path / "sub" / "agents.db")
    yield s
    s.close()


def call(cid: str, name: str = "calculator") -> ToolCall:
    return ToolCall(cid, name, '{"expression": "1+1"}')


def test_the_sqlite_stores_satisfy_the_protocols(store):
    assert isinstance(store.sessions, SessionStore) and isinstance(store.state, StateStore)
    assert store.path.exists() and store.schema_version() == SCHEMA_VERSION


def test_the_sqlite_stores_pass_the_store_conformance_checks(store):
    store_conformance(store.sessions, store.state)


def test_messages_come_back_equal_in_insertion_order(store, tmp_path):
    tick = [
        Message.user("remember the code word: ORCHID ✿"),
        Message(Role.ASSISTANT, None, tool_calls=(call("c1"), call("c2", "think")), reasoning="let me store it"),
        Message.tool("2", "c1", "calculator"),
        Message.tool("noted", "c2", "think"),
        Message.assistant("ok"),
    ]
    store.sessions.append("operator:a", tick[:2])
    store.sessions.append("operator:b", [Message.user("other session")])
    store.sessions.append("operator:a", tick[2:])
    assert store.sessions.tail("operator:a", 100) == tick
    assert store.sessions.tail("operator:a", 2) == tick[-2:]
    assert store.sessions.tail("operator:a", 0) == [] and store.sessions.tail("nobody", 5) == []
    assert store.sessions.count("operator:a") == 5 and store.sessions.count("operator:b") == 1
    store.close()
    again = SQLiteStore(tmp_path / "sub" / "agents.db")  # a new object on the same file
    assert again.sessions.tail("operator:a", 100) == tick
    again.close()


def test_concurrent_appends_from_threads_keep_each_threads_order(store):
    def worker(n: int) -> None:
        for i in range(20):
            store.sessions.append("shared", [Message.user(f"{n}:{i}"), Message.assistant(f"{n}:{i}!")])

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    messages = store.sessions.tail("shared", 1000)
    assert len(messages) == 160
    for n in range(4):
        mine = [m.content for m in messages if m.content.startswith(f"{n}:")]
        assert mine == [x for i in range(20) for x in (f"{n}:{i}", f"{n}:{i}!")]
    # A batch is one transaction: a user message is always directly followed by its answer.
    for first, second in zip(messages[::2], messages[1::2], strict=True):
        assert second.content == first.content + "!"


def test_one_connection_per_thread(store):
    mine = store.connection()
    assert store.connection() is mine
    box = []
    t = threading.Thread(target=lambda: box.append(store.connection()))
    t.start()
    t.join()
    assert box[0] is not mine


@pytest.mark.parametrize("value", [
    "plain text", "", 0, -7, 2**70, 0.1, -0.0, 1e308, True, False, None, [], {},
    {"nested": {"list": [1, "two", 3.5, None, {"deep": [True]}], "unicode": "ORCHID ✿ 🌸"}},
])
def test_state_values_round_trip_exactly(store, value):
    store.state.put("k", value)
    got = store.state.get("k", default="MISSING")
    assert got == value and type(got) is type(value)


def test_state_put_replaces_and_keeps_first_stored_order(store):
    store.state.put("op:x:b", 1)
    store.state.put("op:x:a", 2)
    store.state.put("op:y:c", 3)
    store.state.put("op:x:b", "replaced")
    assert store.state.items("op:x:") == [("op:x:b", "replaced"), ("op:x:a", 2)]
    assert store.state.items("op:x:", limit=1) == [("op:x:a", 2)]
    assert [k for k, _ in store.state.items()] == ["op:x:b", "op:x:a", "op:y:c"]
    assert store.state.delete("op:x:b") is True and store.state.delete("op:x:b") is False
    assert store.state.get("op:x:b") is None and store.state.get("op:x:b", 5) == 5


def test_prefixes_are_exact_not_patterns(store):
    store.state.put("a_%:1", "literal")
    store.state.put("ab%:1", "looks alike")
    store.state.put("aXY:1", "wildcard match")
    assert store.state.items("a_%:") == [("a_%:1", "literal")]


@pytest.mark.parametrize("value", [(1, 2), {1: "int key"}, float("nan"), float("inf"), object(), {"s": {1, 2}}])
def test_values_that_would_change_are_refused_and_nothing_is_stored(store, value):
    with pytest.raises(StoreError) as info:
        store.state.put("k", value)
    assert info.value.operation == "put" and "'k'" in str(info.value)
    assert store.state.get("k", "absent") == "absent"


def test_bad_keys_are_store_errors(store):
    with pytest.raises(StoreError, match="non-empty string"):
        store.state.put("", 1)
    with pytest.raises(StoreError, match="session id"):
        store.sessions.append("", [Message.user("x")])


def test_a_file_newer_than_the_code_is_refused(tmp_path):
    path = tmp_path / "newer.db"
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 5}")
    conn.close()
    with pytest.raises(StoreError) as info:
        SQLiteStore(path)
    assert f"schema version {SCHEMA_VERSION + 5}" in str(info.value) and f"({SCHEMA_VERSION})" in str(info.value)
    assert info.value.path == str(path) and isinstance(info.value, JarvisError)


def test_migrations_run_in_order_once_and_an_older_code_refuses_the_result(tmp_path):
    path = tmp_path / "m.db"
    SQLiteStore(path).close()  # version 1
    later = (*MIGRATIONS, ("CREATE TABLE extra (x TEXT)", "INSERT INTO extra VALUES ('added by 2')"))
    upgraded = SQLiteStore(path, migrations=later)
    assert upgraded.schema_version() == 2
    upgraded.close()
    SQLiteStore(path, migrations=later).close()  # already at 2: nothing runs twice
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT x FROM extra").fetchall() == [("added by 2",)]
    conn.close()
    with pytest.raises(StoreError, match="newer than this jarvis-core"):
        SQLiteStore(path)


def test_a_failing_migration_leaves_the_file_at_its_version(tmp_path):
    path = tmp_path / "m.db"
    SQLiteStore(path).close()
    broken = (*MIGRATIONS, ("CREATE TABLE fine (x)", "THIS IS NOT SQL"))
    with pytest.raises(StoreError) as info:
        SQLiteStore(path, migrations=broken)
    assert info.value.operation == "migrate"
    store = SQLiteStore(path)
    assert store.schema_version() == 1
    assert store.read("check", "SELECT name FROM sqlite_master WHERE name = 'fine'") == []
    store.close()


def test_a_corrupted_file_is_a_store_error_at_open(tmp_path):
    path = tmp_path / "junk.db"
    path.write_bytes(b"this is not a database, just junk " * 200)
    with pytest.raises(StoreError) as info:
        SQLiteStore(path)
    assert info.value.operation == "open" and str(path) in str(info.value)
    assert "not a database" in str(info.value)


def test_a_directory_or_memory_path_is_a_store_error(tmp_path):
    with pytest.raises(StoreError):
        SQLiteStore(tmp_path)
    with pytest.raises(StoreError, match="needs a file path"):
        SQLiteStore(":memory:")


def test_a_store_broken_under_its_feet_raises_on_the_next_operation(store):
    store.sessions.append("s", [Message.user("kept")])
    other = sqlite3.connect(store.path)
    other.execute("DROP TABLE session_messages")
    other.execute("DROP TABLE state")
    other.commit()
    other.close()
    with pytest.raises(StoreError) as info:
        store.sessions.append("s", [Message.user("lost?")])
    assert info.value.operation == "append" and "no such table" in str(info.value)
    with pytest.raises(StoreError):
        store.state.get("k")


def test_a_closed_store_raises(store):
    store.close()
    with pytest.raises(StoreError, match="closed"):
        store.state.get("k")


def test_a_hand_edited_row_is_a_store_error(store):
    store.sessions.append("s", [Message.user("x")])
    store.state.put("k", 1)
    conn = sqlite3.connect(store.path)
    conn.execute("UPDATE session_messages SET message_json = '{\"role\": \"wizard\"}'")
    conn.execute("UPDATE state SET value_json = 'not json'")
    conn.commit()
    conn.close()
    with pytest.raises(StoreError, match="unreadable"):
        store.sessions.tail("s", 5)
    with pytest.raises(StoreError, match="not JSON"):
        store.state.get("k")


# -- whole_groups -------------------------------------------------------------------------------------
U, A = Message.user("q"), Message.assistant("a")
GROUP = [Message.assistant(None, [call("c1"), call("c2")]), Message.tool("1", "c1"), Message.tool("2", "c2")]


def test_whole_groups_keeps_complete_groups():
    assert whole_groups([U, *GROUP, A]) == [U, *GROUP, A]


def test_whole_groups_drops_results_whose_call_was_cut_off():
    assert whole_groups([*GROUP[2:], A, U]) == [A, U]
    assert whole_groups([*GROUP[1:], A]) == [A]


def test_whole_groups_drops_a_call_without_all_its_results():
    assert whole_groups([U, *GROUP[:2]]) == [U]
    assert whole_groups([U, GROUP[0], A]) == [U, A]


def test_whole_groups_drops_a_result_that_answers_no_call():
    stray = Message.tool("?", "c9")
    assert whole_groups([U, *GROUP, stray, A]) == [U, *GROUP, A]
