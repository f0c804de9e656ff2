"""The memory tools on a real SQLite file: exact recall by key, replacement, search with FTS5 and with the
announced LIKE fallback, query text that is not FTS5 syntax, and the default file in the jarvis home."""

from __future__ import annotations

import json
import threading

import pytest

from jarvis_agents.tools.memory import MemoryRetrieveTool, MemorySearchTool, MemoryStoreTool
from jarvis_agents.tools.memory_db import MemoryDB, MemoryWarning
from jarvis_core.tools import ToolContext, ToolExecutor, create_tool
from jarvis_core.types import ToolCall


def tools(path):
    return MemoryStoreTool(path=path), MemoryRetrieveTool(path=path), MemorySearchTool(path=path)


def test_store_retrieve_replace(tmp_path):
    store, retrieve, _ = tools(tmp_path / "m.db")
    assert store.run(content="the code word is ORCHID", key="operator:1:state") == "stored under key 'operator:1:state'"
    assert retrieve.run(key="operator:1:state") == "the code word is ORCHID"
    store.run(content="now it is TULIP", key="operator:1:state")
    assert retrieve.run(key="operator:1:state") == "now it is TULIP"
    with pytest.raises(KeyError, match="nothing is stored under key 'missing'"):
        retrieve.run(key="missing")
    with pytest.raises(ValueError, match="empty"):
        store.run(content="   ")


def test_keys_are_generated_when_not_given(tmp_path):
    store, retrieve, _ = tools(tmp_path / "m.db")
    first = store.run(content="alpha")
    second = store.run(content="beta")
    assert first == "stored under key 'mem-1'" and second == "stored under key 'mem-2'"
    assert retrieve.run(key="mem-2") == "beta"


@pytest.mark.parametrize("fts", [None, False])
def test_search_ranks_and_limits(tmp_path, fts, recwarn):
    db = MemoryDB(tmp_path / f"m-{fts}.db", fts=fts)
    assert db.search_mode == ("like" if fts is False else "fts5")
    if fts is False:
        assert any(issubclass(w.category, MemoryWarning) and "LIKE" in str(w.message) for w in recwarn.list)
    db.store("the sky is blue on a clear day", tags=["weather"])
    db.store("grass is green", key="grass")
    db.store("a blue whale is the largest animal; the sky and the sea", key="whale")
    found = db.search("blue sky", top_k=2)
    assert len(found) == 2 and {m.key for m in found} == {"mem-1", "whale"}
    assert [m.key for m in db.search("weather")] == ["mem-1"]  # tags are searched too
    assert db.search("nothing-matches-this") == [] and db.search("!!!") == []


def test_search_text_is_never_fts_syntax(tmp_path):
    _, _, search = tools(tmp_path / "m.db")
    MemoryStoreTool(path=tmp_path / "m.db").run(content='he said "NEAR" AND left (quickly)')
    for query in ['"unbalanced', "AND OR NOT", "col:value", "*", "NEAR(a b)", "a - b", "quickly)"]:
        out = search.run(query=query)
        assert out == "no memories match" or json.loads(out.splitlines()[0])["key"] == "mem-1"
    assert json.loads(search.run(query="quickly"))["content"].startswith("he said")


def test_default_file_is_in_the_jarvis_home(tmp_path, monkeypatch):
    monkeypatch.setenv("JARVIS_HOME", str(tmp_path / "home"))
    MemoryStoreTool().run(content="x", key="k")
    assert (tmp_path / "home" / "memory.db").exists()
    assert MemoryRetrieveTool(context=ToolContext(home=tmp_path / "home")).run(key="k") == "x"


def test_create_tool_puts_the_file_in_the_context_home_unless_the_config_names_one(tmp_path):
    create_tool("memory_store", home=tmp_path / "home").run(content="x", key="k")
    assert (tmp_path / "home" / "memory.db").exists()
    assert create_tool("memory_retrieve", home=tmp_path / "home").run(key="k") == "x"
    elsewhere = create_tool("memory_store", config={"path": str(tmp_path / "m.db")}, home=tmp_path / "home")
    elsewhere.run(content="y", key="k")
    assert MemoryRetrieveTool(path=tmp_path / "m.db").run(key="k") == "y"


def test_concurrent_writers_lose_nothing(tmp_path):
    path = tmp_path / "m.db"
    MemoryDB(path)

    def writer(n):
        store = MemoryStoreTool(path=path)
        for i in range(20):
            store.run(content=f"w{n} item {i}", key=f"{n}-{i}")

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    retrieve = MemoryRetrieveTool(path=path)
    assert all(retrieve.run(key=f"{n}-{i}") == f"w{n} item {i}" for n in range(4) for i in range(20))


def test_through_the_executor(tmp_path):
    executor = ToolExecutor(tools(tmp_path / "m.db"))
    stored = executor.execute(ToolCall("1", "memory_store", json.dumps({"content": "c", "key": "k", "tags": ["t"]})))
    got = executor.execute(ToolCall("2", "memory_retrieve", '{"key": "k"}'))
    missing = executor.execute(ToolCall("3", "memory_retrieve", '{"key": "nope"}'))
    bad = executor.execute(ToolCall("4", "memory_search", '{"query": "c", "top_k": 0}'))
    assert stored.ok and (got.ok, got.content) == (True, "c")
    assert not missing.ok and "nothing is stored" in missing.content
    assert not bad.ok and "top_k" in bad.content
