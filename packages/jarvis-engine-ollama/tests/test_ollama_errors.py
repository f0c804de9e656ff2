"""Ollama's failures become typed errors that say what to do; nothing is retried behind the caller's back."""

from __future__ import annotations

import json

import attrs
import pytest

from jarvis_core.errors import (
    BadRequestError,
    EngineConnectionError,
    EngineHTTPError,
    MalformedResponseError,
    ModelNotFoundError,
    StreamError,
    ToolsNotSupportedError,
)
from jarvis_core.testing import Exchange, ReplayServer, closed_port_url, exchanges_from_transcripts
from jarvis_core.types import ToolSpec
from jarvis_engine_ollama.engine import OllamaEngine

WEATHER = ToolSpec("get_weather", "Weather", {"type": "object", "properties": {"city": {"type": "string"}}})
USER = [{"role": "user", "content": "weather?"}]


async def test_tools_400_is_raised_not_retried_without_tools(ollama_transcripts):
    t = ollama_transcripts["error_tools_not_supported"]
    exchanges = [*exchanges_from_transcripts([t]), Exchange("POST", "/api/chat", json={"never": "used"})]
    with ReplayServer(exchanges) as server:
        engine = OllamaEngine(host=server.url)
        try:
            with pytest.raises(ToolsNotSupportedError) as info:
                engine.generate(USER, model="gemma2:2b", tools=[WEATHER])
            with pytest.raises(ToolsNotSupportedError):
                async for _ in engine.stream_full(USER, model="gemma2:2b", tools=[WEATHER]):
                    pass
        finally:
            await engine.aclose()
        bodies = [r.json for r in server.requests]
    assert len(bodies) == 2 and all("tools" in b for b in bodies), "no request without tools may follow"
    message = str(info.value)
    assert "not retried without tools" in message and "ollama show gemma2:2b" in message
    assert info.value.status_code == 400


def test_thinking_400_is_a_bad_request_with_advice(ollama_transcripts):
    with ReplayServer(exchanges_from_transcripts([ollama_transcripts["error_thinking_not_supported"]])) as server:
        with OllamaEngine(host=server.url) as engine, pytest.raises(BadRequestError) as info:
            engine.generate([{"role": "user", "content": "hi"}], model="llama3.2", think=True)
    assert not isinstance(info.value, ToolsNotSupportedError)
    assert "think" in str(info.value) and "'thinking'" in str(info.value)


@pytest.mark.parametrize("tid", ["error_model_not_found", "x_error_model_not_found_pull_wording"])
def test_missing_model_says_ollama_pull(tid, ollama_transcripts):
    with ReplayServer(exchanges_from_transcripts([ollama_transcripts[tid]])) as server:
        with OllamaEngine(host=server.url) as engine:
            with pytest.raises(ModelNotFoundError, match="ollama pull llama9"):
                engine.generate([{"role": "user", "content": "hi"}], model="llama9")
            with pytest.raises(ModelNotFoundError, match="ollama pull llama9"):
                engine.prepare("llama9")


def test_missing_endpoint_is_not_mistaken_for_a_missing_model():
    with ReplayServer([Exchange("GET", "/api/ps", status=404, raw="404 page not found")]) as server:
        with OllamaEngine(host=server.url) as engine, pytest.raises(EngineHTTPError) as info:
            engine.running_models()
    assert not isinstance(info.value, ModelNotFoundError)
    assert "/api/ps" in str(info.value)


async def test_error_line_mid_stream_keeps_the_delivered_text(ollama_transcripts):
    with ReplayServer(exchanges_from_transcripts([ollama_transcripts["error_mid_stream"]])) as server:
        engine = OllamaEngine(host=server.url)
        text = []
        try:
            with pytest.raises(StreamError, match="an error was encountered while running the model"):
                async for chunk in engine.stream_full([{"role": "user", "content": "Is the sky blue?"}], model="llama3.2"):
                    text.append(chunk.content or "")
        finally:
            await engine.aclose()
    assert "".join(text) == " Yes."


async def test_malformed_line_is_a_stream_error():
    lines = ['{"model":"m","message":{"role":"assistant","content":"a"},"done":false}', '{"model":"m","mess']
    with ReplayServer([Exchange("POST", "/api/chat", ndjson=lines)]) as server:
        engine = OllamaEngine(host=server.url)
        try:
            with pytest.raises(StreamError, match="malformed"):
                async for _ in engine.stream_full(USER, model="m"):
                    pass
        finally:
            await engine.aclose()


async def test_connection_cut_mid_stream_is_a_stream_error(ollama_transcripts):
    ex = attrs.evolve(exchanges_from_transcripts([ollama_transcripts["chat_stream"]])[0], break_after=2)
    with ReplayServer([ex]) as server:
        engine = OllamaEngine(host=server.url)
        try:
            with pytest.raises(StreamError):
                async for _ in engine.stream_full([{"role": "user", "content": "why is the sky blue?"}], model="llama3.2"):
                    pass
        finally:
            await engine.aclose()


async def test_refused_connection_and_timeouts_are_connection_errors():
    engine = OllamaEngine(host=closed_port_url())
    try:
        with pytest.raises(EngineConnectionError, match="OLLAMA_HOST"):
            engine.generate(USER, model="m")
        with pytest.raises(EngineConnectionError):
            async for _ in engine.stream_full(USER, model="m"):
                pass
        for call in (engine.list_models, lambda: engine.show("m"), engine.running_models, lambda: engine.prepare("m")):
            with pytest.raises(EngineConnectionError):
                call()
        assert engine.health() is False
    finally:
        await engine.aclose()
    with ReplayServer([Exchange("*", None, hang=True)]) as server:
        engine = OllamaEngine(host=server.url, timeout=0.2, health_timeout=0.2)
        try:
            with pytest.raises(EngineConnectionError, match="timed out"):
                engine.generate(USER, model="m")
            with pytest.raises(EngineConnectionError, match="timed out"):
                async for _ in engine.stream_full(USER, model="m"):
                    pass
            assert engine.health() is False
        finally:
            await engine.aclose()


def test_error_in_a_200_body_is_raised():
    with ReplayServer([Exchange("POST", "/api/chat", json={"error": "unexpected EOF"})]) as server:
        with OllamaEngine(host=server.url) as engine, pytest.raises(StreamError, match="unexpected EOF"):
            engine.generate(USER, model="m")


def test_non_object_answer_is_a_malformed_response():
    with ReplayServer([Exchange("POST", "/api/chat", json=[1, 2])]) as server:
        with OllamaEngine(host=server.url) as engine, pytest.raises(MalformedResponseError, match="not a JSON object") as info:
            engine.generate(USER, model="m")
    assert info.value.excerpt == "[1, 2]"


def test_errors_never_show_the_api_key():
    secret = "sk-ollama-proxy-SECRET"
    with ReplayServer([Exchange("POST", "/api/chat", status=500, json={"error": "boom"})]) as server:
        engine = OllamaEngine(host=server.url, api_key=secret)
        with engine, pytest.raises(EngineHTTPError) as info:
            engine.generate(USER, model="m")
        assert server.requests[0].headers.get("authorization") == f"Bearer {secret}"
    assert secret not in str(info.value) and secret not in repr(info.value) and secret not in repr(engine)
    assert json.dumps(info.value.body).find(secret) < 0
