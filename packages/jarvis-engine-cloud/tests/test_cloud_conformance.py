"""The jarvis engine conformance suite, run against CloudEngine once per provider route."""

from __future__ import annotations

import json
from typing import Any, Dict, List, Optional

from jarvis_core.testing import EngineConformance, Exchange
from jarvis_engine_cloud.engine import CloudEngine


async def _no_wait(delay: float) -> None:
    return None


def _engine(provider_kw: str, url_kw: str, url: str, options: Dict[str, Any]) -> CloudEngine:
    options = dict(options)
    options.setdefault(provider_kw, "sk-conformance-default-key")
    return CloudEngine(environ={}, sleep=lambda d: None, async_sleep=_no_wait, **{url_kw: url}, **options)


def _sse(events: List[Any]) -> List[str]:
    out = []
    for ev in events:
        name, data = ev if isinstance(ev, tuple) else (None, ev)
        text = data if isinstance(data, str) else json.dumps(data)
        out.append((f"event: {name}\n" if name else "") + f"data: {text}")
    return out


# -- Anthropic ----------------------------------------------------------------------------------------
def _anthropic(scenario: str) -> Optional[List[Exchange]]:
    if scenario not in ("text", "tools", "models"):  # embed, structured: not recorded for cloud yet
        return None
    usage = {"input_tokens": 20, "output_tokens": 8}
    if scenario == "models":
        return [Exchange("GET", "/v1/models", json={"data": [{"id": "claude-a"}, {"id": "claude-b"}], "has_more": False})]
    if scenario == "text":
        body = {"model": "claude-test", "content": [{"type": "text", "text": "The capital of France is Paris."}],
                "stop_reason": "end_turn", "usage": usage}
        block = {"type": "text", "text": ""}
        deltas = [{"type": "text_delta", "text": t} for t in ("The capital of France", " is Paris.")]
        stop = "end_turn"
    else:
        body = {"model": "claude-test", "content": [{"type": "tool_use", "id": "toolu_1", "name": "get_weather",
                                                    "input": {"location": "Paris"}}], "stop_reason": "tool_use", "usage": usage}
        block = {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {}}
        deltas = [{"type": "input_json_delta", "partial_json": p} for p in ("", '{"location": ', '"Paris"}')]
        stop = "tool_use"
    events = [("message_start", {"type": "message_start", "message": {"model": "claude-test", "usage": usage}}),
              ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": block})]
    events += [("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": d}) for d in deltas]
    events += [("content_block_stop", {"type": "content_block_stop", "index": 0}),
               ("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop}, "usage": {"output_tokens": 8}}),
               ("message_stop", {"type": "message_stop"})]
    return [Exchange("POST", "/v1/messages", match={"stream": True}, sse=_sse(events)),
            Exchange("POST", "/v1/messages", json=body)]


class TestAnthropicConformance(EngineConformance):
    model = "claude-test"
    api_key_param = "anthropic_api_key"
    expected_text = "The capital of France is Paris."
    expected_models = ["claude-a", "claude-b"]

    def make_engine(self, url: str, **options: Any) -> CloudEngine:
        return _engine("anthropic_api_key", "anthropic_base_url", url, options)

    def exchanges(self, scenario: str) -> Optional[List[Exchange]]:
        return _anthropic(scenario)


# -- Gemini -------------------------------------------------------------------------------------------
def _gemini(scenario: str) -> Optional[List[Exchange]]:
    if scenario not in ("text", "tools", "models"):  # embed, structured: not recorded for cloud yet
        return None
    root = "/v1beta/models"
    if scenario == "models":
        return [Exchange("GET", root, json={"models": [
            {"name": "models/gemini-test", "supportedGenerationMethods": ["generateContent"]}]})]
    usage = {"promptTokenCount": 9, "candidatesTokenCount": 7, "totalTokenCount": 16}
    if scenario == "text":
        parts_stream = [[{"text": "The capital of France"}], [{"text": " is Paris."}]]
        whole = [{"text": "The capital of France is Paris."}]
    else:
        call = {"functionCall": {"name": "get_weather", "args": {"location": "Paris"}}}
        parts_stream, whole = [[call]], [call]

    def response(parts, last):
        cand = {"content": {"role": "model", "parts": parts}, **({"finishReason": "STOP"} if last else {})}
        return {"candidates": [cand], "usageMetadata": usage, "modelVersion": "gemini-test"}

    stream = [response(p, i == len(parts_stream) - 1) for i, p in enumerate(parts_stream)]
    return [Exchange("POST", f"{root}/gemini-test:streamGenerateContent?alt=sse", sse=_sse(stream)),
            Exchange("POST", f"{root}/gemini-test:generateContent", json=response(whole, True))]


class TestGeminiConformance(EngineConformance):
    model = "gemini-test"
    api_key_param = "gemini_api_key"
    expected_text = "The capital of France is Paris."
    expected_models = ["gemini-test"]

    def make_engine(self, url: str, **options: Any) -> CloudEngine:
        return _engine("gemini_api_key", "gemini_base_url", url, options)

    def exchanges(self, scenario: str) -> Optional[List[Exchange]]:
        return _gemini(scenario)


# -- OpenAI -------------------------------------------------------------------------------------------
def _openai(scenario: str) -> Optional[List[Exchange]]:
    if scenario not in ("text", "tools", "models"):  # embed, structured: not recorded for cloud yet
        return None
    if scenario == "models":
        return [Exchange("GET", "/v1/models", json={"object": "list", "data": [{"id": "gpt-test"}]})]
    usage = {"prompt_tokens": 20, "completion_tokens": 8, "total_tokens": 28}
    if scenario == "text":
        message = {"role": "assistant", "content": "The capital of France is Paris."}
        deltas = [{"role": "assistant", "content": "The capital of France"}, {"content": " is Paris."}]
        finish = "stop"
    else:
        call = {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": '{"location": "Paris"}'}}
        message = {"role": "assistant", "content": None, "tool_calls": [call]}
        deltas = [{"tool_calls": [{"index": 0, "id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": ""}}]},
                  {"tool_calls": [{"index": 0, "function": {"arguments": '{"location": "Paris"}'}}]}]
        finish = "tool_calls"
    chunks = [{"model": "gpt-test", "choices": [{"index": 0, "delta": d, "finish_reason": None}]} for d in deltas]
    chunks += [{"model": "gpt-test", "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]},
               {"model": "gpt-test", "choices": [], "usage": usage}, "[DONE]"]
    body = {"model": "gpt-test", "choices": [{"index": 0, "message": message, "finish_reason": finish}], "usage": usage}
    return [Exchange("POST", "/v1/chat/completions", match={"stream": True}, sse=_sse(chunks)),
            Exchange("POST", "/v1/chat/completions", json=body)]


class TestOpenAIConformance(EngineConformance):
    model = "gpt-test"
    api_key_param = "openai_api_key"
    expected_text = "The capital of France is Paris."
    expected_models = ["gpt-test"]

    def make_engine(self, url: str, **options: Any) -> CloudEngine:
        return _engine("openai_api_key", "openai_base_url", url + "/v1", options)

    def exchanges(self, scenario: str) -> Optional[List[Exchange]]:
        return _openai(scenario)
