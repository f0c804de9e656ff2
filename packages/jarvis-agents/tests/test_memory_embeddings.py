"""Embeddings in the memory tools and in ``monitor_operative``'s semantic retrieval, through the engine's own
``embed``: on the embedded default (a REAL llama.cpp server, xllamacpp hosting SmolLM2-135M-Instruct), on a
scripted engine that has embeddings, and on one that has none (the typed error, never a quiet switch to FTS).

SmolLM2's embeddings are weak, so the real-server checks are about plumbing: vectors are stored (576 float32
each), changed content gets a new one, and an exact duplicate of the query ranks first."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from typing import Iterator

import pytest

from jarvis_agents.agents.monitor import MonitorOperativeAgent
from jarvis_agents.tools.memory_db import MemoryDB
from jarvis_core.agents import Notice
from jarvis_core.errors import ConfigError, EmbeddingsNotSupportedError, JarvisError
from jarvis_core.stores import SQLiteStore
from jarvis_core.testing import FakeEngine
from jarvis_core.tools import create_tool

NOTES = ("the printer on floor two is broken", "ORCHID is the code word for the vault",
         "lunch is served at noon in the canteen")
BASE = {"memory_extraction": "none", "observation_compression": "none", "task_decomposition": "monolithic",
        "mode": "function_calling"}


@pytest.fixture(scope="module")
def embedded() -> Iterator[object]:
    pytest.importorskip("xllamacpp", reason="the embedded engine needs the [embedded] extra (xllamacpp)")
    from jarvis_engine_openai_compat.engines.embedded import EmbeddedEngine

    engine = EmbeddedEngine(ctx_per_slot=2048, threads=2, max_tokens=16, progress=False)
    yield engine
    engine.close()


def memory_tools(engine, path, embeddings=True):
    section = {"path": str(path), "embeddings": embeddings}
    return (create_tool("memory_store", config=section, engine=engine, model=getattr(engine, "alias", "m")),
            create_tool("memory_search", config=section, engine=engine, model=getattr(engine, "alias", "m")))


def vectors(path):
    with sqlite3.connect(path) as conn:
        return conn.execute("SELECT m.key, v.model, length(v.vector) FROM memory_vectors v "
                            "JOIN memories m ON m.id = v.memory_id ORDER BY m.id").fetchall()


def keys(found: str):
    return [json.loads(line)["key"] for line in found.splitlines()]


def test_memory_tools_store_vectors_and_rank_by_similarity_on_the_embedded_engine(embedded, tmp_path):
    path = tmp_path / "memory.db"
    # One memory from before embeddings were on: memory_search embeds it before ranking.
    create_tool("memory_store", config={"path": str(path)}).run(content=NOTES[0], key="printer")
    store, search = memory_tools(embedded, path)
    store.run(content=NOTES[1], key="vault")
    store.run(content=NOTES[2], key="lunch")
    alias = embedded.alias
    assert vectors(path) == [("vault", alias, 576 * 4), ("lunch", alias, 576 * 4)]
    for note, key in zip(NOTES, ("printer", "vault", "lunch"), strict=True):
        assert keys(search.run(query=note, top_k=3))[0] == key  # an exact duplicate has cosine 1
    assert [k for k, _m, _n in vectors(path)] == ["printer", "vault", "lunch"]
    # Changed content drops the old vector and stores the new one.
    before = sqlite3.connect(path).execute("SELECT vector FROM memory_vectors WHERE memory_id = 2").fetchone()[0]
    store.run(content="the vault code word changed to TULIP", key="vault")
    after = sqlite3.connect(path).execute("SELECT vector FROM memory_vectors WHERE memory_id = 2").fetchone()[0]
    assert before != after and len(vectors(path)) == 3
    assert keys(search.run(query="the vault code word changed to TULIP", top_k=1)) == ["vault"]


def test_without_the_setting_search_stays_full_text_and_stores_no_vectors(embedded, tmp_path):
    path = tmp_path / "memory.db"
    store, search = memory_tools(embedded, path, embeddings=False)
    for note in NOTES:
        store.run(content=note)
    assert keys(search.run(query="canteen")) == ["mem-3"] and vectors(path) == []
    assert MemoryDB(path).search_mode == "fts5"


def test_memory_embeddings_on_an_engine_without_them_is_a_typed_error(tmp_path):
    with pytest.raises(JarvisError, match="engine 'fake' has no embeddings") as info:
        memory_tools(FakeEngine([]), tmp_path / "memory.db")
    assert isinstance(info.value, EmbeddingsNotSupportedError) or isinstance(info.value.__cause__,
                                                                             EmbeddingsNotSupportedError)
    # Built without an engine (a tool listing), it says so when used instead of searching by words.
    search = create_tool("memory_search", config={"path": str(tmp_path / "memory.db"), "embeddings": True})
    with pytest.raises(EmbeddingsNotSupportedError, match="without an engine"):
        search.run(query="printer")
    with pytest.raises(ConfigError, match="embeddings must be true, false or an embedding model name"):
        create_tool("memory_search", config={"path": str(tmp_path / "memory.db"), "embeddings": 3})


def seed(db, *notes):
    with SQLiteStore(db) as store:
        for n, text in enumerate(notes, start=1):
            store.state.put(f"operator:op:note:{n}", text)


def test_semantic_retrieval_uses_the_embedded_engines_embeddings_by_default(embedded, tmp_path):
    db = tmp_path / "operators.db"
    seed(db, *NOTES)
    # The monitor's own default (4,096 tokens) would let SmolLM2 ramble to the end of the slot, and the run's
    # closing request, which carries that answer, would then not fit: this test is about the recalled note.
    agent = MonitorOperativeAgent(embedded, model=embedded.alias, operator_id="op", db=db, max_turns=1,
                                  max_tokens=16, retrieval_strategy="semantic", recall_top_k=1, **BASE)
    result = agent.run(NOTES[1])
    system = result.messages[0].content
    assert "## Recalled from memory\n- [note:2] ORCHID is the code word" in system
    assert "printer" not in system and "canteen" not in system


def bag_of_words(text):
    return [float(text.lower().count(w)) for w in ("code", "word", "orchid", "printer", "broken", "flower")]


def test_semantic_retrieval_embeds_through_the_engine_with_the_embedding_model(tmp_path):
    db = tmp_path / "operators.db"
    seed(db, "the printer is broken", "ORCHID is a flower: it is the code word")
    engine = FakeEngine(["ORCHID"], embedder=bag_of_words)
    MonitorOperativeAgent(engine, model="m", operator_id="op", db=db, retrieval_strategy="semantic",
                          embedding_model="embedder-1", **BASE).run("which flower?")
    assert "[note:2] ORCHID is a flower" in engine.calls[0].messages[0].content
    assert [model for _texts, model, _opts in engine.embed_calls] == ["embedder-1"]


def test_hybrid_announces_when_the_engines_model_serves_no_embeddings(tmp_path):
    db = tmp_path / "operators.db"
    seed(db, "the code word is ORCHID")

    def none_here(text):
        raise EmbeddingsNotSupportedError(engine_id="fake", model="m")

    engine = FakeEngine(["[1]", "ORCHID"], embedder=none_here)
    agent = MonitorOperativeAgent(engine, model="m", operator_id="op", db=db,
                                  retrieval_strategy="hybrid_with_self_eval", **BASE)
    async def collect():
        return [e async for e in agent.astream("what is the code word?")]

    events = asyncio.run(collect())
    notices = [e.message for e in events if isinstance(e, Notice) and e.kind == "retrieval"]
    assert notices[0] == "semantic recall skipped, keyword only: model 'm' on engine 'fake' has no embeddings"
    assert "[note:1] the code word is ORCHID" in engine.calls[1].messages[0].content
