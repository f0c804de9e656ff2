"""The conversation log's store: records written and read back, conversations, full-text search, masking,
the file's mode, reading without creating, and schema migrations from an older file."""

from __future__ import annotations

import os
import sqlite3
import stat

import pytest

from jarvis_core.convlog import ConversationLog, default_log_path, log_path, logging_enabled
from jarvis_core.convlog.schema import LATEST, migrate, version_of
from jarvis_core.engine.redaction import MASK, Secret
from jarvis_core.errors import UsageError

KEY = "sk-live-0123456789abcdef"


def test_record_and_read_back_with_every_field(tmp_path):
    with ConversationLog(tmp_path / "logs.db") as log:
        first = log.record(
            prompt="what is 2+2?", response="4", system="be brief", reasoning="adding", model="m", engine="e",
            agent="simple", usage={"prompt_tokens": 5, "completion_tokens": 1, "total_tokens": 6}, duration_s=0.5,
            tool_calls=[{"id": "c1", "name": "calculator", "arguments": '{"expression": "2+2"}'}],
            tool_results=[{"tool_call_id": "c1", "name": "calculator", "ok": True, "content": "4"}],
        )
        second = log.record(prompt="and 3+3?", response="6", conversation_id=first.conversation_id)
        other = log.record(prompt="hello", response="hi")
        assert [r.id for r in log.responses()] == [other.id, second.id, first.id]
        assert [r.prompt for r in log.conversation(first.conversation_id)] == ["what is 2+2?", "and 3+3?"]
        assert log.latest_conversation_id() == other.conversation_id != first.conversation_id
        got = log.get(first.id)
    assert got == first
    assert got.usage == {"prompt_tokens": 5, "completion_tokens": 1, "total_tokens": 6}
    assert got.tool_calls[0]["name"] == "calculator" and got.tool_results[0]["content"] == "4"
    assert (got.system, got.reasoning, got.model, got.engine, got.agent) == ("be brief", "adding", "m", "e", "simple")
    assert second.usage is None and second.tool_calls == ()
    assert got.to_dict()["when"].endswith("Z")
    assert got.exchange() == [{"role": "user", "content": "what is 2+2?"}, {"role": "assistant", "content": "4"}]


def test_full_text_search_matches_every_word_and_takes_any_text(tmp_path):
    with ConversationLog(tmp_path / "logs.db") as log:
        log.record(prompt="capital of France?", response="Paris is the capital.")
        log.record(prompt="capital of Italy?", response="Rome.")
        log.record(prompt='c++ "templates" (beta) AND OR NOT', response="ok")
        assert [r.response for r in log.responses(query="paris")] == ["Paris is the capital."]
        assert {r.response for r in log.responses(query="capital")} == {"Paris is the capital.", "Rome."}
        assert [r.response for r in log.responses(query="capital rome")] == ["Rome."]
        # FTS5 syntax in the user's words is searched for, never parsed
        assert [r.response for r in log.responses(query='(beta) "templates" NOT')] == ["ok"]
        with pytest.raises(UsageError):
            log.responses(query="   ")


def test_conversation_id_prefix_must_be_unique(tmp_path):
    with ConversationLog(tmp_path / "logs.db") as log:
        a = log.record(prompt="a", response="1", conversation_id="abc111")
        log.record(prompt="b", response="2", conversation_id="abc222")
        assert log.conversation_id("abc1") == "abc111"
        assert [r.id for r in log.responses(conversation_id="abc1")] == [a.id]
        with pytest.raises(UsageError, match="more than one"):
            log.conversation_id("abc")
        with pytest.raises(UsageError, match="no logged conversation"):
            log.conversation_id("zzz")
        with pytest.raises(UsageError, match="no logged answer has id 99"):
            log.get(99)


def test_secrets_are_masked_in_every_text(tmp_path):
    with ConversationLog(tmp_path / "logs.db") as log:
        stored = log.record(
            prompt=f"my key is {KEY}", response=f"echo {KEY}", system=KEY, reasoning=KEY,
            tool_calls=[{"id": "c", "name": "t", "arguments": f'{{"k": "{KEY}"}}'}],
            tool_results=[{"tool_call_id": "c", "name": "t", "ok": True, "content": KEY}],
            secrets=[Secret(KEY)],
        )
    assert KEY not in repr(stored.to_dict())
    assert stored.prompt == f"my key is {MASK}" and stored.tool_results[0]["content"] == MASK
    assert KEY.encode() not in (tmp_path / "logs.db").read_bytes()


def test_the_file_is_private_and_reading_creates_nothing(tmp_path):
    path = tmp_path / "home" / "logs.db"
    log = ConversationLog(path)
    assert log.responses() == [] and log.latest_conversation_id() is None
    assert not path.exists()
    log.record(prompt="q", response="a")
    log.close()
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600


def test_an_old_log_is_migrated_when_opened(tmp_path):
    """A version-1 file (tables, no full-text index) written by an older jarvis: opening it migrates it in
    place, keeps its rows, and the old rows are found by a search."""
    path = tmp_path / "logs.db"
    conn = sqlite3.connect(path)
    assert migrate(conn, target=1) == 1
    conn.execute("INSERT INTO conversations(id, created) VALUES ('old', 1.0)")
    conn.execute("INSERT INTO responses(conversation_id, created, prompt, response, model) "
                 "VALUES ('old', 1.0, 'the old question about zebras', 'stripes', 'm0')")
    conn.commit()
    assert {r[0] for r in conn.execute("SELECT name FROM sqlite_master")} >= {"responses", "conversations"}
    assert "responses_fts" not in {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
    conn.close()

    with ConversationLog(path) as log:
        (hit,) = log.responses(query="zebras")
        assert (hit.conversation_id, hit.response, hit.model) == ("old", "stripes", "m0")
        log.record(prompt="new zebras", response="more", conversation_id="old")
        assert len(log.responses(query="zebras")) == 2
    conn = sqlite3.connect(path)
    assert version_of(conn) == LATEST == 2
    conn.close()


def test_a_newer_log_is_read_as_it_is(tmp_path):
    path = tmp_path / "logs.db"
    with ConversationLog(path) as log:
        log.record(prompt="q", response="a")
    conn = sqlite3.connect(path)
    conn.execute("ALTER TABLE responses ADD COLUMN future TEXT")
    conn.execute(f"PRAGMA user_version = {LATEST + 1}")
    conn.commit()
    conn.close()
    with ConversationLog(path) as log:
        assert [r.response for r in log.responses(query="q")] == ["a"]


def test_where_and_whether(tmp_path, monkeypatch):
    from jarvis_core.config import load_config

    monkeypatch.setenv("JARVIS_HOME", str(tmp_path))
    monkeypatch.delenv("JARVIS_NO_LOG", raising=False)
    monkeypatch.delenv("JARVIS_CONFIG", raising=False)
    assert default_log_path() == tmp_path / "logs.db"
    config = load_config()
    assert log_path(config) == tmp_path / "logs.db" and logging_enabled(config)
    assert not logging_enabled(config, no_log=True)
    assert not logging_enabled(config, environ={"JARVIS_NO_LOG": "1"})
    (tmp_path / "config.toml").write_text(f'[log]\nenabled = false\npath = "{tmp_path / "other.db"}"\n')
    config = load_config()
    assert not logging_enabled(config) and log_path(config) == tmp_path / "other.db"
