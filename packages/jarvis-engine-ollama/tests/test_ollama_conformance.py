"""The core's engine conformance suite, run against the Ollama engine over recorded Ollama answers."""

from __future__ import annotations

import json
from typing import Any, List, Optional, Sequence

from jarvis_core.testing import EngineConformance, Exchange
from jarvis_engine_ollama.engine import OllamaEngine

_FINAL = {"done": True, "done_reason": "stop", "total_duration": 5000000, "prompt_eval_count": 20, "eval_count": 8}
_TEXT = "The capital of France is Paris."
_CALL = {"id": "call_p4r1s000", "function": {"index": 0, "name": "get_weather", "arguments": {"location": "Paris"}}}


def _line(message: dict, **extra: Any) -> str:
    return json.dumps({"model": "llama3.2", "created_at": "2025-07-07T20:22:19Z", "message": message, "done": False, **extra})


def _assistant(content: str = "", **kw: Any) -> dict:
    return {"role": "assistant", "content": content, **kw}


class TestOllamaConformance(EngineConformance):
    model = "llama3.2"
    expected_text = _TEXT
    expected_models = ["llama3.2:latest", "qwen3:8b"]

    def make_engine(self, url: str, **options: Any) -> OllamaEngine:
        return OllamaEngine(host=url, **options)

    def exchanges(self, scenario: str) -> Optional[Sequence[Exchange]]:
        if scenario == "text":
            words = ["The", " capital", " of France", " is Paris."]
            lines: List[str] = [_line(_assistant(w)) for w in words] + [_line(_assistant(), **_FINAL)]
            return [
                Exchange("POST", "/api/chat", match={"stream": False},
                         json={"model": "llama3.2", "message": _assistant(_TEXT), **_FINAL}),
                Exchange("POST", "/api/chat", match={"stream": True}, ndjson=lines),
            ]
        if scenario == "tools":
            return [
                Exchange("POST", "/api/chat", match={"stream": False, "tools": [{"function": {"name": "get_weather"}}]},
                         json={"model": "llama3.2", "message": _assistant(tool_calls=[_CALL]), **_FINAL}),
                Exchange("POST", "/api/chat", match={"stream": True, "tools": [{"function": {"name": "get_weather"}}]},
                         ndjson=[_line(_assistant(tool_calls=[_CALL])), _line(_assistant(), **_FINAL)]),
            ]
        if scenario == "models":
            return [
                Exchange("GET", "/api/tags", json={"models": [{"name": "llama3.2:latest", "model": "llama3.2:latest"},
                                                              {"name": "qwen3:8b", "model": "qwen3:8b"}]}),
                Exchange("GET", "/api/version", json={"version": "0.12.6"}),
            ]
        return None
