"""The ``operative`` agent against the real SQLite stores, with a scripted engine.

- A new agent object on the same database and operator id sees tick 1 (its instruction, its answer and the
  state) in the first request of tick 2; another operator sees nothing of it.
- An empty answer does not overwrite the state; the model's own ``memory_store(key="state")`` suppresses the
  automatic write and ``memory_retrieve`` returns that exact value.
- History trimmed by ``history_limit`` never splits a tool-call group.
- A failing store (a corrupted file, tables gone under the agent) is a StoreError, never a log line.
"""

from __future__ import annotations

import json
import sqlite3

import pytest

import jarvis_agents.plugin
from jarvis_agents.agents.operative import OperativeAgent
from jarvis_agents.tools.calculator import Calculator
from jarvis_agents.tools.memory import MemoryStoreTool
from jarvis_core.agents import create_agent
from jarvis_core.config import load_config
from jarvis_core.errors import ConfigError
from jarvis_core.events import EventType
from jarvis_core.stores import SQLiteStore, StoreError
from jarvis_core.testing import FakeEngine, RecordingBus, installed_registry
from jarvis_core.types import AgentContext, Completion, Message, Role, ToolCall


@pytest.fixture
def db(tmp_path):
    return tmp_path / "operators.db"


def agent(engine, db, operator_id="op", **kwargs):
    kwargs.setdefault("mode", "function_calling")
    return OperativeAgent(engine, model="m", operator_id=operator_id, db=db, **kwargs)


def store_call(cid, content, key=None):
    args = {"content": content, **({"key": key} if key is not None else {})}
    return ToolCall(cid, "memory_store", json.dumps(args))


def state_of(db, operator_id="op"):
    with SQLiteStore(db) as store:
        return store.state.get(f"operator:{operator_id}:state")


def test_a_new_agent_on_the_same_database_sees_tick_one_in_its_first_request(db):
    first = FakeEngine(["ok"])
    result = agent(first, db).run("remember the code word is ORCHID")
    assert result.content == "ok" and result.metadata["state_write"] == "auto"

    second = FakeEngine(["The code word is ORCHID."])
    fresh = agent(second, db)  # a new object: nothing carried over in memory
    assert fresh.run("what is the code word?").content == "The code word is ORCHID."
    sent = second.calls[0].messages
    assert [(m.role, m.content) for m in sent[1:]] == [
        (Role.USER, "remember the code word is ORCHID"), (Role.ASSISTANT, "ok"), (Role.USER, "what is the code word?")]
    assert sent[0].role is Role.SYSTEM and "## Your state\nok" in sent[0].content
    with SQLiteStore(db) as store:
        assert [m.content for m in store.sessions.tail("operator:op", 10)] == [
            "remember the code word is ORCHID", "ok", "what is the code word?", "The code word is ORCHID."]

    stranger = FakeEngine(["?"])
    agent(stranger, db, operator_id="other").run("what is the code word?")
    assert "ORCHID" not in json.dumps([m.content for m in stranger.calls[0].messages])


def test_only_the_ticks_messages_are_saved_not_the_context(db):
    engine = FakeEngine(["noted"])
    agent(engine, db).run("note it", AgentContext(messages=[Message.system("extra rules"), Message.user("earlier")]))
    assert "extra rules" in engine.calls[0].messages[0].content
    with SQLiteStore(db) as store:
        assert [m.content for m in store.sessions.tail("operator:op", 10)] == ["note it", "noted"]


def test_an_empty_answer_does_not_overwrite_the_state(db):
    agent(FakeEngine(["the code word is ORCHID"]), db).run("remember the code word is ORCHID")
    assert state_of(db) == "the code word is ORCHID"
    result = agent(FakeEngine([""]), db).run("anything new?")
    assert result.content == "" and result.metadata["state_write"] == "kept"
    assert state_of(db) == "the code word is ORCHID"
    with SQLiteStore(db) as store:  # the tick itself is still in the session
        assert store.sessions.count("operator:op") == 4


def test_the_models_own_state_write_suppresses_the_automatic_one(db):
    engine = FakeEngine([Completion(tool_calls=[store_call("c1", "code word: ORCHID", key="state")]), "Saved."])
    result = agent(engine, db).run("remember the code word is ORCHID")
    assert result.content == "Saved." and result.metadata["state_write"] == "model"
    assert state_of(db) == "code word: ORCHID"
    assert engine.calls[1].messages[-1].content.startswith("stored as your state")

    # The next tick shows that state and memory_retrieve returns it exactly, by short or full key.
    retrieve = [ToolCall("r1", "memory_retrieve", '{"key": "state"}'),
                ToolCall("r2", "memory_retrieve", '{"key": "operator:op:state"}')]
    later = FakeEngine([Completion(tool_calls=retrieve), "ORCHID"])
    agent(later, db).run("what is the code word?")
    assert "## Your state\ncode word: ORCHID" in later.calls[0].messages[0].content
    assert [m.content for m in later.calls[1].messages if m.role is Role.TOOL][-2:] == ["code word: ORCHID"] * 2
    assert state_of(db) == "ORCHID"  # that tick did not write the state itself: its answer became it


def test_the_state_write_is_recognised_in_structured_mode_too(db):
    """A model without native tool calls (one JSON-schema-constrained action per turn) writes its state."""
    action = json.dumps({"name": "memory_store", "arguments": {"key": "state", "content": "code word: ORCHID"}})
    engine = FakeEngine([action, "Saved."], allowed_options={"response_format", "stop"})
    result = agent(engine, db, mode="auto").run("remember the code word is ORCHID")
    assert result.content == "Saved." and result.metadata["state_write"] == "model"
    assert engine.calls[0].options["response_format"]["type"] == "json_schema"
    assert state_of(db) == "code word: ORCHID"
    later = FakeEngine([json.dumps({"content": "ORCHID"})], allowed_options={"response_format", "stop"})
    agent(later, db, mode="structured").run("what is the code word?")
    sent = json.dumps([m.content for m in later.calls[0].messages])
    assert "remember the code word is ORCHID" in sent and "code word: ORCHID" in sent


@pytest.mark.parametrize("call", [
    store_call("c1", "a note about ORCHID", key="notes"),  # another key
    store_call("c1", "a note without a key"),
    store_call("c1", "   ", key="state"),  # a failed write (empty content)
])
def test_other_writes_do_not_suppress_the_automatic_state(db, call):
    result = agent(FakeEngine([Completion(tool_calls=[call]), "done: ORCHID"]), db).run("remember ORCHID")
    assert result.metadata["state_write"] == "auto" and state_of(db) == "done: ORCHID"


def test_the_model_cannot_write_another_operators_keys(db):
    engine = FakeEngine([Completion(tool_calls=[store_call("c1", "hijacked", key="operator:victim:state")]), "done"])
    agent(FakeEngine(["victim state"]), db, operator_id="victim").run("hello")
    agent(engine, db, operator_id="attacker").run("overwrite the victim")
    assert state_of(db, "victim") == "victim state"
    with SQLiteStore(db) as store:
        assert store.state.get("operator:attacker:operator:victim:state") == "hijacked"


def _groups_whole(messages):
    """Every tool message answers a call of the assistant message before its run of tool messages, and every
    call of an assistant message is answered."""
    pending = set()
    for m in messages:
        if m.role is Role.TOOL:
            assert m.tool_call_id in pending, f"orphan tool result {m.tool_call_id}"
            pending.discard(m.tool_call_id)
            continue
        assert not pending, f"calls without results: {pending}"
        if m.role is Role.ASSISTANT and m.tool_calls:
            pending = {c.id for c in m.tool_calls}
    assert not pending


@pytest.mark.parametrize("limit", range(1, 10))
def test_history_trimming_never_splits_a_tool_call_group(db, limit):
    calls = [store_call("a1", "first note", key="n1"), store_call("a2", "second note", key="n2")]
    agent(FakeEngine([Completion(tool_calls=calls), Completion(tool_calls=[store_call("b1", "third", key="n3")]),
                      "stored three notes"]), db).run("store three notes")
    with SQLiteStore(db) as store:
        assert store.sessions.count("operator:op") == 7  # user, call(2), 2 results, call, result, answer
    engine = FakeEngine(["ok"])
    agent(engine, db, history_limit=limit).run("next")
    sent = engine.calls[0].messages
    _groups_whole(sent)
    history = sent[1:-1]
    assert len(history) <= limit
    if limit >= 7:
        assert len(history) == 7  # nothing dropped when everything fits
    assert sent[-1].content == "next"


def test_tool_results_are_saved_with_the_tick(db):
    engine = FakeEngine([Completion(tool_calls=[ToolCall("k1", "calculator", '{"expression": "17*23"}')]), "391"])
    agent(engine, db, tools=[Calculator()]).run("what is 17*23?")
    with SQLiteStore(db) as store:
        saved = store.sessions.tail("operator:op", 10)
    assert [m.role for m in saved] == [Role.USER, Role.ASSISTANT, Role.TOOL, Role.ASSISTANT]
    assert saved[1].tool_calls[0].name == "calculator" and saved[2].content == "391"


def test_a_corrupted_database_is_a_store_error_when_the_agent_is_built(db):
    db.write_bytes(b"definitely not sqlite " * 100)
    with pytest.raises(StoreError) as info:
        agent(FakeEngine([]), db)
    assert str(db) in str(info.value) and info.value.operation == "open"


def test_a_store_failing_during_a_tick_raises_and_the_bus_says_so(db):
    bus = RecordingBus()
    engine = FakeEngine(["fine"])
    op = agent(engine, db, bus=bus)
    conn = sqlite3.connect(db)
    conn.execute("DROP TABLE session_messages")
    conn.commit()
    conn.close()
    with pytest.raises(StoreError, match="no such table"):
        op.run("tick")
    (end,) = bus.of_type(EventType.AGENT_TURN_END)
    assert end.data["stop_reason"] == "error" and end.data["error"] == "StoreError"
    assert engine.calls == []  # loading failed: the model was never asked


def test_a_store_failing_when_saving_raises(db):
    engine = FakeEngine(["fine"])
    op = agent(engine, db)

    def break_state(call):
        conn = sqlite3.connect(db)
        conn.execute("DROP TABLE state")
        conn.commit()
        conn.close()
        return "answer"

    engine.script[:] = [break_state]
    with pytest.raises(StoreError) as info:
        op.run("tick")
    assert info.value.operation == "put"


def test_without_an_operator_id_the_default_operator_is_used_and_announced(db):
    import asyncio

    from jarvis_agents.agents.operative import DEFAULT_OPERATOR
    from jarvis_core.agents import Notice

    first = OperativeAgent(FakeEngine([], default="Noted: the code word is ORCHID."), model="m", db=db)

    async def collect():
        return [e async for e in first.astream("remember: the code word is ORCHID")]

    events = asyncio.run(collect())
    first.close()
    (notice,) = [e for e in events if isinstance(e, Notice) and e.kind == "operator"]
    assert f"remembering as operator {DEFAULT_OPERATOR!r}" in notice.message and "operator_id=" in notice.message
    second = OperativeAgent(FakeEngine([], default="ORCHID"), model="m", db=db)
    second.run("the code word?")
    second.close()
    assert "ORCHID" in " ".join(m.content or "" for m in second.engine.calls[0].messages)  # same operator's memory


def test_settings_errors_are_config_errors(db):
    with pytest.raises(ConfigError, match="operator id"):
        agent(FakeEngine([]), db, operator_id="bad id with spaces")
    with pytest.raises(ConfigError, match="memory_store"):
        agent(FakeEngine([]), db, tools=[MemoryStoreTool(path=db.parent / "m.db")])
    with SQLiteStore(db) as store, pytest.raises(ConfigError, match="both stores"):
        agent(FakeEngine([]), db, sessions=store.sessions)
    with pytest.raises(ConfigError, match="history_limit"):
        agent(FakeEngine([]), db, history_limit=-1)


def test_built_from_the_registry_with_config(db, tmp_path):
    path = tmp_path / "config.toml"
    path.write_text(f'[agents.operative]\noperator_id = "from-config"\ndb = "{db}"\nhistory_limit = 4\n'
                    'mode = "function_calling"\n', encoding="utf-8")
    with installed_registry(jarvis_agents.plugin):
        op = create_agent("operative", FakeEngine(["done"]), model="m", config=load_config(path))
    assert isinstance(op, OperativeAgent) and op.operator_id == "from-config" and op.history_limit == 4
    assert op.settings.max_turns == 20 and op.settings.temperature == 0.3
    op.run("hello")
    op.close()
    assert state_of(db, "from-config") == "done"
