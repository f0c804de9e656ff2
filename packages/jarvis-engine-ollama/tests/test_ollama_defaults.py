"""Backend defaults through the core's ModelAdapter: sampling precedence, inline ``<think>`` and text tool calls
(whole answers and streams), and no interference when Ollama already separated them."""

from __future__ import annotations

import json
from typing import Any, Dict, List

import httpx
import pytest

from jarvis_core.testing.plugins import installed_registry, simple_plugin
from jarvis_core.types import ToolSpec
from jarvis_engine_ollama.engine import OllamaEngine

WEATHER = ToolSpec("get_weather", "Weather", {"type": "object", "properties": {"city": {"type": "string"}}})
FINAL = {"done": True, "done_reason": "stop", "prompt_eval_count": 30, "eval_count": 9}


def engine_for(message: Dict[str, Any], pieces: List[Dict[str, Any]], bodies: List[Any], **kw: Any) -> OllamaEngine:
    """An engine whose server answers ``message`` (non-streamed) or ``pieces`` as NDJSON (streamed)."""

    def sync(request: httpx.Request) -> httpx.Response:
        bodies.append(json.loads(request.content))
        return httpx.Response(200, json={"model": "m", "message": message, **FINAL})

    def streamed(request: httpx.Request) -> httpx.Response:
        bodies.append(json.loads(request.content))
        lines = [{"model": "m", "message": {"role": "assistant", **p}, "done": False} for p in pieces]
        lines.append({"model": "m", "message": {"role": "assistant", "content": ""}, **FINAL})
        return httpx.Response(200, content="".join(json.dumps(x) + "\n" for x in lines).encode())

    return OllamaEngine(host="ollama.test", transport=httpx.MockTransport(sync),
                        async_transport=httpx.MockTransport(streamed), **kw)


async def run_both(engine: OllamaEngine, model: str, **kw: Any):
    whole = engine.generate([{"role": "user", "content": "q"}], model=model, **kw)
    chunks = [c async for c in engine.stream_full([{"role": "user", "content": "q"}], model=model, **kw)]
    await engine.aclose()
    streamed = {
        "content": "".join(c.content or "" for c in chunks) or None,
        "reasoning": "".join(c.reasoning or "" for c in chunks) or None,
        "tool_calls": [t for c in chunks for t in c.tool_calls],
        "finish_reason": chunks[-1].finish_reason,
    }
    assert [c.finish_reason is not None for c in chunks].count(True) == 1
    return whole, streamed


FAMILY = simple_plugin("fam", defaults=[("zzfam", {"sampling": {"temperature": 0.33, "top_k": -1, "top_p": 0.8}})])


@pytest.mark.parametrize(
    ("engine_kw", "call_kw", "expected"),
    [
        ({}, {}, {"temperature": 0.33, "top_k": 0, "top_p": 0.8}),  # family rule; -1 ("off") sent as 0
        ({}, {"temperature": 0, "top_p": 0.5}, {"temperature": 0, "top_k": 0, "top_p": 0.5}),  # explicit wins
        ({"model_defaults": {"zzfam": {"temperature": 0.5}}}, {}, {"temperature": 0.5, "top_k": 0, "top_p": 0.8}),
    ],
)
def test_sampling_precedence(engine_kw, call_kw, expected):
    bodies: List[Any] = []
    with installed_registry(FAMILY, load_entrypoints=True):
        with engine_for({"role": "assistant", "content": "ok"}, [], bodies, **engine_kw) as engine:
            engine.generate([{"role": "user", "content": "q"}], model="zzfam-7b:latest", **call_kw)
    options = bodies[0]["options"]
    assert {k: options[k] for k in expected} == expected


async def test_inline_think_is_split_into_reasoning():
    bodies: List[Any] = []
    engine = engine_for({"role": "assistant", "content": "<think>2+2 is 4</think>It is 4."},
                        [{"content": "<think>2+2"}, {"content": " is 4</think>"}, {"content": "It is 4."}], bodies)
    whole, streamed = await run_both(engine, "qwen3:8b")
    assert (whole.reasoning, whole.content) == ("2+2 is 4", "It is 4.")
    assert (streamed["reasoning"], streamed["content"]) == ("2+2 is 4", "It is 4.")


async def test_text_tool_call_becomes_a_tool_call_when_tools_were_given():
    bodies: List[Any] = []
    text = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n</tool_call>'
    engine = engine_for({"role": "assistant", "content": text}, [{"content": text[:20]}, {"content": text[20:]}], bodies)
    whole, streamed = await run_both(engine, "qwen3:8b", tools=[WEATHER])
    for result in (whole.tool_calls, streamed["tool_calls"]):
        (call,) = result
        assert call.name == "get_weather" and json.loads(call.arguments) == {"city": "Oslo"} and call.id
    assert whole.finish_reason == streamed["finish_reason"] == "tool_calls"
    assert not (whole.content or "").strip() and not (streamed["content"] or "").strip()


async def test_native_thinking_and_plain_content_are_left_alone():
    # deepseek-r1's parser would call untagged text reasoning; Ollama already separated it, so nothing changes.
    bodies: List[Any] = []
    engine = engine_for({"role": "assistant", "content": "Paris.", "thinking": "Capital of France."},
                        [{"content": "", "thinking": "Capital of France."}, {"content": "Paris."}], bodies)
    whole, streamed = await run_both(engine, "deepseek-r1:latest")
    assert (whole.reasoning, whole.content) == ("Capital of France.", "Paris.")
    assert (streamed["reasoning"], streamed["content"]) == ("Capital of France.", "Paris.")


async def test_untagged_answer_of_a_reasoning_family_stays_content():
    bodies: List[Any] = []
    engine = engine_for({"role": "assistant", "content": "Just the answer."}, [{"content": "Just the answer."}], bodies)
    whole, streamed = await run_both(engine, "deepseek-r1:latest", think=False)
    assert (whole.reasoning, whole.content) == (None, "Just the answer.")
    assert (streamed["reasoning"], streamed["content"]) == (None, "Just the answer.")
