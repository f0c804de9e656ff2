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


def _cloud(provider: str) -> Callable[[str], Any]:
    def make(url: str) -> Any:
        from jarvis_engine_cloud.engine import CloudEngine

        where = {"cloud": {"openai_api_key": KEY, "openai_base_url": url + "/v1"},
                 "anthropic": {"anthropic_api_key": KEY, "anthropic_base_url": url},
                 "gemini": {"gemini_api_key": KEY, "gemini_base_url": url}}[provider]
        return CloudEngine(**where, max_retries=0, timeout=5.0, environ={})

    return make


ENGINES: Dict[str, Callable[[str], Any]] = {
    "ollama": _ollama, "llamacpp": _compat("llamacpp"), "vllm": _compat("vllm"), "cloud": _cloud("cloud"),
    "anthropic": _cloud("anthropic"), "gemini": _cloud("gemini"),
}
MODEL = {"ollama": "m:latest", "llamacpp": "m", "vllm": "m", "cloud": "gpt-x", "anthropic": "claude-x",
         "gemini": "gemini-x"}
#: The request header that carries the key, and its value.
AUTH = {"anthropic": ("x-api-key", KEY), "gemini": ("x-goog-api-key", KEY)}
ECHO = f"key Bearer {KEY} revoked"
ENV_VARS = ("OLLAMA_HOST", "LLAMACPP_HOST", "VLLM_HOST", "OPENAI_BASE_URL", "OPENAI_API_KEY", "ANTHROPIC_BASE_URL",
            "ANTHROPIC_API_KEY", "GEMINI_BASE_URL", "GEMINI_API_KEY", "GOOGLE_API_KEY")

#: The start of an Anthropic stream (message_start, one text delta), before whatever a scenario adds.
_ANTHROPIC_START = [
    'event: message_start\ndata: {"type":"message_start","message":{"id":"m1","type":"message","role":"assistant",'
    '"content":[],"model":"claude-x","usage":{"input_tokens":1,"output_tokens":0}}}',
    'event: content_block_start\ndata: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}',
    'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"a"}}',
]
_ANTHROPIC_END = [
    'event: content_block_stop\ndata: {"type":"content_block_stop","index":0}',
    'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":1}}',
    'event: message_stop\ndata: {"type":"message_stop"}',
]
_GEMINI_TEXT = 'data: {"candidates":[{"content":{"role":"model","parts":[{"text":"a"}]},"index":0}]}'


def _stream_error(engine: str) -> Exchange:
    if engine == "ollama":
        return Exchange("*", None, ndjson=[{"message": {"content": "a"}}, {"error": ECHO}])
    if engine == "anthropic":
        error = {"type": "error", "error": {"type": "overloaded_error", "message": ECHO}}
        return Exchange("*", None, sse=[*_ANTHROPIC_START, "event: error\ndata: " + json.dumps(error)])
    if engine == "gemini":
        error = {"error": {"code": 500, "message": ECHO, "status": "INTERNAL"}}
        return Exchange("*", None, sse=[_GEMINI_TEXT, "data: " + json.dumps(error)])
    return Exchange("*", None, sse=['data: {"choices":[{"index":0,"delta":{"content":"a"}}]}',
                                    "data: " + json.dumps({"error": {"message": ECHO}})])


def _malformed(engine: str) -> Exchange:
    if engine == "ollama":
        return Exchange("*", None, ndjson=['{"message":{"content":"a"}}', "{bad json " + ECHO])
    if engine == "anthropic":
        return Exchange("*", None, sse=[*_ANTHROPIC_START, "event: content_block_delta\ndata: {bad json " + ECHO])
    return Exchange("*", None, sse=["data: {bad json " + ECHO])


def _success(engine: str) -> Dict[str, Any]:
    """The body of a normal, finished reply in the engine's stream format."""
    if engine == "ollama":
        return {"ndjson": [{"message": {"content": "a"}, "done": True}]}
    if engine == "anthropic":
        return {"sse": [*_ANTHROPIC_START, *_ANTHROPIC_END]}
    if engine == "gemini":
        return {"sse": ['data: {"candidates":[{"content":{"role":"model","parts":[{"text":"a"}]},'
                        '"finishReason":"STOP","index":0}]}']}
    return {"sse": ['data: {"choices":[{"index":0,"delta":{"content":"a"},"finish_reason":"stop"}]}', "data: [DONE]"]}


SCENARIOS: Dict[str, Callable[[str], Exchange]] = {
    "status_body_and_header": lambda e: Exchange("*", None, status=500, json={"error": ECHO},
                                                 headers={"x-echo-auth": f"Bearer {KEY}"}),
    "html_status_body": lambda e: Exchange("*", None, status=404, raw=f"<html><body>{ECHO}</body></html>",
                                           headers={"content-type": "text/html"}),
    "error_payload_in_200": lambda e: Exchange("*", None, json={"error": ECHO}),
    "stream_error_event": _stream_error,
    "malformed_line": _malformed,
    "html_200": lambda e: Exchange("*", None, raw=f"<html>{ECHO}</html>", headers={"content-type": "text/html"}),
    "header_echo_on_success": lambda e: Exchange("*", None, headers={"x-echo-auth": f"Bearer {KEY}"}, **_success(e)),
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
    for var in ENV_VARS:
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
        header, value = AUTH.get(name, ("authorization", f"Bearer {KEY}"))
        sent = {r.headers.get(header) for r in server.requests}
        assert sent == {value}, "the key was sent, so it was there to leak"
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


@pytest.mark.parametrize("scenario", ["stream_error_event", "malformed_line", "status_body_and_header"])
@pytest.mark.parametrize("provider", ["anthropic", "gemini"])
def test_planted_key_never_reaches_the_terminal(tmp_path, provider, scenario):
    # The real jarvis command, the key in the environment as users set it, streamed (jarvis ask) and not
    # (--json), with JARVIS_DEBUG on so that tracebacks and debug output are searched too.
    import os
    import subprocess
    import sys

    var = {"anthropic": "ANTHROPIC", "gemini": "GEMINI"}[provider]
    env = {k: v for k, v in os.environ.items() if not k.startswith("JARVIS_") and k not in ENV_VARS}
    env.update({"JARVIS_HOME": str(tmp_path / "home"), "PYTHONIOENCODING": "utf-8", "JARVIS_DEBUG": "1",
                "CLOUD_MAX_RETRIES": "0", f"{var}_API_KEY": KEY})
    config = tmp_path / "config.toml"
    config.write_text("[engine.cloud]\nmax_retries = 0\n", encoding="utf-8")
    env["JARVIS_CONFIG"] = str(config)
    with ReplayServer([SCENARIOS[scenario](provider)]) as server:
        env[f"{var}_BASE_URL"] = server.url
        runs = [subprocess.run([sys.executable, "-m", "jarvis_core.cli.main", "ask", *extra, "--engine", "cloud",
                                "--model", MODEL[provider], "hi"], capture_output=True, text=True, env=env, timeout=120)
                for extra in ([], ["--json"])]
        assert server.requests and all(r.headers.get(AUTH[provider][0]) == KEY for r in server.requests)
    for proc in runs:
        assert proc.returncode == 1, proc.stderr
        assert "jarvis: error: cloud" in proc.stderr
        assert KEY not in proc.stderr and KEY not in proc.stdout, proc.stderr


@pytest.mark.parametrize("name", sorted(ENGINES))
def test_every_engine_masks_with_the_one_mask(name, monkeypatch):
    # One override point (secret_values) and one mask (redaction.MASK), the same for every shipped engine,
    # wrapped or not; cloud masks every provider's key, whichever provider's server quoted it.
    from jarvis_core.engine.redaction import MASK

    for var in ENV_VARS:
        monkeypatch.delenv(var, raising=False)
    raw = ENGINES[name]("http://127.0.0.1:9")
    for engine in (raw, InstrumentedEngine(raw, EventBus())):
        assert KEY in [getattr(s, "reveal", lambda s=s: s)() for s in engine.secret_values()]
        assert engine.redact(ECHO) == ECHO.replace(KEY, MASK)
        assert engine.redact({"error": {"message": ECHO}}) == {"error": {"message": ECHO.replace(KEY, MASK)}}
