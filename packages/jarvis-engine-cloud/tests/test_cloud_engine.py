"""CloudEngine as a whole: keys and URLs, routing to the right endpoint, options, models, health."""

from __future__ import annotations

import json
from typing import Any, Dict, List

import httpx
import pytest

from jarvis_core.errors import AuthenticationError, InvalidOptionError
from jarvis_core.types import Message
from jarvis_engine_cloud.engine import CloudEngine

ANTHROPIC_OK = {"model": "claude-x", "content": [{"type": "text", "text": "hi"}], "stop_reason": "end_turn",
                "usage": {"input_tokens": 1, "output_tokens": 1}}
GEMINI_OK = {"candidates": [{"content": {"parts": [{"text": "hi"}]}, "finishReason": "STOP"}],
             "usageMetadata": {"promptTokenCount": 1, "candidatesTokenCount": 1, "totalTokenCount": 2}}
OPENAI_OK = {"model": "gpt-x", "choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}],
             "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}


class Recorder:
    """A MockTransport handler answering by host and path, remembering every request."""

    def __init__(self, routes: Dict[str, Any]) -> None:
        self.routes = routes
        self.requests: List[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        for prefix, answer in self.routes.items():
            if f"{request.url.host}{request.url.path}".startswith(prefix):
                return answer(request) if callable(answer) else httpx.Response(200, json=answer)
        return httpx.Response(404, json={"error": {"message": f"no route for {request.url}"}})


def engine_with(recorder: Recorder, **kw: Any) -> CloudEngine:
    transport = httpx.MockTransport(recorder)
    kw.setdefault("environ", {})
    return CloudEngine(transport=transport, async_transport=transport, sleep=lambda d: None, **kw)


def test_each_model_goes_to_its_provider_with_its_own_auth():
    rec = Recorder({
        "api.anthropic.com/v1/messages": ANTHROPIC_OK,
        "generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:generateContent": GEMINI_OK,
        "api.openai.com/v1/chat/completions": OPENAI_OK,
    })
    engine = engine_with(rec, environ={"OPENAI_API_KEY": "k-oai", "ANTHROPIC_API_KEY": "k-ant", "GOOGLE_API_KEY": "k-goo"})
    for model in ("claude-x", "gemini-2.5-flash", "gpt-x"):
        assert engine.generate([Message.user("hello")], model=model).content == "hi"
    anthropic, gemini, openai = rec.requests
    assert anthropic.headers["x-api-key"] == "k-ant" and "authorization" not in anthropic.headers
    assert gemini.headers["x-goog-api-key"] == "k-goo" and "k-goo" not in str(gemini.url)
    assert openai.headers["authorization"] == "Bearer k-oai"
    assert json.loads(openai.content)["max_completion_tokens"] == 1024, "api.openai.com gets max_completion_tokens"
    assert "temperature" not in json.loads(openai.content), "an unset temperature is not sent"
    engine.close()


def test_each_provider_has_its_own_pooled_client():
    rec = Recorder({"api.anthropic.com": ANTHROPIC_OK, "api.openai.com": OPENAI_OK})
    engine = engine_with(rec, anthropic_api_key="a", openai_api_key="o")
    engine.generate([Message.user("x")], model="claude-x")
    engine.generate([Message.user("x")], model="claude-y")
    engine.generate([Message.user("x")], model="gpt-x")
    assert engine.client("anthropic").client is engine.client("anthropic").client
    assert engine.client("anthropic").client is not engine.client("openai").client
    engine.close()


@pytest.mark.parametrize(
    ("model", "variables"),
    [("claude-x", "ANTHROPIC_API_KEY"), ("gemini-x", "GEMINI_API_KEY or GOOGLE_API_KEY"), ("gpt-x", "OPENAI_API_KEY")],
)
def test_missing_key_names_the_variable_and_sends_nothing(model, variables):
    rec = Recorder({})
    engine = engine_with(rec)
    with pytest.raises(AuthenticationError, match=variables):
        engine.generate([Message.user("x")], model=model)
    with pytest.raises(AuthenticationError, match=variables):
        engine.prepare(model)
    assert rec.requests == []
    assert engine.health() is False


def test_settings_precedence_and_base_urls():
    env = {"GEMINI_API_KEY": "from-gemini-var", "GOOGLE_API_KEY": "from-google-var", "ANTHROPIC_API_KEY": "env-ant\n",
           "ANTHROPIC_BASE_URL": "http://proxy.local:8080/v1", "OPENAI_BASE_URL": "http://litellm.local:4000/v1"}
    rec = Recorder({"proxy.local/v1/messages": ANTHROPIC_OK, "generativelanguage": GEMINI_OK, "litellm.local/v1/chat": OPENAI_OK})
    engine = engine_with(rec, environ=env, anthropic_api_key="explicit", openai_api_key="o")
    engine.generate([Message.user("x")], model="claude-x")
    engine.generate([Message.user("x")], model="gemini-x")
    engine.generate([Message.user("x")], model="gpt-x")
    ant, gem, oai = rec.requests
    assert ant.headers["x-api-key"] == "explicit", "an explicit key beats the environment"
    assert str(ant.url) == "http://proxy.local:8080/v1/messages", "a base URL ending in /v1 is not doubled"
    assert gem.headers["x-goog-api-key"] == "from-gemini-var", "GEMINI_API_KEY wins over GOOGLE_API_KEY"
    assert json.loads(oai.content)["max_tokens"] == 1024, "a non-OpenAI base URL gets max_tokens"
    engine.close()


def test_gemini_base_url_with_version_is_used_as_is():
    rec = Recorder({"gw.local/gemini/v1/models/gemini-x:generateContent": GEMINI_OK})
    engine = engine_with(rec, gemini_api_key="g", gemini_base_url="http://gw.local/gemini/v1")
    assert engine.generate([Message.user("x")], model="gemini-x").content == "hi"


def test_key_with_inner_whitespace_is_refused_without_echoing_it():
    with pytest.raises(AuthenticationError) as info:
        CloudEngine(environ={"OPENAI_API_KEY": "sk-abc def"})
    assert "sk-abc" not in str(info.value) and "def" not in str(info.value)
    assert "$OPENAI_API_KEY" in str(info.value)


def test_options_are_allow_listed_per_provider():
    rec = Recorder({"api.anthropic.com": ANTHROPIC_OK, "api.openai.com": OPENAI_OK})
    engine = engine_with(rec, anthropic_api_key="a", openai_api_key="o")
    with pytest.raises(InvalidOptionError, match="nonsense"):
        engine.generate([Message.user("x")], model="claude-x", nonsense=1)
    with pytest.raises(InvalidOptionError, match=r"cloud \(anthropic\).*'seed'"):
        engine.generate([Message.user("x")], model="claude-x", seed=1)
    with pytest.raises(InvalidOptionError, match=r"cloud \(openai\).*'top_k'"):
        engine.generate([Message.user("x")], model="gpt-x", top_k=3)
    assert rec.requests == []
    engine.generate([Message.user("x")], model="claude-x", top_k=None, seed=None)  # None means unset
    assert "top_k" not in json.loads(rec.requests[-1].content)


def test_openai_history_with_flat_tool_calls_is_sent_nested():
    rec = Recorder({"api.openai.com": OPENAI_OK})
    engine = engine_with(rec, openai_api_key="o")
    history = [
        {"role": "user", "content": "weather?"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "name": "get_weather", "arguments": {"city": "Oslo"}}]},
        {"role": "tool", "content": "cold", "tool_call_id": "c1"},
    ]
    engine.generate(history, model="gpt-x")
    sent = json.loads(rec.requests[0].content)["messages"][1]["tool_calls"]
    assert sent == [{"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'}}]


def test_list_models_uses_each_models_endpoint_and_routable_names():
    def anthropic_models(request: httpx.Request) -> httpx.Response:
        if request.url.params.get("after_id") == "claude-b":
            return httpx.Response(200, json={"data": [{"id": "claude-c"}], "has_more": False})
        return httpx.Response(200, json={"data": [{"id": "claude-a"}, {"id": "claude-b"}], "has_more": True, "last_id": "claude-b"})

    rec = Recorder({
        "api.anthropic.com/v1/models": anthropic_models,
        "generativelanguage.googleapis.com/v1beta/models": {"models": [
            {"name": "models/gemini-2.5-flash", "supportedGenerationMethods": ["generateContent", "countTokens"]},
            {"name": "models/gemma-3-27b-it", "supportedGenerationMethods": ["generateContent"]},
            {"name": "models/text-embedding-004", "supportedGenerationMethods": ["embedContent"]},
        ]},
        "api.openai.com/v1/models": {"object": "list", "data": [{"id": "gpt-4.1"}, {"id": "claude-via-proxy"}]},
    })
    engine = engine_with(rec, anthropic_api_key="a", gemini_api_key="g", openai_api_key="o")
    assert engine.list_models() == [
        "gpt-4.1", "openai/claude-via-proxy", "claude-a", "claude-b", "claude-c", "gemini-2.5-flash", "google/gemma-3-27b-it",
    ]
    assert engine.list_models("anthropic") == ["claude-a", "claude-b", "claude-c"]
    for name in engine.list_models():
        assert engine.route(name).provider in ("openai", "anthropic", "google")


def test_list_models_without_any_key_names_the_variables():
    with pytest.raises(AuthenticationError, match="ANTHROPIC_API_KEY"):
        engine_with(Recorder({})).list_models()


def test_health_per_provider():
    rec = Recorder({
        "api.anthropic.com/v1/models": {"data": []},
        "generativelanguage.googleapis.com": lambda r: httpx.Response(400, json={"error": {"message": "API key not valid"}}),
    })
    engine = engine_with(rec, anthropic_api_key="a", gemini_api_key="bad")
    assert engine.health("anthropic") is True
    assert engine.health("google") is False
    assert engine.health("openai") is False, "no key: not healthy, and not asked"
    assert engine.health() is True
    assert all(r.url.host != "api.openai.com" for r in rec.requests)
    assert engine.health("nonsense") is False


def test_repr_shows_which_keys_are_set_and_nothing_else():
    engine = CloudEngine(environ={}, anthropic_api_key="sk-ant-abcdef123456")
    text = repr(engine)
    assert "anthropic=key" in text and "openai=no-key" in text and "abcdef" not in text
