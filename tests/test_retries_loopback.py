"""Retries and fallbacks (``[retry]``, jarvis_core.retry.RetryingEngine) against loopback servers that fail on
purpose, through the real engines and the real ``jarvis ask``: a 429 with ``Retry-After`` then a 200 is one
announced retry and the answer; a stream that broke after its first piece is not retried; a 400 is never
retried; the attempts are capped; a failed request falls back to the next configured engine, announced."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from jarvis_core import Jarvis
from jarvis_core.config import load_config
from jarvis_core.errors import EngineError
from jarvis_core.events import EventBus, EventType
from jarvis_core.testing import Exchange, ReplayServer

CHAT = "/v1/chat/completions"


def sse(*pieces: str) -> list:
    chunks = [{"id": "c", "object": "chat.completion.chunk", "model": "m",
               "choices": [{"index": 0, "delta": {"content": p}, "finish_reason": None}]} for p in pieces]
    chunks.append({"id": "c", "object": "chat.completion.chunk", "model": "m",
                   "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
                   "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}})
    return [f"data: {json.dumps(c)}" for c in chunks] + ["data: [DONE]"]


def busy(status: int = 429, retry_after: str = "1", times: int = 1) -> Exchange:
    headers = {"retry-after": retry_after} if retry_after else {}
    return Exchange("POST", CHAT, status=status, headers=headers, times=times,
                    json={"error": {"message": "slow down", "type": "rate_limit"}})


def env_for(home, **extra: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("JARVIS_") and not k.endswith("_HOST")}
    env.update({"JARVIS_HOME": str(home), "JARVIS_NO_LOG": "1", **extra})
    return env


def test_a_429_with_retry_after_then_200_is_one_announced_retry_and_the_answer(tmp_path):
    with ReplayServer([busy(retry_after="1"), Exchange("POST", CHAT, sse=sse("Par", "is"))]) as server:
        started = time.monotonic()
        proc = subprocess.run(
            [sys.executable, "-m", "jarvis_core.cli.main", "ask", "-v", "--engine", "vllm", "--host", server.url,
             "--model", "m", "capital of France?"],
            capture_output=True, text=True, env=env_for(tmp_path), timeout=120)
        waited = time.monotonic() - started
        assert len(server.requests) == 2
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "Paris\n"
    retries = [line for line in proc.stderr.splitlines() if "retry" in line]
    assert retries == ["jarvis: vllm: RateLimitError (HTTP 429) for model m; retry 1 of 2 in 1.00s"], proc.stderr
    assert waited >= 1.0  # Retry-After was honoured


def test_the_sdk_publishes_each_retry_and_gets_the_answer(tmp_path):
    bus, events = EventBus(), []
    bus.subscribe(events.append, EventType.REQUEST_RETRY)
    config = tmp_path / "config.toml"
    config.write_text("[retry]\nbase_delay = 0.01\n")
    with ReplayServer([busy(status=503, retry_after="", times=2),
                       Exchange("POST", CHAT, json={"id": "c", "object": "chat.completion", "model": "m",
                                                    "choices": [{"index": 0, "finish_reason": "stop",
                                                                 "message": {"role": "assistant", "content": "ok"}}]})
                       ]) as server:
        with Jarvis(load_config(config), engine="vllm", host=server.url, model="m", bus=bus) as j:
            assert j.ask("q") == "ok"
        assert len(server.requests) == 3
    assert [(e.data["attempt"], e.data["status"], e.data["error"]) for e in events] == [
        (1, 503, "ServerError"), (2, 503, "ServerError")]


def test_attempts_are_capped_and_a_400_is_never_retried(tmp_path):
    config = tmp_path / "config.toml"
    config.write_text("[retry]\nattempts = 2\nbase_delay = 0.01\n")
    with ReplayServer([busy(status=502, retry_after="", times=10)]) as server:
        with Jarvis(load_config(config), engine="vllm", host=server.url, model="m") as j:
            with pytest.raises(Exception, match="502"):
                j.ask("q")
        assert len(server.requests) == 2
    with ReplayServer([Exchange("POST", CHAT, status=400, json={"error": {"message": "bad"}})]) as server:
        with Jarvis(load_config(config), engine="vllm", host=server.url, model="m") as j:
            with pytest.raises(Exception, match="bad"):
                j.ask("q")
        assert len(server.requests) == 1


def test_a_long_retry_after_is_not_waited_for(tmp_path):
    config = tmp_path / "config.toml"
    config.write_text("[retry]\nmax_retry_after = 5.0\n")
    with ReplayServer([busy(retry_after="3600", times=5)]) as server:
        with Jarvis(load_config(config), engine="vllm", host=server.url, model="m") as j:
            with pytest.raises(Exception, match=r"429|slow down"):
                j.ask("q")
        assert len(server.requests) == 1


def test_a_stream_is_not_retried_once_output_started(tmp_path):
    (tmp_path / "none.toml").write_text("")
    broken = Exchange("POST", CHAT, sse=sse("Hel", "lo", "world"), break_after=1, times=1)
    with ReplayServer([broken, Exchange("POST", CHAT, sse=sse("never"))]) as server:
        with Jarvis(load_config(tmp_path / "none.toml"), engine="vllm", host=server.url, model="m") as j:
            got = []
            with pytest.raises(EngineError):
                for piece in j.ask_stream_sync("q"):
                    got.append(piece)
        assert got == ["Hel"] and len(server.requests) == 1


def test_a_failed_request_falls_back_to_the_next_engine_announced(tmp_path):
    with ReplayServer([busy(status=503, retry_after="", times=10)]) as down, \
            ReplayServer([Exchange("POST", CHAT, sse=sse("from ", "backup"))]) as backup:
        config = tmp_path / "config.toml"
        config.write_text(f'[engine.llamacpp]\nhost = "{backup.url}"\n'
                          '[retry]\nbase_delay = 0.01\n'
                          '[retry.vllm]\nattempts = 2\nfallbacks = [{ engine = "llamacpp", model = "small" }]\n')
        proc = subprocess.run(
            [sys.executable, "-m", "jarvis_core.cli.main", "ask", "--engine", "vllm", "--host", down.url, "--model",
             "m", "q"], capture_output=True, text=True, env=env_for(tmp_path, JARVIS_CONFIG=str(config)), timeout=120)
        assert len(down.requests) == 2
        (sent,) = backup.requests
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "from backup\n"
    assert sent.json["model"] == "small"
    assert "jarvis: vllm failed (ServerError); falling back to llamacpp with model small" in proc.stderr
