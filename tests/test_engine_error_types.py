"""Every engine package raises the core's error types, against real loopback servers.

A whole reply that is not what the protocol says is a ``MalformedResponseError`` (not a ``StreamError``:
nothing was streamed); a server that never answers is an ``EngineTimeoutError`` (still an
``EngineConnectionError``); a bad option value or options that conflict are the core's
``InvalidOptionValueError`` / ``ConflictingOptionsError`` (still ``InvalidOptionError``), raised before
anything is sent.
"""

from __future__ import annotations

import asyncio
from typing import Any, Callable, Dict

import pytest

from jarvis_core.errors import (
    ConflictingOptionsError,
    EngineConnectionError,
    EngineTimeoutError,
    InvalidOptionError,
    InvalidOptionValueError,
    MalformedResponseError,
    StreamError,
)
from jarvis_core.testing import Exchange, ReplayServer
from jarvis_core.types import Message

MSGS = [Message.user("hi")]
TOOL = {"type": "function", "function": {"name": "calc", "description": "arithmetic",
                                         "parameters": {"type": "object", "properties": {"e": {"type": "string"}}}}}


def _ollama(url: str, **kw: Any) -> Any:
    from jarvis_engine_ollama.engine import OllamaEngine

    return OllamaEngine(host=url, **kw)


def _vllm(url: str, **kw: Any) -> Any:
    from jarvis_engine_openai_compat.engines import VLLMEngine

    return VLLMEngine(host=url, **kw)


def _llamacpp(url: str, **kw: Any) -> Any:
    from jarvis_engine_openai_compat.engines import LlamaCppEngine

    return LlamaCppEngine(host=url, **kw)


def _cloud(url: str, **kw: Any) -> Any:
    from jarvis_engine_cloud.engine import CloudEngine

    return CloudEngine(openai_api_key="sk-test-000000000000", openai_base_url=url + "/v1",
                       anthropic_api_key="sk-ant-test-0000000000", anthropic_base_url=url, max_retries=0,
                       environ={}, **kw)


ENGINES: Dict[str, Callable[..., Any]] = {"ollama": _ollama, "vllm": _vllm, "llamacpp": _llamacpp, "cloud": _cloud}
MODEL = {"ollama": "m:latest", "vllm": "m", "llamacpp": "m", "cloud": "gpt-x"}


@pytest.mark.parametrize("name", sorted(ENGINES))
def test_a_200_that_is_not_json_is_a_malformed_response(name):
    page = "<html><body>Welcome to nginx!</body></html>"
    with ReplayServer([Exchange("*", None, raw=page, headers={"content-type": "text/html"})]) as server:
        engine = ENGINES[name](server.url, timeout=5.0)
        with pytest.raises(MalformedResponseError, match="invalid JSON") as info:
            engine.generate(MSGS, model=MODEL[name], max_tokens=8)
        engine.close()
    assert not isinstance(info.value, StreamError)
    assert info.value.excerpt.startswith("<html><body>Welcome to nginx!")


@pytest.mark.parametrize("name", sorted(ENGINES))
def test_json_of_the_wrong_shape_is_a_malformed_response(name):
    with ReplayServer([Exchange("*", None, json=["not", "a", "reply"])]) as server:
        engine = ENGINES[name](server.url, timeout=5.0)
        with pytest.raises(MalformedResponseError):
            engine.generate(MSGS, model=MODEL[name], max_tokens=8)
        engine.close()


@pytest.mark.parametrize("name", sorted(ENGINES))
def test_a_server_that_never_answers_is_an_engine_timeout(name):
    with ReplayServer([Exchange("*", None, hang=True)]) as server:
        url = server.url
        engine = ENGINES[name](url, timeout=0.3)
        with pytest.raises(EngineTimeoutError, match=r"timed out after 0\.3s") as info:
            engine.generate(MSGS, model=MODEL[name], max_tokens=8)

        async def stream() -> None:
            try:
                async for _ in engine.stream(MSGS, model=MODEL[name], max_tokens=8):
                    pass
            finally:
                await engine.aclose()

        with pytest.raises(EngineTimeoutError) as streamed:
            asyncio.run(stream())
        engine.close()
    for err in (info.value, streamed.value):
        assert isinstance(err, EngineConnectionError) and err.phase == "read" and err.timeout == 0.3
        assert err.url.startswith(url)


def _refused(make: Callable[..., Any], call: Callable[[Any], Any], error: type) -> BaseException:
    with ReplayServer([Exchange("*", None, json={})]) as server:
        engine = make(server.url)
        with pytest.raises(error) as info:
            call(engine)
        engine.close()
        assert server.requests == []  # refused before anything was sent
    assert isinstance(info.value, InvalidOptionError) and isinstance(info.value, ValueError)
    return info.value


def test_ollama_bad_option_value():
    err = _refused(_ollama, lambda e: e.generate(MSGS, model="m", keep_alive="soon"), InvalidOptionValueError)
    assert (err.engine_id, err.option, err.value) == ("ollama", "keep_alive", "soon")
    assert str(err) == ("ollama: option 'keep_alive' = 'soon' is invalid: expected seconds (a number) or a duration "
                        'such as "5m", "1h", "-1"')


def test_cloud_bad_option_values():
    err = _refused(_cloud, lambda e: e.generate(MSGS, model="claude-x", tools=[TOOL], tool_choice="sometimes"),
                   InvalidOptionValueError)
    assert (err.option, err.value) == ("tool_choice", "sometimes")
    err = _refused(_cloud, lambda e: e.generate(MSGS, model="claude-x", stop=5), InvalidOptionValueError)
    assert err.option == "stop" and "must be a string or a list of strings, not int" in str(err)


def test_openai_compat_bad_tool_mode_and_conflicting_tool_options():
    err = _refused(lambda url: _vllm(url, tool_mode="json_schema"),
                   lambda e: e.generate(MSGS, model="m", tools=[TOOL], tool_mode="sideways"), InvalidOptionValueError)
    assert (err.engine_id, err.option, err.value) == ("vllm", "tool_mode", "sideways")
    both = _refused(lambda url: _vllm(url, tool_mode="json_schema"),
                    lambda e: e.generate(MSGS, model="m", tools=[TOOL], response_format={"type": "json_object"}),
                    ConflictingOptionsError)
    assert both.names == ("response_format", "tool_mode")
    assert str(both).startswith("vllm: options 'response_format' and 'tool_mode' cannot be used together: ")
    choice = _refused(lambda url: _vllm(url, tool_mode="json_schema"),
                      lambda e: e.generate(MSGS, model="m", tools=[TOOL],
                                           tool_choice={"type": "function", "function": {"name": "weather"}}),
                      ConflictingOptionsError)
    assert choice.names == ("tool_choice", "tools") and "weather" in str(choice)
