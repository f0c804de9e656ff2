"""Live tests against the real providers: each runs only when its key is in the environment.

Models can be chosen with JARVIS_LIVE_OPENAI_MODEL, JARVIS_LIVE_ANTHROPIC_MODEL, JARVIS_LIVE_GEMINI_MODEL.
"""

from __future__ import annotations

import asyncio
import json
import os

import pytest

from jarvis_core.types import Message, ToolSpec
from jarvis_engine_cloud.engine import CloudEngine

pytestmark = pytest.mark.live

LIVE = {
    "openai": (("OPENAI_API_KEY",), "JARVIS_LIVE_OPENAI_MODEL", "gpt-4.1-mini"),
    "anthropic": (("ANTHROPIC_API_KEY",), "JARVIS_LIVE_ANTHROPIC_MODEL", "claude-haiku-4-5"),
    "google": (("GEMINI_API_KEY", "GOOGLE_API_KEY"), "JARVIS_LIVE_GEMINI_MODEL", "gemini-2.5-flash"),
}
WEATHER = ToolSpec("get_weather", "Get the weather for a city",
                   {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]})


def _model(provider: str) -> str:
    variables, model_var, default = LIVE[provider]
    if not any(os.environ.get(v) for v in variables):
        pytest.skip(f"live {provider} test: set {' or '.join(variables)} to run it")
    return f"{provider}/{os.environ.get(model_var, default)}"


@pytest.mark.parametrize("provider", sorted(LIVE))
def test_live_generate_stream_and_tools(provider):
    model = _model(provider)
    with CloudEngine(max_retries=2) as engine:
        assert engine.health(provider) is True
        answer = engine.generate([Message.user("Reply with the single word: pong")], model=model, max_tokens=200)
        assert "pong" in (answer.content or "").lower() and answer.usage.total_tokens > 0
        called = engine.generate([Message.user("What is the weather in Oslo?")], model=model, tools=[WEATHER],
                                 max_tokens=400, tool_choice="required")
        assert called.finish_reason == "tool_calls" and called.tool_calls[0].name == "get_weather"
        assert "city" in json.loads(called.tool_calls[0].arguments)

        async def stream():
            try:
                return [c async for c in engine.stream_full([Message.user("Count from 1 to 5.")], model=model, max_tokens=200)]
            finally:
                await engine.aclose()

        chunks = asyncio.run(stream())
        assert "3" in "".join(c.content or "" for c in chunks) and chunks[-1].finish_reason in ("stop", "length")
        assert engine.list_models(provider)
