"""The ``embedded`` engine: a managed llama.cpp server (real xllamacpp + SmolLM2) started on first use."""

from __future__ import annotations

import asyncio
import io
import os
import signal
import time
from typing import List

import pytest

from jarvis_core.engine.factory import create_engine
from jarvis_core.errors import ConfigError, EngineConnectionError, InvalidOptionError
from jarvis_engine_openai_compat.engines.embedded import EmbeddedEngine
from jarvis_engine_openai_compat.server.launch import smollm2_model_path

CHAT = [{"role": "system", "content": "You are a helpful assistant."},
        {"role": "user", "content": "What is the capital of France?"}]
ANSWER = "The capital of France is Paris."


@pytest.fixture(scope="module")
def runnable() -> None:
    pytest.importorskip("xllamacpp", reason="the embedded engine needs the [embedded] extra (xllamacpp)")
    try:
        smollm2_model_path()
    except ConfigError as exc:
        pytest.skip(str(exc))


@pytest.fixture
def engines():
    made: List[EmbeddedEngine] = []
    yield made
    for e in made:
        e.close()


def small(engines, **kw) -> EmbeddedEngine:
    settings = dict(ctx_per_slot=1024, threads=2, max_tokens=32)
    settings.update(kw)
    engine = EmbeddedEngine(**settings)
    engines.append(engine)
    return engine


def test_nothing_starts_until_first_use(runnable, engines):
    engine = small(engines, progress=False)
    assert engine.list_models() == ["smollm2-135m-instruct"]
    assert engine.health() is True  # it *can* start: model and xllamacpp are installed
    assert engine.server is None
    assert "not started" in repr(engine)


def test_first_use_starts_the_server_with_progress_then_answers_and_close_stops_it(runnable, engines):
    lines: List[str] = []
    engine = small(engines, progress=lines.append)
    completion = engine.generate(CHAT, temperature=0)
    assert completion.content == ANSWER
    assert completion.model == "smollm2-135m-instruct"
    assert lines[0] == "starting embedded llama.cpp server (SmolLM2-135M)…"
    assert lines[1].startswith("ready in ") and lines[1].endswith(" s")
    assert engine.health() is True

    async def streamed():
        text = "".join([t async for t in engine.stream(CHAT, temperature=0)])
        chunks = [c async for c in engine.stream_full(CHAT, temperature=0)]
        return text, chunks

    text, chunks = asyncio.run(streamed())
    assert text == ANSWER
    assert "".join(c.content or "" for c in chunks) == ANSWER and chunks[-1].finish_reason == "stop"
    assert len(lines) == 2  # started once, reused

    pid = engine.server.status().pid
    engine.close()
    assert engine.server is None
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    engine.close()  # twice is fine


def test_max_tokens_default_comes_from_the_config(runnable, engines):
    engine = small(engines, progress=False, max_tokens=3)
    completion = engine.generate([{"role": "user", "content": "Tell me a long story."}], temperature=0)
    assert completion.finish_reason == "length" and completion.usage.completion_tokens == 3


def test_progress_goes_to_stderr_by_default(runnable, engines, capsys):
    engine = small(engines)
    engine.prepare("anything")
    err = capsys.readouterr().err
    assert "starting embedded llama.cpp server (SmolLM2-135M)…" in err and "ready in" in err


def test_progress_to_an_ascii_stream_degrades_the_ellipsis(runnable, engines):
    class Ascii(io.StringIO):
        def write(self, s: str) -> int:
            s.encode("ascii")
            return super().write(s)

    out = Ascii()
    small(engines, progress=out).prepare("x")
    assert "starting embedded llama.cpp server (SmolLM2-135M)...\n" in out.getvalue()


def test_agenerate_starts_the_server_on_first_use_and_answers_as_generate(runnable, engines):
    engine = small(engines, progress=False)
    assert engine.server is None
    started = []

    async def ask():
        try:
            completion = await engine.agenerate(CHAT, temperature=0)
            started.append(engine.server.status().pid)
            return completion
        finally:
            await engine.aclose()

    completion = asyncio.run(ask())
    assert completion.content == ANSWER and completion.finish_reason == "stop"
    assert started[0] is not None


def test_a_crashed_server_is_replaced_and_the_engine_follows_it(runnable, engines):
    engine = small(engines, progress=False)
    assert engine.generate(CHAT, temperature=0).content == ANSWER
    old = engine.server.status()
    os.kill(old.pid, signal.SIGKILL)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not (engine.server.status().pid not in (None, old.pid)):
        time.sleep(0.05)
    assert engine.generate(CHAT, temperature=0).content == ANSWER
    assert engine.server.status().restart_count == 1
    assert engine.server.status().url != old.url


def test_a_request_sent_right_after_a_crash_is_answered_by_the_restarted_server(runnable, engines):
    # Sent before the supervisor noticed the crash: the request reaches no server (refused, or a pooled
    # connection reset); it is sent once more to the restarted one instead of failing.
    engine = small(engines, progress=False)
    assert engine.generate(CHAT, temperature=0).content == ANSWER
    os.kill(engine.server.status().pid, signal.SIGKILL)
    assert engine.generate(CHAT, temperature=0).content == ANSWER
    assert engine.server.status().restart_count == 1

    async def streamed() -> str:
        try:
            os.kill(engine.server.status().pid, signal.SIGKILL)
            return "".join([c.content async for c in engine.stream_full(CHAT, temperature=0) if c.content])
        finally:
            await engine.aclose()

    assert asyncio.run(streamed()) == ANSWER


def test_unknown_options_fail_before_anything_starts(runnable, engines):
    engine = small(engines, progress=False)
    with pytest.raises(InvalidOptionError, match="nonsense"):
        engine.generate(CHAT, nonsense=1)
    assert engine.server is None


def test_missing_model_is_reported_not_started(engines, tmp_path):
    engine = small(engines, progress=False, model_path=str(tmp_path / "missing.gguf"))
    assert engine.health() is False
    assert "model file not found" in engine.unavailable_reason()
    assert engine.list_models() == ["missing"]
    with pytest.raises(ConfigError, match="model file not found"):
        engine.generate(CHAT)


def test_a_missing_server_binary_fails_fast_without_starting(engines, tmp_path):
    engine = small(engines, progress=False, binary_path=str(tmp_path / "llama-server"))
    assert engine.health() is False
    with pytest.raises(EngineConnectionError, match="llama-server binary not found"):
        engine.generate(CHAT)
    assert engine.server is None


def test_bad_settings_are_config_errors_at_construction():
    with pytest.raises(ConfigError, match="slots"):
        EmbeddedEngine(slots=0)


def test_registered_as_the_embedded_engine(runnable):
    engine = create_engine("embedded", progress=False, ctx_per_slot=1024)
    try:
        assert isinstance(engine, EmbeddedEngine) and engine.server is None
    finally:
        engine.close()
