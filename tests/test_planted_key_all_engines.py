"""A planted key never shows, for every engine and every text a server supplies.

Real loopback servers (``ReplayServer``) quote the key back on purpose: in an error status body and a
response header, in an error payload inside a 200 reply, in a stream's error event, in a malformed stream
line and in a non-JSON body. Every channel is searched: the exception, its ``repr``, ``vars`` and whole
cause chain with tracebacks, the log records of httpx/httpcore/jarvis at DEBUG, the events of the bus,
and the engine's ``repr``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import traceback
from typing import Any, Callable, Dict, List

import pytest

from jarvis_core.errors import JarvisError
from jarvis_core.events import EventBus
from jarvis_core.instrumented import InstrumentedEngine
from jarvis_core.testing import Exchange, ReplayServer
from jarvis_core.types import Message

KEY = "sk-PLANTED-5e1d2c3b4a596877"
MSGS = [Message.user("hi")]


def _ollama(url: str) -> Any:
    from jarvis_engine_ollama.engine import OllamaEngine

    return OllamaEngine(host=url, api_key=KEY, timeout=5.0)


def _compat(key: str) -> Callable[[str], Any]:
    def make(url: str) -> Any:
        from jarvis_engine_openai_compat.engines import LlamaCppEngine, VLLMEngine

        cls = {"llamacpp": LlamaCppEngine, "vllm": VLLMEngine}[key]
        return cls(host=url, api_key=KEY, timeout=5.0)

    return make


def _cloud(url: str) -> Any:
    from jarvis_engine_cloud.engine import CloudEngine

    return CloudEngine(openai_api_key=KEY, openai_base_url=url + "/v1", max_retries=0, timeout=5.0, environ={})


ENGINES: Dict[str, Callable[[str], Any]] = {
    "ollama": _ollama, "llamacpp": _compat("llamacpp"), "vllm": _compat("vllm"), "cloud": _cloud,
}
MODEL = {"ollama": "m:latest", "llamacpp": "m", "vllm": "m", "cloud": "gpt-x"}
ECHO = f"key Bearer {KEY} revoked"


def _stream_error(engine: str) -> Exchange:
    if engine == "ollama":
        return Exchange("*", None, ndjson=[{"message": {"content": "a"}}, {"error": ECHO}])
    return Exchange("*", None, sse=['data: {"choices":[{"index":0,"delta":{"content":"a"}}]}',
                                    "data: " + json.dumps({"error": {"message": ECHO}})])


def _malformed(engine: str) -> Exchange:
    if engine == "ollama":
        return Exchange("*", None, ndjson=['{"message":{"content":"a"}}', "{bad json " + ECHO])
    return Exchange("*", None, sse=["data: {bad json " + ECHO])


SCENARIOS: Dict[str, Callable[[str], Exchange]] = {
    "status_body_and_header": lambda e: Exchange("*", None, status=500, json={"error": ECHO},
                                                 headers={"x-echo-auth": f"Bearer {KEY}"}),
    "html_status_body": lambda e: Exchange("*", None, status=404, raw=f"<html><body>{ECHO}</body></html>",
                                           headers={"content-type": "text/html"}),
    "error_payload_in_200": lambda e: Exchange("*", None, json={"error": ECHO}),
    "stream_error_event": _stream_error,
    "malformed_line": _malformed,
    "html_200": lambda e: Exchange("*", None, raw=f"<html>{ECHO}</html>", headers={"content-type": "text/html"}),
    "header_echo_on_success": lambda e: Exchange("*", None, headers={"x-echo-auth": f"Bearer {KEY}"},
                                                 **({"ndjson": [{"message": {"content": "a"}, "done": True}]}
                                                    if e == "ollama" else
                                                    {"sse": ['data: {"choices":[{"index":0,"delta":{"content":"a"},'
                                                             '"finish_reason":"stop"}]}', "data: [DONE]"]})),
}


def _texts(exc: BaseException) -> List[str]:
    out, seen = [], set()
    current: Any = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        out += [str(current), repr(current), repr(current.args), repr(vars(current)),
                "".join(traceback.format_exception(current))]
        current = current.__cause__ or current.__context__
    return out


def _exercise(engine: Any, model: str) -> List[BaseException]:
    caught: List[BaseException] = []
    try:
        engine.generate(MSGS, model=model, max_tokens=8)
    except JarvisError as exc:
        caught.append(exc)

    async def stream() -> None:
        try:
            async for _ in engine.stream(MSGS, model=model, max_tokens=8):
                pass
        finally:
            await engine.aclose()

    try:
        asyncio.run(stream())
    except JarvisError as exc:
        caught.append(exc)
    return caught


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
@pytest.mark.parametrize("name", sorted(ENGINES))
def test_planted_key_never_shows(name, scenario, caplog, monkeypatch):
    for var in ("OLLAMA_HOST", "LLAMACPP_HOST", "VLLM_HOST", "OPENAI_BASE_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    caplog.set_level(logging.DEBUG)
    for logger in ("httpx", "httpcore", "jarvis_core", "jarvis_engine_ollama", "jarvis_engine_openai_compat",
                   "jarvis_engine_cloud"):
        logging.getLogger(logger).setLevel(logging.DEBUG)
    bus = EventBus()
    events: List[Any] = []
    bus.subscribe(events.append)
    with ReplayServer([SCENARIOS[scenario](name)]) as server:
        raw = ENGINES[name](server.url)
        engine = InstrumentedEngine(raw, bus)
        caught = _exercise(engine, MODEL[name])
        sent = {r.headers.get("authorization") for r in server.requests}
        assert sent == {f"Bearer {KEY}"}, "the key was sent, so it was there to leak"
    if scenario != "header_echo_on_success":
        assert caught, "the hostile reply raised a typed error"
    haystack = [repr(raw), repr(engine), str(engine)]
    haystack += [t for exc in caught for t in _texts(exc)]
    haystack += [r.getMessage() + repr(r.args) for r in caplog.records] + [caplog.text]
    haystack += [repr(e) + repr(dict(e.data)) for e in events]
    assert any("x-echo-auth" in r.getMessage() for r in caplog.records) or "header" not in scenario, \
        "httpcore logged the response headers at DEBUG (the path being tested)"
    leaks = [text for text in haystack if KEY in text]
    assert not leaks, f"the key leaked in: {leaks[0][:400]}"
    assert events, "the instrumented engine published its events"
