"""The engine conformance suite, run against a small but real OpenAI-style HTTPEngine.

The engine here is the worked example of docs/testing-plugins.md: it passes the suite, and deliberately
broken variants of it fail exactly the checks that describe their bug (so the suite can fail).
"""

from __future__ import annotations

import json
import pathlib
from typing import Any, AsyncIterator, Dict, List, Optional

import pytest

from jarvis_core.engine.http import HTTPEngine
from jarvis_core.engine.messages import messages_to_dicts, tools_to_openai
from jarvis_core.engine.streams import SSEByteDecoder, decode_json
from jarvis_core.errors import StreamError
from jarvis_core.testing import (
    EngineConformance,
    Exchange,
    LiveServer,
    ReplayServer,
    exchanges_from_transcripts,
    load_transcripts,
    run_engine_conformance,
)
from jarvis_core.types import Completion, StreamChunk, ToolCall, Usage, normalize_finish_reason

#: Recordings of real servers that several packages' tests replay, kept once at the repository's tests/data.
DATA = pathlib.Path(__file__).resolve().parents[3] / "tests" / "data"


class MiniOpenAIEngine(HTTPEngine):
    require_finish = True
    """Just enough of the OpenAI chat protocol to be a correct engine."""

    engine_id = "mini-openai"
    allowed_options = frozenset({"top_p", "seed"})
    health_path = "/health"
    strip_suffix = "/v1"

    def _body(self, messages, model, temperature, max_tokens, tools, options, stream) -> Dict[str, Any]:
        self.check_options(options)
        body: Dict[str, Any] = {
            "model": model, "messages": messages_to_dicts(messages), "max_tokens": max_tokens, "stream": stream,
            **options,
        }
        if temperature is not None:
            body["temperature"] = temperature
        if tools:
            body["tools"] = tools_to_openai(tools)
        return body

    def generate(self, messages, *, model, temperature=None, max_tokens=1024, tools=None, **options) -> Completion:
        body = self._body(messages, model, temperature, max_tokens, tools, options, False)
        data = self.request_json("POST", "/v1/chat/completions", json_body=body, model=model)
        choice = data["choices"][0]
        msg = choice["message"]
        calls = [
            ToolCall(c["id"], c["function"]["name"], c["function"]["arguments"]) for c in msg.get("tool_calls") or ()
        ]
        usage = data.get("usage") or {}
        return Completion(
            content=msg.get("content"),
            tool_calls=calls,
            usage=Usage(usage.get("prompt_tokens", 0), usage.get("completion_tokens", 0)),
            model=data.get("model", model),
            finish_reason=normalize_finish_reason(choice.get("finish_reason"), has_tool_calls=bool(calls)),
        )

    async def stream_full(
        self, messages, *, model, temperature=None, max_tokens=1024, tools=None, **options
    ) -> AsyncIterator[StreamChunk]:
        body = self._body(messages, model, temperature, max_tokens, tools, options, True)
        calls: Dict[int, Dict[str, str]] = {}
        finish: Optional[str] = None
        usage: Optional[Usage] = None
        sse = SSEByteDecoder(until_done=True)
        async with self.astream_batches("POST", "/v1/chat/completions", sse, json_body=body, model=model) as batches:
            async for batch in batches:
                for data in batch:
                    payload = decode_json(data, engine_id=self.engine_id)
                    if payload.get("usage"):
                        u = payload["usage"]
                        usage = Usage(u.get("prompt_tokens", 0), u.get("completion_tokens", 0))
                    for choice in payload.get("choices") or ():
                        delta = choice.get("delta") or {}
                        for tc in delta.get("tool_calls") or ():
                            slot = calls.setdefault(tc["index"], {"id": "", "name": "", "arguments": ""})
                            slot["id"] = tc.get("id") or slot["id"]
                            fn = tc.get("function") or {}
                            slot["name"] += fn.get("name") or ""
                            slot["arguments"] += fn.get("arguments") or ""
                        if delta.get("content"):
                            yield StreamChunk(content=delta["content"])
                        finish = choice.get("finish_reason") or finish
        if finish is None and self.require_finish:
            raise StreamError("mini: the stream ended before the server finished the answer", engine_id=self.engine_id)
        done = [ToolCall(c["id"], c["name"], c["arguments"] or "{}") for _, c in sorted(calls.items())]
        yield StreamChunk(
            tool_calls=done, finish_reason=normalize_finish_reason(finish, has_tool_calls=bool(done)), usage=usage
        )

    def list_models(self) -> List[str]:
        return [m["id"] for m in self.request_json("GET", "/v1/models")["data"]]


def _completion_json(content=None, tool_calls=None, finish="stop") -> Dict[str, Any]:
    message: Dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = tool_calls
    return {
        "id": "chatcmpl-1", "object": "chat.completion", "model": "gpt-4o-mini",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": 20, "completion_tokens": 7, "total_tokens": 27},
    }


TOOL_CALL_JSON = {
    "id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": '{"location": "Paris"}'}
}
SSE = load_transcripts(DATA / "openai_sse_transcripts.json")
TEXT_STREAM = exchanges_from_transcripts(SSE, ["synthetic_sse_framing"], match_body={"stream": True})
TOOL_STREAM = exchanges_from_transcripts(SSE, ["openai_single_tool_call_split"], match_body={"stream": True})

EXCHANGES: Dict[str, List[Exchange]] = {
    "text": [
        *TEXT_STREAM,
        Exchange("POST", "/v1/chat/completions", match={"stream": False}, json=_completion_json("ok")),
    ],
    "tools": [
        *TOOL_STREAM,
        Exchange(
            "POST", "/v1/chat/completions", match={"stream": False},
            json=_completion_json(None, [TOOL_CALL_JSON], "tool_calls"),
        ),
    ],
    "models": [
        Exchange("GET", "/v1/models", json={"object": "list", "data": [{"id": "gpt-4o-mini"}, {"id": "qwen3"}]}),
        Exchange("GET", "/health", json={"status": "ok"}),
    ],
}


class TestMiniOpenAIConformance(EngineConformance):
    model = "gpt-4o-mini"
    expected_text = "ok"
    expected_models = ["gpt-4o-mini", "qwen3"]
    engine_class = MiniOpenAIEngine

    def make_engine(self, url: str, **options: Any) -> MiniOpenAIEngine:
        return self.engine_class(host=url, **options)

    def exchanges(self, scenario: str):
        return EXCHANGES[scenario]


# -- the suite can fail -------------------------------------------------------------------------------
class PassesUnknownOptions(MiniOpenAIEngine):
    allowed_options = frozenset()

    def check_options(self, options) -> None:  # the bug: options go to the server unchecked
        pass


class LeaksKeyInRepr(MiniOpenAIEngine):
    def __repr__(self) -> str:
        return f"<engine key={self._api_key}>"


class DoubleFinish(MiniOpenAIEngine):
    async def stream_full(self, *args: Any, **kwargs: Any):
        async for chunk in super().stream_full(*args, **kwargs):
            if chunk.finish_reason:
                yield StreamChunk(finish_reason="stop")
            yield chunk


class StringifiesArguments(MiniOpenAIEngine):
    def generate(self, *args: Any, **kwargs: Any) -> Completion:
        result = super().generate(*args, **kwargs)
        calls = [ToolCall(c.id, c.name, json.dumps(c.arguments)) for c in result.tool_calls]  # double-encoded
        return Completion(result.content, tool_calls=calls, finish_reason=result.finish_reason, usage=result.usage)


class AsyncDropsContent(MiniOpenAIEngine):
    async def agenerate(self, *args: Any, **kwargs: Any) -> Completion:
        result = await super().agenerate(*args, **kwargs)
        # the bug: the text is lost
        return Completion("", tool_calls=result.tool_calls, finish_reason=result.finish_reason, usage=result.usage)


class AsyncDropsUnknownOptions(MiniOpenAIEngine):
    async def agenerate(self, messages: Any, **kwargs: Any) -> Completion:
        known = {"model", "temperature", "max_tokens", "tools", *self.allowed_options}
        # the bug: a misspelt option is silently left out instead of refused
        return await super().agenerate(messages, **{k: v for k, v in kwargs.items() if k in known})


class AcceptsTruncatedStream(MiniOpenAIEngine):
    require_finish = False  # the bug: a stream cut off cleanly passes as a complete answer


class NeverCloses(MiniOpenAIEngine):
    def close(self) -> None:
        pass

    async def aclose(self) -> None:
        pass


def _suite_for(engine_cls: type) -> TestMiniOpenAIConformance:
    suite = TestMiniOpenAIConformance()
    suite.engine_class = engine_cls
    return suite


def test_correct_engine_passes_standalone():
    results = run_engine_conformance(_suite_for(MiniOpenAIEngine))
    optional = {"test_embed_returns_one_vector_per_input", "test_structured_output_is_decoded"}  # it declares neither
    assert all(r == "ok" for name, r in results.items() if name not in optional), results
    assert all(results[name].startswith("skipped: mini-openai declares no") for name in optional), results
    assert len(results) >= 15


@pytest.mark.parametrize(
    ("engine_cls", "failing"),
    [
        (PassesUnknownOptions, {"test_unknown_option_raises_invalid_option",
                                "test_structured_output_without_support_raises_typed_error"}),
        (LeaksKeyInRepr, {"test_no_secret_in_repr_or_errors"}),
        (DoubleFinish, {"test_stream_full_ends_with_one_finish_chunk"}),
        # agenerate runs generate in a thread by default, so it shows generate's bug too
        (StringifiesArguments, {"test_generate_tool_calls", "test_tool_dicts_are_accepted", "test_agenerate_tool_calls"}),
        (AsyncDropsContent, {"test_agenerate_matches_generate"}),
        (AsyncDropsUnknownOptions, {"test_unknown_option_raises_invalid_option"}),
        (NeverCloses, {"test_context_manager_closes_connections"}),
        (AcceptsTruncatedStream, {"test_stream_ending_cleanly_without_end_marker_raises_stream_error"}),
    ],
)
def test_buggy_engines_fail_the_matching_checks(engine_cls, failing):
    results = run_engine_conformance(_suite_for(engine_cls))
    failed = {name for name, r in results.items() if r.startswith("FAILED")}
    assert failed == failing, results


def test_unsupported_scenario_is_skipped():
    class NoTools(TestMiniOpenAIConformance):
        def exchanges(self, scenario: str):
            return None if scenario == "tools" else EXCHANGES[scenario]

    results = run_engine_conformance(NoTools())
    assert results["test_generate_tool_calls"].startswith("skipped")
    assert results["test_stream_text_equals_stream_full_content"] == "ok"


def test_serve_may_be_a_plain_generator_or_return_the_server():
    class GeneratorServe(TestMiniOpenAIConformance):
        stopped: List[str] = []

        def serve(self, scenario):  # no @contextmanager: a plain generator
            with ReplayServer(list(EXCHANGES[scenario])) as server:
                yield server
            self.stopped.append(scenario)

    results = run_engine_conformance(GeneratorServe())
    assert all(r == "ok" or r.startswith("skipped: mini-openai declares") for r in results.values()), results
    assert "text" in GeneratorServe.stopped  # the code after yield ran as teardown

    class ReturnsLive(TestMiniOpenAIConformance):
        def serve(self, scenario):
            return LiveServer(self.server.url)

    suite = ReturnsLive()
    with ReplayServer(list(EXCHANGES["text"])) as suite.server:
        assert suite._serving("text").__enter__().url == suite.server.url


def test_scenario_constants_and_live_server_are_exported():
    import jarvis_core.testing as kit

    assert kit.SCENARIOS == ("text", "tools", "models", "embed", "structured")
    assert kit.PROMPT[-1].content == "What is the capital of France?"
    assert kit.WEATHER_TOOL.name == "get_weather" and kit.SECRET.startswith("sk-")
    assert kit.LiveServer("http://x").url == "http://x"
    assert {"LiveServer", "PROMPT", "TOOL_PROMPT", "source_plugin"} <= set(kit.__all__)
