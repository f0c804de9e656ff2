"""The server's database as the core's SessionStore and StateStore (real SQLite files): the core's store
conformance checks, ids mapped onto managed agents, appends from many threads through the one writer, every
failure a StoreError, and a run whose agent wrote its session getting no second answer row."""

from __future__ import annotations

import sqlite3
import threading

import pytest

from jarvis_core.stores import SessionStore, StateStore, StoreError
from jarvis_core.testing import store_conformance
from jarvis_core.types import Message, ToolCall
from jarvis_server.managed.memory import ServerSessionStore, ServerStateStore, session_id_of, state_key_of
from jarvis_server.managed.store import Store


@pytest.fixture
def store(tmp_path):
    s = Store.open(tmp_path / "agents.db")
    yield s
    s.close()


def agent(store, name="a"):
    return store.run_sync(store.create_agent, name, "operative", {})["id"]


def test_the_server_stores_pass_the_core_store_conformance_checks(store):
    a, b = agent(store, "a"), agent(store, "b")
    sessions, state = ServerSessionStore(store), ServerStateStore(store)
    assert isinstance(sessions, SessionStore) and isinstance(state, StateStore)
    store_conformance(sessions, state, session_ids=(session_id_of(a), session_id_of(b)),
                      key_prefix=state_key_of(a, ""))


def test_sessions_and_keys_are_the_agents_rows(store, tmp_path):
    a, b = agent(store, "a"), agent(store, "b")
    sessions, state = ServerSessionStore(store, run_id="run_x"), ServerStateStore(store)
    call = ToolCall("c1", "add", '{"a": 1}')
    sessions.append(session_id_of(a), [Message.user("hi"), Message.assistant(None, [call]),
                                       Message.tool("2", "c1", "add")])
    state.put(state_key_of(a, "state"), {"seen": 1})
    state.put(state_key_of(b, "note:x"), "b's")
    with sqlite3.connect(tmp_path / "agents.db") as conn:
        got = conn.execute("SELECT agent_id, role, content, tool_calls_json, source, status, run_id FROM messages "
                           "ORDER BY seq").fetchall()
        assert got == [(a, "user", "hi", None, "session", "complete", "run_x"),
                       (a, "assistant", "", '[{"id": "c1", "name": "add", "arguments": "{\\"a\\": 1}"}]', "session",
                        "complete", "run_x"),
                       (a, "tool", "2", None, "session", "complete", "run_x")]
        assert conn.execute("SELECT agent_id, key, value FROM state ORDER BY seq").fetchall() == [
            (a, "state", '{"seen": 1}'), (b, "note:x", '"b\'s"')]
    assert state.items("operator:") == [(state_key_of(a, "state"), {"seen": 1}), (state_key_of(b, "note:x"), "b's")]
    assert sessions.count(session_id_of(b)) == 0


@pytest.mark.parametrize("session_id", ["operator:agent_missing", "elsewhere", "operator:", "operator:a:b"])
def test_a_session_of_no_agent_is_empty_and_cannot_be_written(store, session_id):
    sessions = ServerSessionStore(store)
    assert sessions.tail(session_id, 5) == [] and sessions.count(session_id) == 0
    with pytest.raises(StoreError, match="names no managed agent") as info:
        sessions.append(session_id, [Message.user("x")])
    assert info.value.operation == "append" and info.value.path == str(store.path)


@pytest.mark.parametrize("key", ["operator:agent_missing:state", "state", "operator:agent_x", "operator::x"])
def test_a_key_of_no_agent_is_absent_and_cannot_be_written(store, key):
    state = ServerStateStore(store)
    assert state.get(key, "absent") == "absent" and state.delete(key) is False
    with pytest.raises(StoreError) as info:
        state.put(key, 1)
    assert info.value.operation == "put"


def test_appends_from_many_threads_go_through_the_one_writer_whole(store):
    a = agent(store)
    sessions = ServerSessionStore(store)

    def worker(n: int) -> None:
        for i in range(15):
            sessions.append(session_id_of(a), [Message.user(f"{n}:{i}"), Message.assistant(f"{n}:{i}!")])

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    messages = sessions.tail(session_id_of(a), 1000)
    assert len(messages) == 120
    for n in range(4):
        assert [m.content for m in messages if m.content.startswith(f"{n}:")] == [
            x for i in range(15) for x in (f"{n}:{i}", f"{n}:{i}!")]
    for first, second in zip(messages[::2], messages[1::2], strict=True):
        assert second.content == first.content + "!"  # a batch is one transaction


def test_a_closed_store_and_a_broken_table_are_store_errors(tmp_path):
    store = Store.open(tmp_path / "agents.db")
    a = agent(store)
    sessions, state = ServerSessionStore(store), ServerStateStore(store)
    store.run_sync(store.conn.execute, "DROP TABLE state")
    with pytest.raises(StoreError, match="no such table") as info:
        state.put(state_key_of(a, "state"), 1)
    assert info.value.operation == "put"
    store.close()
    with pytest.raises(StoreError, match="is closed"):
        sessions.tail(session_id_of(a), 5)
    with pytest.raises(StoreError, match="is closed"):
        state.get(state_key_of(a, "state"))


def test_a_run_whose_agent_wrote_its_session_gets_no_second_answer_row(store):
    a = agent(store)
    message, run_id = store.run_sync(store.start_stream_run, a, "remember ORCHID")
    ServerSessionStore(store, run_id=run_id).append(session_id_of(a), [Message.user("remember ORCHID"),
                                                                       Message.assistant("noted")])
    store.run_sync(store.finish_run, run_id, a, status="succeeded", answer="noted", tool_calls=None,
                   delivered=[message["id"]], stop_reason="final", error=None, usage=None, release=False)
    listed = store.run_sync(store.messages, a)
    # The session's copy of the instruction is not listed; the user's own message is, delivered.
    assert [(m["role"], m["content"], m["status"], m["source"]) for m in listed] == [
        ("user", "remember ORCHID", "delivered", "api"), ("assistant", "noted", "complete", "session")]


def test_a_failed_run_keeps_its_partial_answer_row_even_for_a_session_agent(store):
    a = agent(store)
    message, run_id = store.run_sync(store.start_stream_run, a, "hello")
    store.run_sync(store.finish_run, run_id, a, status="cancelled", answer="half an ans", tool_calls=None,
                   delivered=[message["id"]], stop_reason=None, error="gone", usage=None, release=False)
    listed = store.run_sync(store.messages, a)
    assert [(m["role"], m["status"]) for m in listed] == [("user", "pending"), ("assistant", "partial")]
    assert ServerSessionStore(store).tail(session_id_of(a), 10) == []
