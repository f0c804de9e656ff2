"""A prompt Ollama cut to fit ``num_ctx`` is reported (warning, PROMPT_TRUNCATED event, metadata), never silent;
a prompt that fitted is not."""

from __future__ import annotations

import json
import warnings
from typing import Any, Dict, Optional

import httpx
import pytest

from jarvis_core.events import EventType
from jarvis_core.testing.recording_bus import RecordingBus
from jarvis_engine_ollama.engine import OllamaEngine
from jarvis_engine_ollama.truncation import PromptTruncatedWarning, check_truncation


def answer(prompt_eval_count: Optional[int], eval_count: int = 5, done_reason: str = "stop") -> Dict[str, Any]:
    final: Dict[str, Any] = {"model": "llama3.2", "created_at": "2025-07-07T20:32:53Z",
                             "message": {"role": "assistant", "content": "ok"},
                             "done": True, "done_reason": done_reason, "eval_count": eval_count}
    if prompt_eval_count is not None:
        final["prompt_eval_count"] = prompt_eval_count
    return final


def engine_answering(final: Dict[str, Any], **kw: Any) -> OllamaEngine:
    def sync(_: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json=final)

    def streamed(_: httpx.Request) -> httpx.Response:
        lines = [{"model": "llama3.2", "message": {"role": "assistant", "content": "ok"}, "done": False},
                 {**final, "message": {"role": "assistant", "content": ""}}]
        return httpx.Response(200, content="".join(json.dumps(x) + "\n" for x in lines).encode())

    return OllamaEngine(host="ollama.test", transport=httpx.MockTransport(sync),
                        async_transport=httpx.MockTransport(streamed), **kw)


SHORT = [{"role": "user", "content": "hi"}]


def test_rule_window_full():
    facts = check_truncation(num_ctx=2048, prompt_eval_count=2040, eval_count=8, chars=10)
    assert facts is not None and facts["reason"] == "window_full"
    assert check_truncation(num_ctx=2048, prompt_eval_count=2039, eval_count=8, chars=10) is None


def test_rule_estimate_exceeds_even_when_the_cache_hid_the_prompt():
    # 60 000 characters are at least 10 000 tokens: more than a 8192 window, whatever prompt_eval_count says.
    facts = check_truncation(num_ctx=8192, prompt_eval_count=12, eval_count=3, chars=60_000)
    assert facts is not None and facts["reason"] == "estimate_exceeds"
    assert facts["estimated_min_prompt_tokens"] == 10_000
    assert check_truncation(num_ctx=8192, prompt_eval_count=None, eval_count=None, chars=49_000) is None


def test_unknown_window_checks_nothing():
    assert check_truncation(num_ctx=None, prompt_eval_count=10**6, eval_count=1, chars=10**7) is None


def test_generate_warns_publishes_and_marks_metadata():
    bus = RecordingBus()
    with engine_answering(answer(2000, eval_count=48), num_ctx=2048, bus=bus) as engine:
        with pytest.warns(PromptTruncatedWarning, match="num_ctx") as record:
            result = engine.generate(SHORT, model="llama3.2")
    assert "2048-token context window" in str(record[0].message)
    facts = result.metadata["prompt_truncated"]
    assert facts["reason"] == "window_full" and facts["num_ctx"] == 2048 and facts["prompt_eval_count"] == 2000
    (event,) = bus.of_type(EventType.PROMPT_TRUNCATED)
    assert event.data["engine"] == "ollama" and event.data["model"] == "llama3.2" and event.data["num_ctx"] == 2048


def test_long_prompt_with_small_prompt_eval_count_is_reported():
    long_history = [{"role": "user", "content": "word " * 12_000}]  # 60 000 characters
    with engine_answering(answer(300), bus=RecordingBus()) as engine, pytest.warns(PromptTruncatedWarning):
        result = engine.generate(long_history, model="llama3.2")
    assert result.metadata["prompt_truncated"]["reason"] == "estimate_exceeds"


def test_tool_schemas_count_towards_the_prompt():
    big_tool = {"name": "t", "description": "x" * 60_000, "parameters": {"type": "object", "properties": {}}}
    with engine_answering(answer(100), bus=RecordingBus()) as engine, pytest.warns(PromptTruncatedWarning):
        engine.generate(SHORT, model="llama3.2", tools=[big_tool])


async def test_stream_reports_in_the_final_chunk():
    bus = RecordingBus()
    engine = engine_answering(answer(8190, eval_count=2), bus=bus)
    try:
        with pytest.warns(PromptTruncatedWarning):
            chunks = [c async for c in engine.stream_full(SHORT, model="llama3.2")]
    finally:
        await engine.aclose()
    assert chunks[-1].metadata["prompt_truncated"]["reason"] == "window_full"
    assert len(bus.of_type(EventType.PROMPT_TRUNCATED)) == 1


def test_a_prompt_that_fits_is_not_reported():
    bus = RecordingBus()
    with engine_answering(answer(26), bus=bus) as engine, warnings.catch_warnings():
        warnings.simplefilter("error", PromptTruncatedWarning)
        result = engine.generate(SHORT, model="llama3.2")
    assert "prompt_truncated" not in result.metadata
    assert bus.of_type(EventType.PROMPT_TRUNCATED) == []


def test_num_ctx_zero_disables_the_check():
    with engine_answering(answer(10**6), num_ctx=0, bus=RecordingBus()) as engine, warnings.catch_warnings():
        warnings.simplefilter("error", PromptTruncatedWarning)
        result = engine.generate(SHORT, model="llama3.2")
    assert "prompt_truncated" not in result.metadata
