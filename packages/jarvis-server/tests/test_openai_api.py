"""The OpenAI-compatible API, driven by the official ``openai`` SDK against a real uvicorn server on a free
loopback port, over a scripted engine (:class:`jarvis_core.testing.FakeEngine`)."""

from __future__ import annotations

import asyncio
import threading

import httpx
import openai
import pytest

from jarvis_core import errors as E
from jarvis_core.engine.base import InferenceEngine
from jarvis_core.testing import FakeEngine
from jarvis_core.types import Completion, Role, StreamChunk, ToolCall, Usage

CALC = {"type": "function", "function": {"name": "calculator", "description": "evaluate arithmetic",
        "parameters": {"type": "object", "properties": {"expression": {"type": "string"}}, "required": ["expression"]}}}
CALL = ToolCall("call_1", "calculator", '{"expression": "17*23"}')
ASK = [{"role": "user", "content": "What is 17*23?"}]


def client(server, **kw) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.url + "/v1", api_key=kw.pop("api_key", "unused"), max_retries=0, **kw)


def test_tool_call_then_replay_with_content_none(serve):
    engine = FakeEngine([Completion(tool_calls=[CALL], usage=Usage(20, 7)), Completion(content="391", usage=Usage(30, 2))],
                        allowed_options={"tool_choice"})
    c = client(serve(engine))
    first = c.chat.completions.create(model="fake-model", messages=ASK, tools=[CALC], tool_choice="auto")
    choice = first.choices[0]
    assert choice.finish_reason == "tool_calls"  # the engine said "stop" with calls: normalised
    assert choice.message.content is None
    assert [(t.id, t.function.name, t.function.arguments) for t in choice.message.tool_calls] == [
        ("call_1", "calculator", '{"expression": "17*23"}')]
    assert first.usage.prompt_tokens == 20 and first.usage.total_tokens == 27
    assert engine.calls[0].tools == [CALC] and engine.calls[0].options == {"tool_choice": "auto"}

    replay = [*ASK, choice.message.model_dump(exclude_none=True) | {"content": None},
              {"role": "tool", "tool_call_id": "call_1", "content": "391"}]
    second = c.chat.completions.create(model="fake-model", messages=replay, tools=[CALC])
    assert second.choices[0].message.content == "391" and second.choices[0].finish_reason == "stop"
    sent = engine.calls[1].messages
    assert [m.role for m in sent] == [Role.USER, Role.ASSISTANT, Role.TOOL]
    assert sent[1].content is None and sent[1].tool_calls == (CALL,)
    assert sent[2].tool_call_id == "call_1" and sent[2].content == "391"


def test_stream_with_include_usage_ends_with_a_usage_only_chunk(serve):
    engine = FakeEngine([[StreamChunk(content="Par"), StreamChunk(content="is"),
                          StreamChunk(finish_reason="stop", usage=Usage(9, 2))]])
    chunks = list(client(serve(engine)).chat.completions.create(
        model="fake-model", messages=ASK, stream=True, stream_options={"include_usage": True}))
    assert chunks[0].choices[0].delta.role == "assistant"
    assert "".join(ch.choices[0].delta.content or "" for ch in chunks if ch.choices) == "Paris"
    assert [ch.choices[0].finish_reason for ch in chunks if ch.choices][-1] == "stop"
    last = chunks[-1]
    assert last.choices == [] and last.usage.prompt_tokens == 9 and last.usage.completion_tokens == 2
    assert all(ch.usage is None for ch in chunks[:-1])
    assert len({ch.id for ch in chunks}) == 1


def test_stream_without_include_usage_has_no_usage_chunk(serve):
    engine = FakeEngine([[StreamChunk(content="ok"), StreamChunk(finish_reason="length", usage=Usage(1, 1))]])
    chunks = list(client(serve(engine)).chat.completions.create(model="fake-model", messages=ASK, stream=True))
    assert all(ch.choices for ch in chunks)
    assert chunks[-1].choices[0].finish_reason == "length"


def test_streamed_tool_calls_are_openai_deltas(serve):
    other = ToolCall("call_2", "calculator", '{"expression": "1+1"}')
    engine = FakeEngine([[StreamChunk(tool_calls=[CALL, other], finish_reason="tool_calls", usage=Usage(3, 4))]])
    chunks = list(client(serve(engine)).chat.completions.create(model="fake-model", messages=ASK, tools=[CALC], stream=True))
    deltas = [tc for ch in chunks if ch.choices for tc in (ch.choices[0].delta.tool_calls or [])]
    assert [(d.index, d.id, d.type, d.function.name, d.function.arguments) for d in deltas] == [
        (0, "call_1", "function", "calculator", '{"expression": "17*23"}'),
        (1, "call_2", "function", "calculator", '{"expression": "1+1"}'),
    ]
    assert chunks[-1].choices[0].finish_reason == "tool_calls"


@pytest.mark.parametrize(
    ("error", "sdk_error", "status"),
    [
        (E.ModelNotFoundError("no such model 'x'", status_code=404), openai.NotFoundError, 404),
        (E.RateLimitError("slow down", status_code=429, retry_after=3), openai.RateLimitError, 429),
        (E.AuthenticationError("the engine rejected its key", status_code=401), openai.AuthenticationError, 401),
        (E.ContextLengthError("prompt too long", status_code=400), openai.BadRequestError, 400),
        (E.EngineConnectionError("cannot reach http://127.0.0.1:9"), openai.InternalServerError, 503),
        (E.EngineTimeoutError("timed out after 5s", phase="read", timeout=5.0), openai.InternalServerError, 504),
        (E.ServerError("upstream 500", status_code=500), openai.InternalServerError, 502),
    ],
)
@pytest.mark.parametrize("stream", [False, True])
def test_engine_errors_reach_the_sdk_as_the_matching_exception(serve, error, sdk_error, status, stream):
    engine = FakeEngine([error] if not stream else [[error]])
    with pytest.raises(sdk_error) as info:
        client(serve(engine)).chat.completions.create(model="fake-model", messages=ASK, stream=stream)
    assert info.value.status_code == status
    assert info.value.body["message"] == str(error) and info.value.body["type"]


def test_a_real_engine_timeout_is_a_504_gateway_timeout(serve):
    """A real HTTP engine whose server never answers: the SDK gets a 504 (``InternalServerError``; its own
    ``APITimeoutError`` is only for the client's timeout), coded ``engine_timeout``, naming what timed out."""
    from jarvis_core.testing import Exchange, ReplayServer

    engines = pytest.importorskip("jarvis_engine_openai_compat.engines")
    with ReplayServer([Exchange("*", None, hang=True)]) as upstream:
        engine = engines.LlamaCppEngine(host=upstream.url, timeout=0.3)
        server = serve(engine, model="m")
        with pytest.raises(openai.InternalServerError) as info:
            client(server).chat.completions.create(model="m", messages=ASK)
        raw = httpx.post(server.url + "/v1/chat/completions", json={"model": "m", "messages": ASK})
    assert info.value.status_code == 504 and not isinstance(info.value, openai.APITimeoutError)
    assert info.value.body["code"] == "engine_timeout"
    assert "timed out after 0.3s waiting for an answer from" in info.value.body["message"]
    assert raw.status_code == 504 and raw.json()["error"]["type"] == "server_error"


def test_rate_limit_carries_retry_after(serve):
    server = serve(FakeEngine([E.RateLimitError("slow down", status_code=429, retry_after=3)]))
    r = httpx.post(server.url + "/v1/chat/completions", json={"model": "m", "messages": ASK})
    assert r.status_code == 429 and r.headers["retry-after"] == "3"
    assert r.json()["error"]["code"] == "rate_limit_exceeded"


def test_error_after_the_first_byte_is_an_sse_error_event(serve):
    engine = FakeEngine([[StreamChunk(content="partial"), E.StreamError("the connection broke off")]] * 2)
    server = serve(engine)
    received = []
    with pytest.raises(openai.APIError) as info:
        for chunk in client(server).chat.completions.create(model="fake-model", messages=ASK, stream=True):
            received.append(chunk)
    assert "the connection broke off" in str(info.value.message)
    assert [c.choices[0].delta.content for c in received] == ["", "partial"]
    assert all(c.choices[0].finish_reason is None for c in received)  # never a fake "stop"
    raw = httpx.post(server.url + "/v1/chat/completions", json={"model": "m", "messages": ASK, "stream": True})
    assert raw.status_code == 200
    events = raw.text.strip().split("\n\n")
    assert events[-1].startswith("event: error\ndata: {\"error\":")
    assert "[DONE]" not in raw.text and '"finish_reason":"stop"' not in raw.text


class _Endless(InferenceEngine):
    """Streams ``first``, then a dot every 20 ms until its stream is closed (which it records)."""

    engine_id = "endless"

    def __init__(self) -> None:
        self.closed = threading.Event()

    def generate(self, messages, **kwargs):  # pragma: no cover - streams only
        raise AssertionError("not called")

    async def stream_full(self, messages, **kwargs):
        try:
            yield StreamChunk(content="first")
            while True:
                await asyncio.sleep(0.02)
                yield StreamChunk(content=".")
        finally:
            self.closed.set()

    def list_models(self):
        return ["m"]

    def health(self):
        return True


def test_a_client_that_disconnects_mid_stream_stops_the_engine_stream(serve):
    engine = _Endless()
    server = serve(engine)
    body = {"model": "m", "messages": ASK, "stream": True}
    with httpx.stream("POST", server.url + "/v1/chat/completions", json=body, timeout=10) as r:
        for line in r.iter_lines():
            if "first" in line:
                break
    assert engine.closed.wait(10), "the engine's stream was not closed after the client left"
    assert httpx.get(server.url + "/health").status_code == 200  # the server carries on


def test_request_fields_reach_the_engine_unchanged(serve):
    engine = FakeEngine(["ok"], allowed_options={"stop", "seed", "top_p", "response_format"})
    c = client(serve(engine))
    fmt = {"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "object"}}}
    c.chat.completions.create(model="fake-model", messages=ASK, max_tokens=50, stop=["\n"], seed=7, top_p=0.5,
                              temperature=0, response_format=fmt)
    call = engine.calls[0]
    assert call.max_tokens == 50 and call.temperature == 0.0
    assert call.options == {"stop": ["\n"], "seed": 7, "top_p": 0.5, "response_format": fmt}


def test_max_completion_tokens_and_the_server_default(serve):
    engine = FakeEngine(["a", "b"])
    c = client(serve(engine, default_max_tokens=77))
    c.chat.completions.create(model="fake-model", messages=ASK, max_completion_tokens=5000)
    c.chat.completions.create(model="fake-model", messages=ASK)
    assert [call.max_tokens for call in engine.calls] == [5000, 77]


def test_content_parts_and_developer_role(serve):
    engine = FakeEngine(["ok"])
    client(serve(engine)).chat.completions.create(model="fake-model", messages=[
        {"role": "developer", "content": "Be brief."},
        {"role": "user", "content": [{"type": "text", "text": "What is "}, {"type": "text", "text": "2+2?"}]},
    ])
    sent = engine.calls[0].messages
    assert [(m.role, m.content) for m in sent] == [(Role.SYSTEM, "Be brief."), (Role.USER, "What is 2+2?")]


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"response_format": {"type": "json_object"}}, "response_format"),  # the engine does not allow it
        ({"parallel_tool_calls": False}, "parallel_tool_calls"),
        ({"frobnicate": 1}, "frobnicate"),
        ({"messages": [{"role": "user", "content": [{"type": "input_audio", "input_audio": {"data": "x"}}]}]},
         "messages[0].content[0].type"),
        ({"messages": [{"role": "wizard", "content": "hi"}]}, "messages[0].role"),
        ({"messages": [{"role": "user", "content": None}]}, "messages[0].content"),
        ({"max_tokens": 0}, "max_tokens"),
        ({"n": 2}, "n"),
        ({"stream_options": {"include_usage": True}}, "stream_options"),
    ],
)
def test_bad_requests_are_400s_naming_the_field(serve, body, param):
    engine = FakeEngine([])
    server = serve(engine)
    payload = {"model": "m", "messages": ASK, **body}
    r = httpx.post(server.url + "/v1/chat/completions", json=payload)
    assert r.status_code == 400, r.text
    err = r.json()["error"]
    assert err["param"] == param and err["type"] == "invalid_request_error"
    assert engine.calls == []  # refused before the engine was called


def test_invalid_json_body(serve):
    server = serve(FakeEngine([]))
    r = httpx.post(server.url + "/v1/chat/completions", content=b"{nope", headers={"content-type": "application/json"})
    assert r.status_code == 400 and "not valid JSON" in r.json()["error"]["message"]


def test_models_and_health(serve):
    server = serve(FakeEngine([], models=["other", "fake-model"]))
    models = client(server).models.list()
    assert [m.id for m in models.data] == ["fake-model", "other"]
    assert all(m.owned_by == "fake" for m in models.data)
    health = httpx.get(server.url + "/health")
    assert health.status_code == 200 and health.json() == {"status": "ok", "engine": "fake", "model": "fake-model"}
    sick = serve(FakeEngine([], healthy=False))
    assert httpx.get(sick.url + "/health").status_code == 503


def test_unexpected_errors_do_not_leak_their_text(serve, caplog):
    server = serve(FakeEngine([RuntimeError("connect failed with key sk-live-0123456789")]))
    r = httpx.post(server.url + "/v1/chat/completions", json={"model": "m", "messages": ASK})
    assert r.status_code == 500 and r.json()["error"]["code"] == "internal_error"
    assert "sk-live" not in r.text and "RuntimeError" in r.json()["error"]["message"]


class _Gate(InferenceEngine):
    """Counts the non-streamed calls in flight, the most at once, and on which kind of path they ran. Each
    call waits until ``wanted`` calls are in flight (or ``patience`` seconds pass), so a bound shows."""

    engine_id = "gate"

    def __init__(self, wanted: int, patience: float = 1.5) -> None:
        self.wanted, self.patience = wanted, patience
        self.lock = threading.Lock()
        self.in_flight = self.most = 0
        self.paths: list = []
        self.all_in = threading.Event()

    def _enter(self, path: str) -> None:
        with self.lock:
            self.paths.append(path)
            self.in_flight += 1
            self.most = max(self.most, self.in_flight)
            if self.in_flight >= self.wanted:
                self.all_in.set()

    def _leave(self) -> Completion:
        with self.lock:
            self.in_flight -= 1
        return Completion(content="ok", finish_reason="stop", usage=Usage(1, 1))

    def generate(self, messages, **kwargs):
        self._enter("thread")
        self.all_in.wait(self.patience)
        return self._leave()

    def list_models(self):
        return ["m"]

    def health(self):
        return True


class _AsyncGate(_Gate):
    async def agenerate(self, messages, **kwargs):
        self._enter("async")
        deadline = asyncio.get_running_loop().time() + self.patience
        while not self.all_in.is_set() and asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(0.01)
        return self._leave()


async def _post_all(url: str, n: int) -> list:
    async with httpx.AsyncClient(timeout=30, limits=httpx.Limits(max_connections=n)) as c:
        body = {"model": "m", "messages": ASK}
        replies = await asyncio.gather(*(c.post(url + "/v1/chat/completions", json=body) for _ in range(n)))
    return [r.json()["choices"][0]["message"]["content"] for r in replies]


def test_non_streamed_requests_use_the_engines_async_path_and_no_thread(serve):
    # threads=1: were the requests run in worker threads, one at a time would be in flight
    engine = _AsyncGate(wanted=12)
    server = serve(engine, threads=1)
    assert asyncio.run(_post_all(server.url, 12)) == ["ok"] * 12
    assert engine.paths == ["async"] * 12
    assert engine.most == 12


def test_an_engine_without_an_async_client_runs_in_threads_within_the_servers_bound(serve):
    engine = _Gate(wanted=6, patience=0.3)
    server = serve(engine, threads=3)
    assert asyncio.run(_post_all(server.url, 6)) == ["ok"] * 6
    assert engine.paths == ["thread"] * 6
    assert engine.most == 3  # the server's bound, not anyio's default of 40
