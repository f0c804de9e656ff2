"""Operative agents as managed agents: created through the HTTP API, they keep their session and state in the
server's own database (``agents.db``), under their managed-agent id, so a restarted server (a new app on the
same file) continues where the last tick ended. Real uvicorn servers on loopback, real SQLite, jarvis-agents'
real ``operative``/``monitor_operative`` classes, a scripted engine."""

from __future__ import annotations

import json
import sqlite3

import httpx
import pytest

from jarvis_core import errors as E
from jarvis_core.config import jarvis_home
from jarvis_core.testing import FakeEngine
from jarvis_core.types import Completion, Message, Role, ToolCall

pytest.importorskip("jarvis_agents.agents.operative", reason="the operative agents come with jarvis-agents")

A = "/v1/managed-agents"
REMEMBER = "remember the code word is ORCHID"


def new_agent(server, agent_type="operative", **config):
    config.setdefault("mode", "function_calling")  # the scripted engine answers with native tool calls
    r = httpx.post(server.url + A, json={"name": "ops", "agent_type": agent_type, "config": config})
    assert r.status_code == 201, r.text
    return r.json()["id"]


def stream(managed, server, agent_id, content):
    with httpx.stream("POST", f"{server.url}{A}/{agent_id}/messages", json={"content": content, "stream": True},
                      timeout=30) as r:
        assert r.status_code == 200, r.read()
        return managed.kit.sse_events(r.iter_lines())


def queue_and_run(managed, server, agent_id, content):
    """``stream: false`` then ``POST /run``; the finished run."""
    assert httpx.post(f"{server.url}{A}/{agent_id}/messages", json={"content": content}).status_code == 202
    return start_run(managed, server, agent_id)


def start_run(managed, server, agent_id):
    """``POST /run`` (202); the finished run."""
    r = httpx.post(f"{server.url}{A}/{agent_id}/run")
    assert r.status_code == 202, r.text
    return managed.kit.wait_run(server, agent_id, r.json()["run_id"])


def listed(server, agent_id):
    r = httpx.get(f"{server.url}{A}/{agent_id}/messages")
    assert r.status_code == 200, r.text
    return r.json()["messages"]


def rows(db, sql, *params):
    with sqlite3.connect(db) as conn:
        return conn.execute(sql, params).fetchall()


def restart(managed, server, service, engine, db):
    """Stop ``server`` and close its store, then serve a new app over ``db``."""
    server.stop()
    service.close()
    return managed(engine, db=db)


def test_an_operative_remembers_across_a_server_restart_in_the_servers_database(managed, tmp_path, monkeypatch):
    monkeypatch.setenv("JARVIS_HOME", str(tmp_path / "home"))
    db = tmp_path / "agents.db"
    first = FakeEngine(["Noted: the code word is ORCHID."])
    server, service = managed(first, db=db)
    agent_id = new_agent(server)
    events = stream(managed, server, agent_id, REMEMBER)
    assert events[-1] == ("message", "[DONE]") and not [e for e in events if e[0] == "error"]

    server, service = restart(managed, server, service, FakeEngine(["The code word is ORCHID."]), db)
    second = service.engine
    run = queue_and_run(managed, server, agent_id, "what is the code word?")
    assert run["status"] == "succeeded", run

    # Tick 2's first request carries tick 1: the state in the system message, then the stored conversation.
    sent = second.calls[0].messages
    assert sent[0].role is Role.SYSTEM and "Noted: the code word is ORCHID." in sent[0].content
    assert sent[1:] == [Message.user(REMEMBER), Message.assistant("Noted: the code word is ORCHID."),
                        Message.user("what is the code word?")]
    # Both ticks and the state are rows of agents.db, under the managed agent's id.
    state = rows(db, "SELECT value FROM state WHERE agent_id = ? AND key = 'state'", agent_id)
    assert [json.loads(v) for (v,) in state] == ["The code word is ORCHID."]
    session = rows(db, "SELECT role, content FROM messages WHERE agent_id = ? AND source = 'session' ORDER BY seq",
                   agent_id)
    assert session == [("user", REMEMBER), ("assistant", "Noted: the code word is ORCHID."),
                       ("user", "what is the code word?"), ("assistant", "The code word is ORCHID.")]
    # The listing: the user's messages once each, every answer once (no second answer row from the run).
    shown = [(m["role"], m["content"], m["status"], m["source"]) for m in listed(server, agent_id)]
    assert shown == [("user", REMEMBER, "delivered", "api"),
                     ("assistant", "Noted: the code word is ORCHID.", "complete", "session"),
                     ("user", "what is the code word?", "delivered", "api"),
                     ("assistant", "The code word is ORCHID.", "complete", "session")]
    assert not (jarvis_home() / "operators.db").exists()  # nothing went to the operative's own default file


def test_a_tick_with_a_tool_call_replays_exactly_after_a_restart(managed, tmp_path):
    db = tmp_path / "agents.db"
    store_call = ToolCall("s1", "memory_store", json.dumps({"content": "code word: ORCHID", "key": "state"}))
    add = ToolCall("a1", "add", '{"a": 2, "b": 3}')
    first = FakeEngine([Completion(tool_calls=[store_call, add]), "Saved, and 2+3 is 5."])
    server, service = managed(first, db=db)
    agent_id = new_agent(server, tools=["add"])
    events = stream(managed, server, agent_id, REMEMBER)
    names = [name for name, _ in events]
    assert names.count("tool_calls") == 1 and names.count("tool_result") == 2
    tick_one = first.calls[1].messages[1:]  # the instruction, the call, both results (after the system message)
    state = "SELECT value FROM state WHERE agent_id = ? AND key = 'state'"
    assert rows(db, state, agent_id) == [('"code word: ORCHID"',)]  # the model's own write, not its answer

    server, service = restart(managed, server, service, FakeEngine(["ORCHID"]), db)
    stream(managed, server, agent_id, "the code word?")
    sent = service.engine.calls[0].messages
    assert "code word: ORCHID" in sent[0].content  # the model's own state write
    assert sent[1:-1] == [*tick_one, Message.assistant("Saved, and 2+3 is 5.")]  # equal: ids, names and all
    assert sent[-1] == Message.user("the code word?")
    call, result = sent[2], sent[3]
    assert call.tool_calls == (store_call, add) and call.content is None
    assert (result.role, result.tool_call_id, result.name) == (Role.TOOL, "s1", "memory_store")

    assert rows(db, state, agent_id) == [('"ORCHID"',)]  # tick 2 wrote nothing itself: its answer is kept
    shown = listed(server, agent_id)
    assert [m["role"] for m in shown] == ["user", "assistant", "tool", "tool", "assistant", "user", "assistant"]
    assert shown[1]["tool_calls"] == [{"id": "s1", "name": "memory_store", "arguments": store_call.arguments},
                                      {"id": "a1", "name": "add", "arguments": '{"a": 2, "b": 3}'}]
    assert (shown[3]["tool_call_id"], shown[3]["name"], shown[3]["content"]) == ("a1", "add", "5")


def test_a_failed_tick_appends_nothing_and_its_message_is_delivered_by_the_next_run(managed, tmp_path):
    db = tmp_path / "agents.db"
    server, _ = managed(FakeEngine([E.ServerError("upstream 500", status_code=500), "Noted."]), db=db)
    agent_id = new_agent(server)
    assert queue_and_run(managed, server, agent_id, REMEMBER)["status"] == "failed"
    assert rows(db, "SELECT COUNT(*) FROM messages WHERE source = 'session'") == [(0,)]
    assert rows(db, "SELECT COUNT(*) FROM state") == [(0,)]
    assert start_run(managed, server, agent_id)["status"] == "succeeded"
    assert [(m["role"], m["content"], m["status"]) for m in listed(server, agent_id)] == [
        ("user", REMEMBER, "delivered"), ("assistant", "Noted.", "complete")]


def test_a_monitor_operative_keeps_its_rows_in_the_servers_database(managed, tmp_path):
    db = tmp_path / "agents.db"
    add = ToolCall("a1", "add", '{"a": 40, "b": 2}')
    server, _ = managed(FakeEngine([Completion(tool_calls=[add]), "The answer is 42."]), db=db)
    agent_id = new_agent(server, "monitor_operative", tools=["add"], memory_extraction="scratchpad",
                         extraction_min_chars=1, observation_compression="truncate", retrieval_strategy="keyword",
                         task_decomposition="monolithic")  # the cheap axes: no extra model calls to script
    stream(managed, server, agent_id, "add 40 and 2")
    keys = [k for (k,) in rows(db, "SELECT key FROM state WHERE agent_id = ? ORDER BY seq", agent_id)]
    assert any(k.startswith("scratchpad:") for k in keys) and keys[-1] == "state", keys
    assert rows(db, "SELECT COUNT(*) FROM messages WHERE agent_id = ? AND source = 'session'", agent_id) == [(4,)]


@pytest.mark.parametrize("key", ["operator_id", "db", "sessions", "state"])
def test_options_the_server_sets_are_refused_in_the_config(managed, key):
    server, _ = managed(FakeEngine([]))
    r = httpx.post(server.url + A, json={"name": "ops", "agent_type": "operative", "config": {key: "x"}})
    assert r.status_code == 400, r.text
    assert r.json()["error"]["param"] == f"config.{key}" and "set by the server" in r.json()["error"]["message"]
    assert httpx.get(server.url + A).json()["agents"] == []
