"""What the engine sends: options in ``options``, top-level think/format/keep_alive, history in Ollama's
shape, the allow-list, and value checks (all before any request leaves)."""

from __future__ import annotations

import json
from typing import Any, Dict, List

import httpx
import pytest

from jarvis_core.errors import BadRequestError, InvalidOptionError
from jarvis_core.types import Message, ToolCall, ToolSpec
from jarvis_engine_ollama.engine import OllamaEngine
from jarvis_engine_ollama.options import DEFAULT_NUM_CTX, InvalidOptionValueError

ANSWER = {
    "model": "llama3.2", "created_at": "2025-07-07T20:32:53Z",
    "message": {"role": "assistant", "content": "ok"},
    "done": True, "done_reason": "stop", "prompt_eval_count": 10, "eval_count": 1,
}
WEATHER = ToolSpec("get_weather", "Weather of a city", {"type": "object", "properties": {"city": {"type": "string"}}})


class Capture:
    def __init__(self, answer: Dict[str, Any] = ANSWER) -> None:
        self.bodies: List[Dict[str, Any]] = []
        self.answer = answer

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.bodies.append(json.loads(request.content))
        return httpx.Response(200, json=self.answer)

    def engine(self, **kw: Any) -> OllamaEngine:
        return OllamaEngine(host="ollama.test", transport=httpx.MockTransport(self), **kw)


def sent(**call: Any) -> Dict[str, Any]:
    engine_kw = call.pop("engine", {})
    cap = Capture()
    with cap.engine(**engine_kw) as engine:
        engine.generate(call.pop("messages", [{"role": "user", "content": "hi"}]), model=call.pop("model", "llama3.2"), **call)
    return cap.bodies[0]


def test_defaults_go_into_options():
    body = sent(model="mystery-model:7b")  # no family rule matches: only the engine-default tier
    assert body["model"] == "mystery-model:7b" and body["stream"] is False
    assert body["messages"] == [{"role": "user", "content": "hi"}]
    assert body["options"]["num_predict"] == 1024
    assert body["options"]["num_ctx"] == DEFAULT_NUM_CTX == 8192
    assert body["options"] == {"temperature": 0.7, "num_predict": 1024, "num_ctx": 8192}
    assert "think" not in body and "format" not in body and "keep_alive" not in body and "tools" not in body


def test_sampling_and_other_options_map_to_ollama_options():
    body = sent(temperature=0, max_tokens=7, top_p=0.9, top_k=40, min_p=0.05, repeat_penalty=1.1,
                presence_penalty=0.5, frequency_penalty=0.25, seed=42, stop="END", num_ctx=4096)
    assert body["options"] == {
        "temperature": 0, "top_p": 0.9, "top_k": 40, "min_p": 0.05, "repeat_penalty": 1.1,
        "presence_penalty": 0.5, "frequency_penalty": 0.25, "seed": 42, "stop": ["END"],
        "num_predict": 7, "num_ctx": 4096,
    }
    assert not {"top_p", "seed", "stop", "temperature"} & set(body), "sampling never goes top-level"


def test_explicit_zero_is_kept_and_none_max_tokens_sends_no_limit():
    body = sent(temperature=0.0, max_tokens=None)
    assert body["options"]["temperature"] == 0.0
    assert "num_predict" not in body["options"]


def test_num_ctx_zero_lets_the_server_decide():
    assert "num_ctx" not in sent(engine={"num_ctx": 0})["options"]
    assert sent(engine={"num_ctx": 16384})["options"]["num_ctx"] == 16384
    assert sent(engine={"num_ctx": 16384}, num_ctx=2048)["options"]["num_ctx"] == 2048
    assert "num_ctx" not in sent(engine={"num_ctx": 16384}, num_ctx=0)["options"]


def test_top_level_fields():
    schema = {"type": "object", "properties": {"age": {"type": "integer"}}}
    body = sent(think="high", format=schema, keep_alive="10m")
    assert body["think"] == "high" and body["format"] == schema and body["keep_alive"] == "10m"
    body = sent(think=False, format="json", keep_alive=0)
    assert body["think"] is False and body["format"] == "json" and body["keep_alive"] == 0


def test_engine_level_think_and_keep_alive_are_defaults_a_call_can_override():
    body = sent(engine={"think": True, "keep_alive": -1})
    assert body["think"] is True and body["keep_alive"] == -1
    body = sent(engine={"think": True, "keep_alive": -1}, think=False, keep_alive="1m")
    assert body["think"] is False and body["keep_alive"] == "1m"


def test_tools_go_out_in_openai_format():
    body = sent(tools=[WEATHER, {"name": "now", "description": "time"}])
    assert body["tools"] == [
        {"type": "function", "function": {"name": "get_weather", "description": "Weather of a city",
                                          "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}},
        {"type": "function", "function": {"name": "now", "description": "time",
                                          "parameters": {"type": "object", "properties": {}}}},
    ]


def test_history_tool_calls_become_objects_and_tool_results_get_tool_name():
    history = [
        Message.system("be brief"),
        Message.user("weather in Oslo and Lima?"),
        Message("assistant", None, tool_calls=[
            ToolCall("call_1", "get_weather", '{"city": "Oslo"}'),
            ToolCall("call_2", "get_weather", '{"city": "Lima"}'),
        ], reasoning="two calls"),
        Message.tool("3 degrees", "call_1"),  # no name: found from the call id
        {"role": "tool", "content": "19 degrees", "tool_call_id": "call_2", "name": "get_weather"},
    ]
    body = sent(messages=history)
    assert body["messages"] == [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "weather in Oslo and Lima?"},
        {"role": "assistant", "content": "", "thinking": "two calls", "tool_calls": [
            {"id": "call_1", "function": {"index": 0, "name": "get_weather", "arguments": {"city": "Oslo"}}},
            {"id": "call_2", "function": {"index": 1, "name": "get_weather", "arguments": {"city": "Lima"}}},
        ]},
        {"role": "tool", "content": "3 degrees", "tool_name": "get_weather", "tool_call_id": "call_1"},
        {"role": "tool", "content": "19 degrees", "tool_name": "get_weather", "tool_call_id": "call_2"},
    ]


def test_openai_dict_history_with_string_arguments_is_converted():
    history = [
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c9", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Rome"}'}}]},
        {"role": "tool", "tool_call_id": "c9", "content": "warm"},
        {"role": "user", "content": "thanks", "images": ["aGVsbG8="]},
    ]
    msgs = sent(messages=history)["messages"]
    assert msgs[0]["tool_calls"][0]["function"]["arguments"] == {"city": "Rome"}
    assert msgs[1]["tool_name"] == "get_weather"
    assert msgs[2] == {"role": "user", "content": "thanks", "images": ["aGVsbG8="]}


@pytest.mark.parametrize("arguments", ['{"city": ', '["Oslo"]', "42"])
def test_history_arguments_that_are_not_an_object_are_refused_before_sending(arguments):
    cap = Capture()
    bad = [Message("assistant", None, tool_calls=[ToolCall("c1", "get_weather", arguments)])]
    with cap.engine() as engine, pytest.raises(BadRequestError, match="not a JSON object"):
        engine.generate(bad, model="llama3.2")
    assert cap.bodies == []


@pytest.mark.parametrize(
    ("kw", "error", "name"),
    [
        ({"mirostat": 1}, InvalidOptionError, "mirostat"),
        ({"num_predict": 5}, InvalidOptionError, "num_predict"),  # use max_tokens
        ({"think": "extreme"}, InvalidOptionValueError, "think"),
        ({"format": "yaml"}, InvalidOptionValueError, "format"),
        ({"keep_alive": "a while"}, InvalidOptionValueError, "keep_alive"),
        ({"num_ctx": -1}, InvalidOptionValueError, "num_ctx"),
        ({"seed": 1.5}, InvalidOptionValueError, "seed"),
        ({"top_k": 2.5}, InvalidOptionValueError, "top_k"),
        ({"top_p": "high"}, InvalidOptionValueError, "top_p"),
        ({"stop": ["a", 1]}, InvalidOptionValueError, "stop"),
        ({"temperature": "hot"}, InvalidOptionValueError, "temperature"),
        ({"max_tokens": "many"}, InvalidOptionValueError, "max_tokens"),
        ({"model": ""}, InvalidOptionValueError, "model"),
    ],
)
async def test_bad_options_fail_before_any_request(kw, error, name):
    cap = Capture()
    model = kw.pop("model", "llama3.2")
    async_cap = Capture()
    engine = OllamaEngine(host="ollama.test", transport=httpx.MockTransport(cap),
                          async_transport=httpx.MockTransport(async_cap))
    try:
        with pytest.raises(error) as info:
            engine.generate([{"role": "user", "content": "hi"}], model=model, **kw)
        assert name in str(info.value)
        with pytest.raises(error):
            async for _ in engine.stream_full([{"role": "user", "content": "hi"}], model=model, **kw):
                pass
    finally:
        await engine.aclose()
    assert cap.bodies == [] and async_cap.bodies == []


def test_bad_engine_settings_are_refused():
    for kw in ({"num_ctx": "big"}, {"keep_alive": []}, {"think": "sometimes"}):
        with pytest.raises(InvalidOptionValueError):
            OllamaEngine(host="ollama.test", **kw)


def test_requests_reuse_one_connection_pool():
    cap = Capture()
    with cap.engine() as engine:
        first = engine.client
        engine.generate([{"role": "user", "content": "a"}], model="llama3.2")
        engine.generate([{"role": "user", "content": "b"}], model="llama3.2")
        assert engine.client is first
    assert len(cap.bodies) == 2
