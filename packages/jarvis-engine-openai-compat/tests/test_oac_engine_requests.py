"""What the engines send and how they read replies, over httpx.MockTransport (the real engine code, no server)."""

from __future__ import annotations

import json
from typing import Any, Callable, Dict, List

import attrs
import httpx
import pytest

from jarvis_core.engine.base import SAMPLING_OPTIONS
from jarvis_core.engine.factory import create_engine
from jarvis_core.errors import (
    AuthenticationError,
    BadRequestError,
    ConfigError,
    ContextLengthError,
    EngineConnectionError,
    InvalidOptionError,
    ModelNotFoundError,
)
from jarvis_core.events import EventType
from jarvis_core.testing import RecordingBus, closed_port_url
from jarvis_core.tools import json_mode
from jarvis_engine_openai_compat.config import EmbeddedConfig, OpenAICompatConfig
from jarvis_engine_openai_compat.engines import (
    LlamaCppEngine,
    LMStudioEngine,
    OpenAICompatEngine,
    SGLangEngine,
    VLLMEngine,
)
from jarvis_engine_openai_compat.engines.base import LOCAL_SAMPLING, OPENAI_SAMPLING

ALL = [VLLMEngine, SGLangEngine, LlamaCppEngine, LMStudioEngine, OpenAICompatEngine]
MSGS = [{"role": "user", "content": "hi"}]
SECRET = "sk-test-SECRET-abcdef"


def reply(content="ok", **extra):
    return {"id": "c1", "model": "m", "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                                                   "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}, **extra}


class Recorder:
    """A MockTransport handler that records requests and answers from a script."""

    def __init__(self, answer: Callable[[httpx.Request, Any], httpx.Response]):
        self.answer = answer
        self.requests: List[httpx.Request] = []
        self.bodies: List[Any] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        body = json.loads(request.content) if request.content else None
        self.bodies.append(body)
        return self.answer(request, body)


def engine(cls=LlamaCppEngine, answer=None, **kw):
    rec = Recorder(answer or (lambda r, b: httpx.Response(200, json=reply())))
    t = httpx.MockTransport(rec)
    return cls(host=kw.pop("host", "http://srv:1/v1"), transport=t, async_transport=t, **kw), rec


def sse(*events: Dict[str, Any]) -> httpx.Response:
    body = "".join(f"data: {json.dumps(e)}\n\n" for e in events) + "data: [DONE]\n\n"
    return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=body.encode())


# -- hosts, registration, config ------------------------------------------------------------------
@pytest.mark.parametrize("cls, url", [(VLLMEngine, "http://localhost:8000"), (SGLangEngine, "http://localhost:30000"),
                                      (LlamaCppEngine, "http://localhost:8080"), (LMStudioEngine, "http://localhost:1234")])
def test_default_hosts(cls, url):
    assert cls().base_url == url


@pytest.mark.parametrize("given", ["http://h:9/v1", "http://h:9/v1/", "h:9", "http://h:9/"])
def test_trailing_v1_and_bare_host_are_accepted(given):
    e, rec = engine(host=given)
    e.generate(MSGS, model="m")
    assert e.base_url == "http://h:9" and str(rec.requests[0].url) == "http://h:9/v1/chat/completions"


def test_openai_compat_needs_an_address():
    with pytest.raises(ConfigError, match="no host given"):
        OpenAICompatEngine()


@pytest.mark.parametrize("key, cls", [("vllm", VLLMEngine), ("sglang", SGLangEngine), ("llamacpp", LlamaCppEngine),
                                      ("lmstudio", LMStudioEngine), ("openai-compat", OpenAICompatEngine)])
def test_registered_under_their_keys(key, cls):
    e = create_engine(key, host="http://x:1")
    assert type(e) is cls and e.engine_id == key


def test_config_fields_are_constructor_kwargs_and_feed_create_engine(tmp_path):
    import inspect

    for cls in ALL:
        params = inspect.signature(cls.__init__).parameters
        assert {f.name for f in attrs.fields(OpenAICompatConfig)} <= set(params), cls
    assert [f.name for f in attrs.fields(EmbeddedConfig)] == [
        "model_path", "binary_path", "slots", "ctx_per_slot", "threads", "max_tokens", "startup_timeout"]
    from jarvis_core.config import load_config

    path = tmp_path / "config.toml"
    path.write_text('[engine.vllm]\nhost = "http://gpu:8000/v1"\ntimeout = 9.5\ntool_mode = "json_schema"\n')
    cfg = load_config(path, environ={})
    e = create_engine("vllm", **cfg.engine_options("vllm"))
    assert (e.base_url, e.timeout, e.tool_mode) == ("http://gpu:8000", 9.5, "json_schema")
    cfg = load_config(path, environ={"VLLM_HOST": "http://other:8001"})
    assert create_engine("vllm", **cfg.engine_options("vllm")).base_url == "http://other:8001"


def test_bad_tool_mode_is_a_config_error():
    with pytest.raises(ConfigError, match="tool_mode"):
        VLLMEngine(tool_mode="magic")


# -- options and backend defaults ----------------------------------------------------------------------
@pytest.mark.parametrize("cls", ALL)
def test_unknown_option_is_named_and_nothing_is_sent(cls):
    e, rec = engine(cls)
    with pytest.raises(InvalidOptionError, match="frobnicate"):
        e.generate(MSGS, model="m", frobnicate=1)
    assert rec.requests == []


def test_min_p_is_not_an_lmstudio_option():
    e, _ = engine(LMStudioEngine)
    with pytest.raises(InvalidOptionError, match="min_p"):
        e.generate(MSGS, model="m", min_p=0.1)


def test_the_sampling_sets_are_the_core_sampling_fields():
    """OpenAI's own sampling fields and the local servers' extras split the core's one list; every engine
    takes each sampling field (temperature as a parameter) but what its server lacks (LM Studio: min_p), and
    backend defaults fill them all, except on a generic server (only OpenAI's own)."""
    assert OPENAI_SAMPLING <= SAMPLING_OPTIONS and OPENAI_SAMPLING | LOCAL_SAMPLING == SAMPLING_OPTIONS
    lacks = {VLLMEngine: set(), SGLangEngine: set(), LlamaCppEngine: set(), LMStudioEngine: {"min_p"}}
    for cls, missing in lacks.items():
        assert SAMPLING_OPTIONS - {"temperature"} - cls.allowed_options == missing, cls
        assert cls.default_sampling == SAMPLING_OPTIONS - missing, cls
    assert SAMPLING_OPTIONS - {"temperature"} <= OpenAICompatEngine.allowed_options
    assert OpenAICompatEngine.default_sampling == OPENAI_SAMPLING


def test_explicit_options_renamed_for_the_server():
    e, rec = engine(VLLMEngine)
    e.generate(MSGS, model="m", temperature=0, repeat_penalty=1.1, top_k=0, seed=3, stop=["\n"],
               chat_template_kwargs={"enable_thinking": False})
    sent = rec.bodies[0]
    assert sent["temperature"] == 0 and sent["repetition_penalty"] == 1.1 and "repeat_penalty" not in sent
    assert sent["top_k"] == -1 and sent["seed"] == 3 and sent["stop"] == ["\n"]
    assert sent["chat_template_kwargs"] == {"enable_thinking": False}
    e, rec = engine(LlamaCppEngine)
    e.generate(MSGS, model="m", repeat_penalty=1.1, top_k=-1)
    assert rec.bodies[0]["repeat_penalty"] == 1.1 and rec.bodies[0]["top_k"] == 0


def test_backend_defaults_fill_unset_sampling_per_server():
    e, rec = engine(VLLMEngine)
    e.generate(MSGS, model="Qwen/Qwen3-8B")
    sent = rec.bodies[0]
    assert (sent["temperature"], sent["top_p"], sent["top_k"], sent["min_p"]) == (0.6, 0.95, 20, 0)
    e, rec = engine(VLLMEngine)
    e.generate(MSGS, model="Qwen/Qwen3-8B", temperature=0.0, top_p=0.5)  # explicit values win, 0 included
    assert (rec.bodies[0]["temperature"], rec.bodies[0]["top_p"]) == (0.0, 0.5)
    e, rec = engine(OpenAICompatEngine)  # a generic server only gets OpenAI's own fields from defaults
    e.generate(MSGS, model="Qwen/Qwen3-8B")
    assert not {"top_k", "min_p", "repeat_penalty", "repetition_penalty"} & set(rec.bodies[0])
    e, rec = engine(OpenAICompatEngine)
    e.generate(MSGS, model="unknown-model")
    assert rec.bodies[0]["temperature"] == 0.7  # the engine default when nothing else says


def test_user_model_defaults_rank_above_family_defaults():
    e, rec = engine(VLLMEngine, model_defaults={"qwen3": {"temperature": 0.2}})
    e.generate(MSGS, model="Qwen/Qwen3-8B")
    assert rec.bodies[0]["temperature"] == 0.2


def test_inline_think_is_split_into_reasoning_for_reasoning_families():
    e, _ = engine(VLLMEngine, answer=lambda r, b: httpx.Response(200, json=reply("<think>hmm</think>Paris")))
    c = e.generate(MSGS, model="Qwen/Qwen3-8B")
    assert (c.reasoning, c.content) == ("hmm", "Paris")


async def test_inline_think_is_split_in_streams_too():
    chunks = [{"model": "q", "choices": [{"index": 0, "delta": {"content": p}}]} for p in ("<think>hm", "m</think>Pa", "ris")]
    e, _ = engine(VLLMEngine, answer=lambda r, b: sse(*chunks, {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}))
    out = [c async for c in e.stream_full(MSGS, model="Qwen/Qwen3-8B")]
    assert "".join(c.reasoning or "" for c in out) == "hmm" and "".join(c.content or "" for c in out) == "Paris"
    assert out[-1].finish_reason == "stop"


# -- tools dropped only when the server says so ----------------------------------------------------------
VLLM_NO_TOOLS = {"object": "error", "message": '"auto" tool choice requires --enable-auto-tool-choice and '
                 "--tool-call-parser to be set", "type": "BadRequestError", "param": None, "code": 400}
TOOL = {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {
    "city": {"type": "string"}}, "required": ["city"]}}}


def test_tools_dropped_after_the_server_says_it_has_no_tool_support():
    bus = RecordingBus()
    e, rec = engine(VLLMEngine, bus=bus, api_key=SECRET,
                    answer=lambda r, b: httpx.Response(400, json=VLLM_NO_TOOLS) if "tools" in b else
                    httpx.Response(200, json=reply("no tools then")))
    with pytest.warns(RuntimeWarning, match="without its 1 tool"):
        c = e.generate(MSGS, model="m", tools=[TOOL], tool_choice="auto")
    assert c.content == "no tools then" and c.metadata["tools_dropped"] is True
    assert "tools" in rec.bodies[0] and not {"tools", "tool_choice"} & set(rec.bodies[1])
    (event,) = bus.of_type(EventType.TOOLS_DROPPED)
    assert event.data["engine"] == "vllm" and event.data["tools"] == ["get_weather"]
    assert SECRET not in json.dumps(dict(event.data))
    with pytest.warns(RuntimeWarning):  # remembered: the next request goes out without tools at once
        e.generate(MSGS, model="m", tools=[TOOL])
    assert len(rec.requests) == 3 and "tools" not in rec.bodies[2]
    assert len(bus.of_type(EventType.TOOLS_DROPPED)) == 2


async def test_tools_dropped_in_a_stream_too():
    bus = RecordingBus()
    e, _rec = engine(VLLMEngine, bus=bus, answer=lambda r, b: httpx.Response(400, json=VLLM_NO_TOOLS) if "tools" in b
                    else sse({"model": "m", "choices": [{"index": 0, "delta": {"content": "hi"}, "finish_reason": "stop"}]}))
    with pytest.warns(RuntimeWarning):
        out = [c async for c in e.stream_full(MSGS, model="m", tools=[TOOL])]
    assert out[0].content == "hi" and out[-1].metadata["tools_dropped"] is True
    assert len(bus.of_type(EventType.TOOLS_DROPPED)) == 1


async def test_agenerate_drops_tools_the_same_way():
    bus = RecordingBus()
    e, rec = engine(VLLMEngine, bus=bus, answer=lambda r, b: httpx.Response(400, json=VLLM_NO_TOOLS) if "tools" in b
                    else httpx.Response(200, json=reply("no tools then")))
    with pytest.warns(RuntimeWarning, match="without its 1 tool"):
        c = await e.agenerate(MSGS, model="m", tools=[TOOL], tool_choice="auto")
    assert c.content == "no tools then" and c.metadata["tools_dropped"] is True
    assert "tools" in rec.bodies[0] and not {"tools", "tool_choice"} & set(rec.bodies[1])
    assert len(bus.of_type(EventType.TOOLS_DROPPED)) == 1


@pytest.mark.parametrize("status, body, error", [
    (400, {"error": {"message": "This model's maximum context length is 4096 tokens. However, you requested 5000 "
                                "tokens. Please reduce the length of the messages.", "code": 400}}, ContextLengthError),
    (400, {"error": {"code": 400, "message": "request (5031 tokens) exceeds the available context size (2048 tokens), "
                     "try increasing it", "type": "exceed_context_size_error"}}, ContextLengthError),  # llama.cpp
    (400, {"error": {"message": "tools must be a list", "code": 400}}, BadRequestError),
])
def test_other_400s_are_never_retried_without_tools(status, body, error):
    bus = RecordingBus()
    e, rec = engine(VLLMEngine, bus=bus, answer=lambda r, b: httpx.Response(status, json=body))
    with pytest.raises(error) as info:
        e.generate(MSGS, model="m", tools=[TOOL])
    assert type(info.value) is error and len(rec.requests) == 1 and bus.events == []


def test_llamacpp_without_jinja_counts_as_no_tool_support():
    e, _rec = engine(LlamaCppEngine, tool_mode="native", answer=lambda r, b: httpx.Response(
        400, json={"error": {"code": 400, "message": "tools param requires --jinja flag"}})
        if "tools" in b else httpx.Response(200, json=reply()))
    with pytest.warns(RuntimeWarning):
        assert e.generate(MSGS, model="m", tools=[TOOL]).content == "ok"


# -- which answers the family's parsers post-process (ModelAdapter.needs_postprocessing, as ollama) -------
LLAMA_CALL = '{"name": "get_weather", "parameters": {"city": "Tokyo"}}'
HARMONY_CALL = ("<|channel|>analysis<|message|>Need weather.<|end|><|start|>assistant to=functions.get_weather"
                '<|channel|>commentary json<|message|>{"city": "Tokyo"}<|call|>')


def stream_of(*pieces: str) -> httpx.Response:
    chunks = [{"model": "m", "choices": [{"index": 0, "delta": {"content": p}}]} for p in pieces]
    return sse(*chunks, {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})


async def test_a_reasoning_only_family_is_post_processed_without_tools():
    e, _ = engine(VLLMEngine, answer=lambda r, b: httpx.Response(200, json=reply("<think>hmm</think>Paris")))
    c = e.generate(MSGS, model="QwQ-32B")  # a reasoning parser, no tool parser
    assert (c.reasoning, c.content) == ("hmm", "Paris")
    e, _ = engine(VLLMEngine, answer=lambda r, b: stream_of("<think>hm", "m</think>Pa", "ris"))
    out = [c async for c in e.stream_full(MSGS, model="QwQ-32B")]
    assert "".join(c.reasoning or "" for c in out) == "hmm" and "".join(c.content or "" for c in out) == "Paris"


async def test_a_tool_parser_runs_only_with_tools():
    e, _ = engine(VLLMEngine, answer=lambda r, b: httpx.Response(200, json=reply(LLAMA_CALL)))
    plain = e.generate(MSGS, model="llama3.1:8b")  # a tool parser (llama3_json), no tools offered
    assert plain.content == LLAMA_CALL and plain.tool_calls == () and plain.finish_reason == "stop"
    called = e.generate(MSGS, model="llama3.1:8b", tools=[TOOL])
    assert [(t.name, json.loads(t.arguments)) for t in called.tool_calls] == [("get_weather", {"city": "Tokyo"})]
    assert called.content is None and called.finish_reason == "tool_calls"
    # Streamed without tools, each delta passes at once: no parser holds back text that looks like a call.
    pieces = ('{"name": "get_weather", ', '"parameters": {"city": ', '"Tokyo"}}')
    e, _ = engine(VLLMEngine, answer=lambda r, b: stream_of(*pieces))
    out = [c async for c in e.stream_full(MSGS, model="llama3.1:8b")]
    assert [c.content for c in out if c.content] == list(pieces) and not any(c.tool_calls for c in out)


async def test_a_format_that_is_always_parsed_is_parsed_without_tools():
    e, _ = engine(VLLMEngine, answer=lambda r, b: httpx.Response(200, json=reply(HARMONY_CALL)))
    c = e.generate(MSGS, model="gpt-oss-20b")  # Harmony: the message structure itself, tools or not
    assert c.reasoning == "Need weather." and c.content is None
    assert [(t.name, json.loads(t.arguments)) for t in c.tool_calls] == [("get_weather", {"city": "Tokyo"})]
    e, _ = engine(VLLMEngine, answer=lambda r, b: stream_of(HARMONY_CALL[:40], HARMONY_CALL[40:]))
    out = [c async for c in e.stream_full(MSGS, model="gpt-oss-20b")]
    assert [t.name for c in out for t in c.tool_calls] == ["get_weather"]
    assert "<|channel|>" not in "".join(c.content or "" for c in out)


# -- constrained (json_schema) tool mode ---------------------------------------------------------------
def test_json_schema_mode_sends_a_schema_instead_of_tools():
    call = json.dumps({"name": "get_weather", "arguments": {"city": "Paris"}})
    e, rec = engine(VLLMEngine, tool_mode="json_schema", answer=lambda r, b: httpx.Response(200, json=reply(call)))
    history = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "weather?"},
               {"role": "assistant", "content": None, "tool_calls": [
                   {"id": "c0", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Rome"}'}}]},
               {"role": "tool", "tool_call_id": "c0", "name": "get_weather", "content": "sunny"},
               {"role": "user", "content": "and Paris?"}]
    c = e.generate(history, model="m", tools=[TOOL])
    sent = rec.bodies[0]
    assert "tools" not in sent and "tool_choice" not in sent
    schema = sent["response_format"]["json_schema"]["schema"]
    assert sent["response_format"]["type"] == "json_schema"
    assert [b["properties"].get("name", {}).get("const") for b in schema["anyOf"]] == ["get_weather", None]
    # The tool's own schema, with its strings bounded as the agents' structured mode bounds them.
    assert schema["anyOf"][0]["properties"]["arguments"] == json_mode.bound_strings(
        TOOL["function"]["parameters"], json_mode.DEFAULT_MAX_STRING_LENGTH)
    roles = [m["role"] for m in sent["messages"]]
    assert roles == ["system", "user", "assistant", "user", "user"]  # history rewritten for a tool-less template
    assert sent["messages"][0]["content"].startswith("Be brief.") and "get_weather" in sent["messages"][0]["content"]
    assert json.loads(sent["messages"][2]["content"]) == {"name": "get_weather", "arguments": {"city": "Rome"}}
    assert c.content is None and c.finish_reason == "tool_calls" and c.metadata["tool_mode"] == "json_schema"
    (tc,) = c.tool_calls
    assert tc.name == "get_weather" and json.loads(tc.arguments) == {"city": "Paris"} and tc.id.startswith("call_")


def test_json_schema_mode_rewrites_tool_history_on_a_request_without_tools():
    """An agent's answer turn offers no tools, but the history holds calls and results that a template
    without tool support cannot render: they go as text, with no schema and no tool note."""
    e, rec = engine(VLLMEngine, tool_mode="json_schema", answer=lambda r, b: httpx.Response(200, json=reply("391")))
    history = [{"role": "user", "content": "17*23?"},
               {"role": "assistant", "content": None, "tool_calls": [
                   {"id": "c0", "type": "function", "function": {"name": "calc", "arguments": '{"e": "17*23"}'}}]},
               {"role": "tool", "tool_call_id": "c0", "name": "calc", "content": "391"}]
    c = e.generate(history, model="m")
    sent = rec.bodies[0]
    assert [m["role"] for m in sent["messages"]] == ["user", "assistant", "user"]
    assert sent["messages"][2]["content"] == "Result of calc: 391"
    assert "response_format" not in sent and "tools" not in sent
    assert c.content == "391" and "tool_mode" not in c.metadata
    e.generate([{"role": "user", "content": "hi"}], model="m")
    assert rec.bodies[1]["messages"] == [{"role": "user", "content": "hi"}]  # no tool history: untouched


def test_json_schema_mode_required_and_forced_choices():
    e, rec = engine(VLLMEngine, tool_mode="json_schema",
                    answer=lambda r, b: httpx.Response(200, json=reply('{"name": "get_weather", "arguments": {}}')))
    e.generate(MSGS, model="m", tools=[TOOL], tool_choice="required")
    assert rec.bodies[0]["response_format"]["json_schema"]["schema"]["properties"]["name"] == {"const": "get_weather"}
    e.generate(MSGS, model="m", tools=[TOOL], tool_choice={"type": "function", "function": {"name": "get_weather"}})
    assert "anyOf" not in rec.bodies[1]["response_format"]["json_schema"]["schema"]
    e.generate(MSGS, model="m", tools=[TOOL], tool_choice="none")
    assert set(rec.bodies[2]["response_format"]["json_schema"]["schema"]["properties"]) == {"content"}
    with pytest.raises(InvalidOptionError, match="response_format"):
        e.generate(MSGS, model="m", tools=[TOOL], response_format={"type": "json_object"})


def test_json_schema_mode_bounds_every_string_so_the_json_closes_within_max_tokens():
    e, rec = engine(VLLMEngine, tool_mode="json_schema", answer=lambda r, b: httpx.Response(200, json=reply("{}")))
    e.generate(MSGS, model="m", tools=[TOOL], max_tokens=200)
    call, answer = rec.bodies[0]["response_format"]["json_schema"]["schema"]["anyOf"]
    assert call["properties"]["arguments"]["properties"]["city"]["maxLength"] == json_mode.DEFAULT_MAX_STRING_LENGTH
    assert answer["properties"]["content"]["maxLength"] == 200 - json_mode.ANSWER_OVERHEAD_TOKENS
    assert "maxLength" not in TOOL["function"]["parameters"]["properties"]["city"]  # the caller's tool is untouched


def test_json_schema_mode_tool_choice_none_is_a_constrained_answer_without_the_tool_note():
    """An agent's constrained answer turn through tool_mode: the schema admits only {"content": ...}, the
    system message does not invite a call, and the reply comes back as plain content."""
    e, rec = engine(VLLMEngine, tool_mode="json_schema",
                    answer=lambda r, b: httpx.Response(200, json=reply('{"content": "It is 391."}')))
    history = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "17*23?"},
               {"role": "assistant", "content": None, "tool_calls": [
                   {"id": "c0", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "x"}'}}]},
               {"role": "tool", "tool_call_id": "c0", "name": "get_weather", "content": "391"}]
    c = e.generate(history, model="m", tools=[TOOL], tool_choice="none", max_tokens=64)
    sent = rec.bodies[0]
    schema = sent["response_format"]["json_schema"]["schema"]
    assert schema["properties"] == {"content": {"type": "string", "maxLength": 64 - json_mode.ANSWER_OVERHEAD_TOKENS}}
    assert "tools" not in sent and "tool_choice" not in sent
    assert sent["messages"][0] == {"role": "system", "content": "Be brief."}  # no tool note
    assert sent["messages"][-1]["content"] == "Result of get_weather: 391"
    assert (c.content, c.tool_calls, c.finish_reason) == ("It is 391.", (), "stop")


@pytest.mark.parametrize("text, content, diag", [
    ('{"content": "It is sunny."}', "It is sunny.", None),
    ('{"name": "get_wea', '{"name": "get_wea', "not valid JSON"),
    ('{"name": "other", "arguments": {}}', '{"name": "other", "arguments": {}}', "unknown tool"),
])
def test_json_schema_mode_never_raises_on_model_output(text, content, diag):
    e, _ = engine(VLLMEngine, tool_mode="json_schema", answer=lambda r, b: httpx.Response(200, json=reply(text)))
    c = e.generate(MSGS, model="m", tools=[TOOL])
    assert c.content == content and c.tool_calls == ()
    if diag:
        assert diag in c.metadata["parser_diagnostics"][0]


@pytest.mark.parametrize("caps, mode", [({"supports_tools": False, "supports_tool_calls": False}, "json_schema"),
                                        ({"supports_tools": True, "supports_tool_calls": True}, "native"),
                                        (None, "native")])
def test_llamacpp_auto_mode_asks_the_server(caps, mode):
    def answer(request, body):
        if request.url.path == "/props":
            return httpx.Response(404) if caps is None else httpx.Response(200, json={"chat_template_caps": caps})
        return httpx.Response(200, json=reply('{"content": "x"}'))

    e, rec = engine(LlamaCppEngine, answer=answer)
    e.generate(MSGS, model="m", tools=[TOOL])
    e.generate(MSGS, model="m", tools=[TOOL])
    sent = rec.bodies[-1]
    assert ("tools" in sent) is (mode == "native") and ("response_format" in sent) is (mode == "json_schema")
    assert [r.url.path for r in rec.requests].count("/props") == (1 if caps else 2)  # a yes/no answer is kept


# -- management --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("cls, path", [(VLLMEngine, "/health"), (SGLangEngine, "/health"), (LlamaCppEngine, "/health"),
                                       (LMStudioEngine, "/v1/models"), (OpenAICompatEngine, "/v1/models")])
def test_health_probes_the_right_path(cls, path):
    e, rec = engine(cls, answer=lambda r, b: httpx.Response(200, json={"status": "ok", "data": []}))
    assert e.health() is True and rec.requests[0].url.path == path


def test_llamacpp_loading_is_not_healthy_and_refused_is_false():
    e, _ = engine(LlamaCppEngine, answer=lambda r, b: httpx.Response(
        503, json={"error": {"code": 503, "message": "Loading model", "type": "unavailable_error"}}))
    assert e.health() is False
    refused = LlamaCppEngine(host=closed_port_url())
    assert refused.health() is False
    with pytest.raises(EngineConnectionError):
        refused.list_models()


def test_list_models_and_prepare():
    e, _ = engine(VLLMEngine, answer=lambda r, b: httpx.Response(200, json={"object": "list", "data": [
        {"id": "Qwen/Qwen3-8B", "object": "model"}, {"id": "other"}]}))
    assert e.list_models() == ["Qwen/Qwen3-8B", "other"]
    e.prepare("other")
    with pytest.raises(ModelNotFoundError, match="Qwen/Qwen3-8B, other"):
        e.prepare("missing")


def test_lmstudio_prepare_loads_the_model_with_one_token():
    def answer(request, body):
        if request.method == "GET":
            return httpx.Response(200, json={"data": [{"id": "qwen3-8b"}]})
        return httpx.Response(200, json=reply("h"))

    e, rec = engine(LMStudioEngine, answer=answer)
    e.prepare("qwen3-8b")
    assert rec.bodies[-1]["max_tokens"] == 1 and rec.bodies[-1]["model"] == "qwen3-8b"


def test_api_key_is_sent_but_never_shown():
    e, rec = engine(VLLMEngine, api_key=SECRET, answer=lambda r, b: httpx.Response(
        401, json={"error": {"message": "Unauthorized", "code": 401}}))
    with pytest.raises(AuthenticationError) as info:
        e.generate(MSGS, model="m")
    assert rec.requests[0].headers["authorization"] == f"Bearer {SECRET}"
    assert SECRET not in str(info.value) and SECRET not in repr(e)
    assert SECRET not in repr(OpenAICompatConfig(host="h", api_key=SECRET))
