"""Every Ollama transcript, driven through the real engine, over ``httpx.MockTransport`` and over the core's
loopback :class:`~jarvis_core.testing.ReplayServer`.

For each transcript the engine call is derived from the recorded request (its messages, tools and options
become jarvis arguments), the request the engine actually sends must contain the recorded body, and the
normalized result must equal ``expected_normalized``. Recorded bodies are a subset of ours because the
engine adds ``stream``, ``options.temperature``/``num_predict``/``num_ctx``.
"""

from __future__ import annotations

import json
from typing import Any, AsyncIterator, Dict, List, Optional, Tuple

import httpx
import pytest

from jarvis_core.errors import (
    BadRequestError,
    EngineError,
    ModelNotFoundError,
    ServerError,
    StreamError,
    ToolsNotSupportedError,
)
from jarvis_core.testing import ReplayServer, body_matches, exchanges_from_transcripts
from jarvis_core.types import Message, ToolCall
from jarvis_engine_ollama.engine import OllamaEngine

ERROR_KINDS = {
    "model_not_found": ModelNotFoundError,
    "mid_stream": StreamError,
    "incomplete_stream": StreamError,
    "server_error": ServerError,
}


def _message(d: Dict[str, Any]) -> Message:
    """A recorded Ollama message as the jarvis Message a caller would hold."""
    calls = [
        ToolCall(id=c.get("id") or f"call_{i}", name=c["function"]["name"], arguments=json.dumps(c["function"]["arguments"]))
        for i, c in enumerate(d.get("tool_calls") or ())
    ]
    return Message(
        d["role"], d.get("content"), tool_calls=calls, tool_call_id=d.get("tool_call_id"), name=d.get("tool_name")
    )


def _call_args(body: Dict[str, Any]) -> Tuple[List[Message], Dict[str, Any]]:
    kwargs: Dict[str, Any] = {"model": body["model"]}
    options = dict(body.get("options") or {})
    if "num_predict" in options:
        kwargs["max_tokens"] = options.pop("num_predict")
    kwargs.update(options)
    for key in ("think", "format", "keep_alive", "tools"):
        if key in body:
            kwargs[key] = body[key]
    return [_message(m) for m in body["messages"]], kwargs


class Outcome:
    """What one driven transcript produced: a normalized result dict, an error, or both (partial stream)."""

    def __init__(self) -> None:
        self.result: Dict[str, Any] = {}
        self.error: Optional[BaseException] = None


async def _drive(engine: OllamaEngine, t: Dict[str, Any]) -> Outcome:
    req = t["request"]
    body = req.get("body") or {}
    out = Outcome()
    try:
        if req["path"] == "/api/chat" and not body["messages"]:
            if body.get("keep_alive") == 0:
                engine.unload(body["model"])
            else:
                engine.prepare(body["model"])
        elif req["path"] == "/api/chat":
            messages, kwargs = _call_args(body)
            if body.get("stream") is False:
                c = engine.generate(messages, **kwargs)
                out.result = {
                    "content": c.content, "reasoning": c.reasoning, "tool_calls": list(c.tool_calls),
                    "finish_reason": c.finish_reason, "usage": c.usage, "metadata": dict(c.metadata),
                }
            else:
                agg: Dict[str, Any] = {"content": "", "reasoning": "", "tool_calls": [], "chunks": []}
                out.result = agg
                async for chunk in engine.stream_full(messages, **kwargs):
                    agg["chunks"].append(chunk)
                    agg["content"] += chunk.content or ""
                    agg["reasoning"] += chunk.reasoning or ""
                    agg["tool_calls"].extend(chunk.tool_calls)
                    if chunk.finish_reason:
                        agg["finish_reason"], agg["usage"], agg["metadata"] = chunk.finish_reason, chunk.usage, chunk.metadata
                agg["content"] = agg["content"] or None
                agg["reasoning"] = agg["reasoning"] or None
        elif req["path"] == "/api/tags":
            out.result = {"models": engine.list_models()}
        elif req["path"] == "/api/show":
            out.result = {"details": engine.show(body["model"]), "capabilities": engine.capabilities(body["model"])}
        elif req["path"] == "/api/ps":
            out.result = {"running": engine.running_models()}
        elif req["path"] == "/api/version":
            out.result = {"version": engine.version(), "health": engine.health()}
        else:  # pragma: no cover - a new transcript kind needs a driver
            raise AssertionError(f"no driver for {req['method']} {req['path']}")
    except EngineError as exc:
        out.error = exc
    return out


def _check(t: Dict[str, Any], out: Outcome) -> None:
    expected = t.get("expected_normalized") or {}
    body = t["response"].get("body")
    if "error" in expected:
        err = expected["error"]
        assert out.error is not None, f"{t['id']}: expected an error, got {out.result}"
        kind = err["kind"]
        if kind == "capability_not_supported":
            cls = ToolsNotSupportedError if "tools" in err["message"] else BadRequestError
            if cls is BadRequestError:
                assert not isinstance(out.error, ToolsNotSupportedError)
        else:
            cls = ERROR_KINDS[kind]
        assert isinstance(out.error, cls), f"{t['id']}: {type(out.error).__name__}: {out.error}"
        assert err["message"] in str(out.error)
        if kind == "model_not_found":
            assert f"ollama pull {t['request']['body']['model']}" in str(out.error)
        if "content" in expected:  # the deltas delivered before the error
            assert out.result["content"] == expected["content"]
        return
    assert out.error is None, f"{t['id']}: unexpected {type(out.error).__name__}: {out.error}"
    path = t["request"]["path"]
    if path == "/api/tags":
        assert out.result["models"] == [m["name"] for m in body["models"]]
    elif path == "/api/show":
        d = out.result["details"]
        assert d.capabilities == out.result["capabilities"] == tuple(body["capabilities"])
        assert d.supports_tools and d.supports_thinking
        assert d.architecture == "qwen3" and d.context_length == 40960
        assert d.parameters["temperature"] == 0.6 and d.parameters["top_k"] == 20
        assert d.parameters["stop"] == ["<|im_start|>", "<|im_end|>"]
    elif path == "/api/ps":
        (r,) = out.result["running"]
        src = body["models"][0]
        assert (r.name, r.size, r.size_vram, r.context_length) == (src["name"], src["size"], src["size_vram"], 4096)
    elif path == "/api/version":
        assert out.result == {"version": body["version"], "health": True}
    elif expected:
        r = out.result
        assert r["content"] == expected["content"]
        assert r["reasoning"] == expected["reasoning"]
        assert r["finish_reason"] == expected["finish_reason"]
        u = expected["usage"]
        assert (r["usage"].prompt_tokens, r["usage"].completion_tokens, r["usage"].total_tokens) == (
            u["prompt_tokens"], u["completion_tokens"], u["total_tokens"])
        calls = r["tool_calls"]
        assert [(c.name, json.loads(c.arguments)) for c in calls] == [
            (c["name"], c["arguments"]) for c in expected["tool_calls"]]
        assert all(c.id.startswith("call_") for c in calls) and len({c.id for c in calls}) == len(calls)
        for got, want in zip(calls, expected["tool_calls"], strict=True):
            if "id" in want:
                assert got.id == want["id"]
        final = t["response"].get("body") or json.loads(t["response"]["ndjson_lines"][-1])
        assert r["metadata"]["done_reason"] == final["done_reason"]
        assert r["metadata"]["total_duration_ns"] == final["total_duration"]
        assert r["metadata"]["eval_duration_ns"] == final["eval_duration"]
        if "chunks" in r:  # streamed: exactly one finishing chunk, and it is the last
            assert [c.finish_reason is not None for c in r["chunks"]].count(True) == 1
            assert r["chunks"][-1].finish_reason == expected["finish_reason"]
            assert all(not c.tool_calls for c in r["chunks"][:-1]), "tool calls come complete, in the last chunk"


# -- transports ---------------------------------------------------------------------------------------
def _response_bytes(resp: Dict[str, Any]) -> bytes:
    if "ndjson_lines" in resp:
        return "".join(line + "\n" for line in resp["ndjson_lines"]).encode()
    return json.dumps(resp["body"]).encode()


class _Mock:
    """MockTransports answering one transcript; requests that do not carry the recorded body get HTTP 599."""

    def __init__(self, t: Dict[str, Any]) -> None:
        self.t = t
        self.requests: List[Tuple[str, str, Any]] = []

    def _answer(self, request: httpx.Request, aio: bool) -> httpx.Response:
        body = json.loads(request.content) if request.content else None
        self.requests.append((request.method, request.url.path, body))
        req, resp = self.t["request"], self.t["response"]
        matches = request.method == req["method"] and request.url.path == req["path"]
        if req.get("body") is not None:
            matches = matches and body_matches(req["body"], body)
        if not matches:
            return httpx.Response(599, json={"error": f"unexpected request {request.method} {request.url.path} {body}"})
        data = _response_bytes(resp)
        headers = {"content-type": resp.get("content_type", "application/json")}
        if aio and "ndjson_lines" in resp:
            # 7-byte pieces: lines arrive split across reads, as they can over TCP.
            async def pieces() -> AsyncIterator[bytes]:
                for i in range(0, len(data), 7):
                    yield data[i : i + 7]

            return httpx.Response(resp["status"], headers=headers, content=pieces())
        return httpx.Response(resp["status"], headers=headers, content=data)

    def engine(self) -> OllamaEngine:
        return OllamaEngine(
            host="http://ollama.test:11434",
            transport=httpx.MockTransport(lambda r: self._answer(r, False)),
            async_transport=httpx.MockTransport(lambda r: self._answer(r, True)),
        )


def _all_ids() -> List[str]:
    import pathlib

    here = pathlib.Path(__file__).resolve()
    paths = (here.parents[3] / "tests" / "data" / "ollama_transcripts.json", here.parent / "data" / "ollama_extra_transcripts.json")
    return [t["id"] for path in paths for t in json.loads(path.read_text(encoding="utf-8"))]


@pytest.mark.parametrize("tid", _all_ids())
async def test_transcript_through_mock_transport(tid: str, ollama_transcripts: Dict[str, Any]) -> None:
    t = ollama_transcripts[tid]
    mock = _Mock(t)
    engine = mock.engine()
    try:
        out = await _drive(engine, t)
    finally:
        await engine.aclose()
    assert mock.requests, "the engine sent nothing"
    assert all(r[1] == t["request"]["path"] for r in mock.requests)
    _check(t, out)


@pytest.mark.parametrize("tid", _all_ids())
async def test_transcript_through_replay_server(tid: str, ollama_transcripts: Dict[str, Any]) -> None:
    t = ollama_transcripts[tid]
    with ReplayServer(exchanges_from_transcripts([t], match_body=t["request"].get("body"))) as server:
        engine = OllamaEngine(host=server.url)
        try:
            out = await _drive(engine, t)
        finally:
            await engine.aclose()
        assert server.requests and not server.unmatched, f"request did not carry the recorded body: {server.unmatched}"
    _check(t, out)
