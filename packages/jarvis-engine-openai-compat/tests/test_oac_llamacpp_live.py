"""The llama.cpp engine against the REAL llama.cpp server (xllamacpp hosting SmolLM2-135M-Instruct).

Every test that could block has a guard (``asyncio.wait_for`` / a subprocess timeout) that fails it instead.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import threading

import pytest

from jarvis_core.errors import EngineConnectionError, EngineError
from jarvis_core.testing import closed_port_url
from jarvis_engine_openai_compat.engines import LlamaCppEngine

pytestmark = pytest.mark.llamacpp
GUARD = 60.0  # seconds before a stuck test fails
TOOL = {"type": "function", "function": {"name": "get_weather", "description": "Get the weather of a city",
                                         "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                                                        "required": ["city"]}}}


async def _text(engine, messages, **kw):
    return "".join([t async for t in engine.stream(messages, **kw)])


def test_generate_answers_paris(llama_server, chat):
    with LlamaCppEngine(host=llama_server.url) as engine:
        c = engine.generate(chat, model="smollm2", temperature=0, max_tokens=48)
    assert "Paris" in c.content
    assert c.finish_reason == "stop" and c.usage.completion_tokens > 0 and c.usage.prompt_tokens > 0
    assert c.model == "smollm2" and c.metadata["timings"]["predicted_n"] == c.usage.completion_tokens


async def test_stream_yields_the_same_text_as_generate(llama_server, chat):
    engine = LlamaCppEngine(host=llama_server.url)
    whole = engine.generate(chat, model="smollm2", temperature=0, max_tokens=48).content
    streamed = await asyncio.wait_for(_text(engine, chat, model="smollm2", temperature=0, max_tokens=48), GUARD)
    chunks = await asyncio.wait_for(
        _collect(engine.stream_full(chat, model="smollm2", temperature=0, max_tokens=48)), GUARD)
    await engine.aclose()
    engine.close()
    assert streamed == whole == "".join(c.content or "" for c in chunks)
    final = chunks[-1]
    assert final.finish_reason == "stop" and final.usage.completion_tokens > 0 and "timings" in final.metadata


async def _collect(agen):
    return [c async for c in agen]


async def test_two_concurrent_requests_both_complete(llama_server, chat):
    engine = LlamaCppEngine(host=llama_server.url)
    other = [chat[0], {"role": "user", "content": "Name a color."}]
    a, b = await asyncio.wait_for(asyncio.gather(
        _collect(engine.stream_full(chat, model="smollm2", temperature=0, max_tokens=32)),
        _collect(engine.stream_full(other, model="smollm2", temperature=0, max_tokens=32)),
    ), GUARD)
    await engine.aclose()
    assert a[-1].finish_reason in ("stop", "length") and b[-1].finish_reason in ("stop", "length")
    assert "Paris" in "".join(c.content or "" for c in a) and "".join(c.content or "" for c in b)


def test_two_concurrent_generate_calls_from_threads(llama_server, chat):
    engine = LlamaCppEngine(host=llama_server.url)
    results, errors = [], []

    def run():
        try:
            results.append(engine.generate(chat, model="smollm2", temperature=0, max_tokens=32))
        except Exception as exc:  # surfaced by the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(GUARD)
    engine.close()
    # Both answers complete; their text is not compared: llama.cpp batches the two slots, and a batched
    # decode at temperature 0 need not pick the same tokens as a lone one.
    assert not errors and len(results) == 2
    for r in results:
        assert r.content.strip() and r.finish_reason in ("stop", "length") and r.usage.completion_tokens > 0


def test_json_schema_constrained_call_parses(llama_server):
    messages = [{"role": "system", "content": "You are a helpful assistant."},
                {"role": "user", "content": "What is the weather in Paris?"}]
    with LlamaCppEngine(host=llama_server.url) as engine:  # tool_mode auto: SmolLM2's template has no tools
        forced = engine.generate(messages, model="smollm2", temperature=0, max_tokens=64, tools=[TOOL],
                                 tool_choice="required")
        explicit = LlamaCppEngine(host=llama_server.url, tool_mode="json_schema").generate(
            messages, model="smollm2", temperature=0, max_tokens=64, tools=[TOOL], tool_choice="required")
    for c in (forced, explicit):
        (call,) = c.tool_calls
        assert call.name == "get_weather" and isinstance(json.loads(call.arguments)["city"], str)
        assert c.finish_reason == "tool_calls" and c.metadata["tool_mode"] == "json_schema"


async def test_json_schema_constrained_call_streamed(llama_server):
    messages = [{"role": "user", "content": "What is the weather in Paris? Use the get_weather tool."}]
    engine = LlamaCppEngine(host=llama_server.url)
    chunks = await asyncio.wait_for(_collect(engine.stream_full(
        messages, model="smollm2", temperature=0, max_tokens=64, tools=[TOOL], tool_choice="required")), GUARD)
    await engine.aclose()
    (call,) = chunks[-1].tool_calls
    assert call.name == "get_weather" and json.loads(call.arguments)["city"]


def test_list_models_and_health(llama_server):
    with LlamaCppEngine(host=llama_server.url + "/v1") as engine:
        assert engine.list_models() == ["smollm2"]
        assert engine.health() is True
        engine.prepare("smollm2")


def test_health_false_once_stopped(short_server):
    engine = LlamaCppEngine(host=short_server.url)
    assert engine.health() is True
    assert short_server.stop(grace=10) == 0  # SIGTERM: a clean exit
    assert engine.health() is False
    with pytest.raises(EngineConnectionError):
        engine.list_models()
    engine.close()


def test_connection_refused_is_a_connection_error(chat):
    engine = LlamaCppEngine(host=closed_port_url())
    with pytest.raises(EngineConnectionError, match="cannot reach"):
        engine.generate(chat, model="smollm2")
    with pytest.raises(EngineConnectionError):
        asyncio.run(_collect(engine.stream_full(chat, model="smollm2")))
    assert engine.health() is False


LONG = [{"role": "system", "content": "You are a helpful assistant."},
        {"role": "user", "content": "Write a very long story about a dragon and a knight."}]


async def test_server_killed_mid_stream_raises_promptly(short_server):
    engine = LlamaCppEngine(host=short_server.url)
    seen = []

    async def consume():
        async for chunk in engine.stream_full(LONG, model="smollm2", temperature=0.7, max_tokens=2000):
            seen.append(chunk)
            if len(seen) == 3:
                short_server.kill()  # SIGKILL mid-answer

    with pytest.raises(EngineError) as info:
        await asyncio.wait_for(consume(), GUARD)
    await engine.aclose()
    assert len(seen) >= 3 and not any(c.finish_reason for c in seen)
    assert "llamacpp" in str(info.value)


async def test_frozen_server_times_out_instead_of_hanging(short_server):
    engine = LlamaCppEngine(host=short_server.url, timeout=2.0)
    seen = []

    async def consume():
        async for chunk in engine.stream_full(LONG, model="smollm2", temperature=0.7, max_tokens=2000):
            seen.append(chunk)
            if len(seen) == 2:
                os.kill(short_server.pid, signal.SIGSTOP)  # alive but silent

    try:
        with pytest.raises(EngineError, match="timed out"):
            await asyncio.wait_for(consume(), GUARD)
    finally:
        os.kill(short_server.pid, signal.SIGCONT)
        await engine.aclose()


def test_jarvis_ask_end_to_end(llama_server, tmp_path):
    """``jarvis ask --engine llamacpp --host URL`` in a subprocess (the CLI is helper D's)."""
    jarvis = shutil.which("jarvis", path=os.path.dirname(sys.executable)) or shutil.which("jarvis")
    if jarvis is None:
        pytest.fail("the jarvis console script is not installed")
    env = dict(os.environ, JARVIS_HOME=str(tmp_path), NO_COLOR="1")
    env.pop("JARVIS_CONFIG", None)
    proc = subprocess.run(
        [jarvis, "ask", "--engine", "llamacpp", "--host", llama_server.url, "--temperature", "0",
         "What is the capital of France?"],
        capture_output=True, text=True, timeout=120, env=env,
    )
    assert proc.returncode == 0, proc.stderr
    assert "Paris" in proc.stdout
