"""Against a real Ollama server, when ``OLLAMA_HOST`` points at one (skipped otherwise, with the reason).

``OLLAMA_TEST_MODEL`` picks the model (default ``llama3.2``); it must be pulled already.
"""

from __future__ import annotations

import os

import pytest

from jarvis_core.types import ToolSpec
from jarvis_engine_ollama.engine import OllamaEngine

pytestmark = [
    pytest.mark.live,
    pytest.mark.skipif(not os.environ.get("OLLAMA_HOST"), reason="OLLAMA_HOST is not set: no live Ollama server to test"),
]
MODEL = os.environ.get("OLLAMA_TEST_MODEL", "llama3.2")
ASK = [{"role": "user", "content": "Answer in one word: what colour is a clear daytime sky?"}]


@pytest.fixture
def engine():
    with OllamaEngine() as e:
        if not e.health():
            pytest.skip(f"no Ollama answers at {e.base_url}")
        if not any(m.split(":")[0] == MODEL.split(":")[0] for m in e.list_models()):
            pytest.skip(f"model {MODEL} is not pulled on {e.base_url} (ollama pull {MODEL})")
        yield e


def test_live_generate(engine):
    result = engine.generate(ASK, model=MODEL, temperature=0, max_tokens=16)
    assert result.content and result.finish_reason in ("stop", "length")
    assert result.usage.completion_tokens > 0


async def test_live_stream(engine):
    chunks = [c async for c in engine.stream_full(ASK, model=MODEL, temperature=0, max_tokens=16)]
    assert "".join(c.content or "" for c in chunks)
    assert chunks[-1].finish_reason in ("stop", "length") and chunks[-1].usage is not None
    await engine.aclose()


def test_live_show_and_prepare(engine):
    details = engine.show(MODEL)
    assert "completion" in details.capabilities or details.capabilities == ()
    engine.prepare(MODEL)
    assert any(r.name.split(":")[0] == MODEL.split(":")[0] for r in engine.running_models())


def test_live_tools_when_supported(engine):
    if not engine.show(MODEL).supports_tools:
        pytest.skip(f"{MODEL} has no 'tools' capability")
    tool = ToolSpec("get_weather", "Weather of a city", {"type": "object", "properties": {"city": {"type": "string"}},
                                                          "required": ["city"]})
    result = engine.generate([{"role": "user", "content": "Use get_weather for Paris."}], model=MODEL,
                             tools=[tool], temperature=0)
    if result.tool_calls:
        assert result.finish_reason == "tool_calls" and result.tool_calls[0].name == "get_weather"
