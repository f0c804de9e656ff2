"""The core's engine conformance suite, run against the llama.cpp and vLLM engines.

Over recorded-style answers replayed by the core's ReplayServer, and (llama.cpp) against the REAL server.
"""

from __future__ import annotations

import contextlib
import json
from typing import Any, Iterator, Optional, Sequence

import pytest

from jarvis_core.embeddings import encode_base64_vector
from jarvis_core.testing import EngineConformance, Exchange
from jarvis_core.testing.conformance import LiveServer
from jarvis_core.testing.conformance_verbs import EMBED_INPUTS
from jarvis_core.testing.replay import body_matches
from jarvis_engine_openai_compat.engines import LlamaCppEngine, VLLMEngine

TEXT = "The capital of France is Paris."
CALL = {"id": "call_p4r1s", "type": "function", "function": {"name": "get_weather", "arguments": '{"location": "Paris"}'}}


def _streamed(body: Any) -> bool:
    return isinstance(body, dict) and body.get("stream") is True


def _plain(body: Any) -> bool:
    return isinstance(body, dict) and not body.get("stream")


def _chunk(delta: dict, finish: Optional[str] = None, **extra: Any) -> str:
    return "data: " + json.dumps({"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": "smollm2",
                                  "choices": [{"index": 0, "delta": delta, "finish_reason": finish}], **extra})


USAGE = {"prompt_tokens": 27, "completion_tokens": 8, "total_tokens": 35}
USAGE_CHUNK = "data: " + json.dumps({"id": "chatcmpl-1", "model": "smollm2", "choices": [], "usage": USAGE,
                                     "timings": {"predicted_n": 8}})


def openai_exchanges(scenario: str, *, health: str) -> Optional[Sequence[Exchange]]:
    path = "/v1/chat/completions"
    if scenario == "text":
        words = ["The", " capital", " of France", " is Paris."]
        return [
            Exchange("POST", path, match=_plain, json={
                "id": "chatcmpl-1", "model": "smollm2", "usage": USAGE,
                "choices": [{"index": 0, "message": {"role": "assistant", "content": TEXT}, "finish_reason": "stop"}]}),
            Exchange("POST", path, match=_streamed, sse=[
                _chunk({"role": "assistant", "content": None}), *[_chunk({"content": w}) for w in words],
                _chunk({}, "stop"), USAGE_CHUNK, "data: [DONE]"]),
        ]
    if scenario == "tools":
        has_tools = {"tools": [{"function": {"name": "get_weather"}}]}
        return [
            Exchange("POST", path, match=lambda b: _plain(b) and "tools" in b, json={
                "id": "chatcmpl-2", "model": "smollm2", "usage": USAGE,
                "choices": [{"index": 0, "message": {"role": "assistant", "content": None, "tool_calls": [CALL]},
                             "finish_reason": "tool_calls"}]}),
            Exchange("POST", path, match={"stream": True, **has_tools}, sse=[
                _chunk({"role": "assistant", "content": None, "tool_calls": [
                    {"index": 0, "id": CALL["id"], "type": "function", "function": {"name": "get_weather", "arguments": ""}}]}),
                _chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"loca'}}]}),
                _chunk({"tool_calls": [{"index": 0, "function": {"arguments": 'tion": "Paris"}'}}]}),
                _chunk({}, "tool_calls"), USAGE_CHUNK, "data: [DONE]"]),
        ]
    if scenario == "models":
        return [
            Exchange("GET", "/v1/models", json={"object": "list", "data": [{"id": "smollm2", "object": "model"}]}),
            Exchange("GET", health, json={"status": "ok"}),
        ]
    if scenario == "embed":  # OpenAI's documented reply; the second vector base64 (float32, little-endian)
        return [Exchange("POST", "/v1/embeddings", match={"input": list(EMBED_INPUTS), "encoding_format": "float"},
                         json={"object": "list", "model": "smollm2", "usage": {"prompt_tokens": 9, "total_tokens": 9},
                               "data": [{"object": "embedding", "index": 0, "embedding": [0.25, -0.5, 1.0]},
                                        {"object": "embedding", "index": 1,
                                         "embedding": encode_base64_vector([0.5, 0.125, -2.0])}]})]
    if scenario == "structured":
        answer = '{"name": "Ada Lovelace", "age": 36}'
        wanted = {"response_format": {"type": "json_schema", "json_schema": {"name": "person"}}}
        return [
            Exchange("POST", path, match=lambda b: _plain(b) and body_matches(wanted, b), json={
                "id": "chatcmpl-3", "model": "smollm2", "usage": USAGE,
                "choices": [{"index": 0, "message": {"role": "assistant", "content": answer}, "finish_reason": "stop"}]}),
            Exchange("POST", path, match={"stream": True, **wanted}, sse=[
                _chunk({"role": "assistant", "content": None}), _chunk({"content": answer[:12]}),
                _chunk({"content": answer[12:]}), _chunk({}, "stop"), USAGE_CHUNK, "data: [DONE]"]),
        ]
    return None


class TestLlamaCppConformanceReplay(EngineConformance):
    model = "smollm2"
    expected_text = TEXT
    expected_models = ["smollm2"]

    def make_engine(self, url: str, **options: Any) -> LlamaCppEngine:
        return LlamaCppEngine(host=url, tool_mode="native", **options)

    def exchanges(self, scenario: str) -> Optional[Sequence[Exchange]]:
        return openai_exchanges(scenario, health="/health")


class TestVLLMConformanceReplay(EngineConformance):
    model = "smollm2"
    expected_text = TEXT
    expected_models = ["smollm2"]

    def make_engine(self, url: str, **options: Any) -> VLLMEngine:
        return VLLMEngine(host=url, **options)

    def exchanges(self, scenario: str) -> Optional[Sequence[Exchange]]:
        return openai_exchanges(scenario, health="/health")


@pytest.mark.llamacpp
class TestLlamaCppConformanceLive(EngineConformance):
    """The same checks against the real llama.cpp server (SmolLM2 answers the text prompt with Paris)."""

    model = "smollm2"
    expected_text = TEXT
    expected_models = ["smollm2"]
    max_tokens = 48

    @pytest.fixture(autouse=True)
    def _live(self, llama_server):
        self._url = llama_server.url

    def make_engine(self, url: str, **options: Any) -> LlamaCppEngine:
        return LlamaCppEngine(host=url, **options)  # tool_mode auto: SmolLM2's template has no tools -> json_schema

    def exchanges(self, scenario: str) -> Optional[Sequence[Exchange]]:
        return openai_exchanges(scenario, health="/health")

    @contextlib.contextmanager
    def serve(self, scenario: str) -> Iterator[Any]:
        if scenario == "embed":
            pytest.skip("the shared server runs without --embeddings (test_embedded_verbs embeds on a real one)")
        yield LiveServer(self._url)
