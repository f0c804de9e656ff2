"""FakeEngine, the in-process plugin helpers and the pytest fixtures of jarvis_core.testing."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from jarvis_core.engine.factory import create_engine
from jarvis_core.errors import DuplicateRegistrationError, InvalidOptionError, RateLimitError, UnknownNameError
from jarvis_core.events import EventType
from jarvis_core.instrumented import InstrumentedEngine
from jarvis_core.plugins import registry as registry_mod
from jarvis_core.plugins.registry import get_registry, reset_registry
from jarvis_core.testing import FakeEngine, installed_registry, registry_with, simple_plugin
from jarvis_core.testing.pytest_plugin import jarvis_events, jarvis_plugins, replay_server  # noqa: F401 (fixtures)
from jarvis_core.types import Completion, Message, Role, StreamChunk, ToolCall, Usage


# -- FakeEngine ---------------------------------------------------------------------------------------
def test_fake_engine_answers_in_order_and_records_calls():
    call = ToolCall("c1", "add", '{"a": 1}')
    engine = FakeEngine([Completion(content="", tool_calls=[call], finish_reason="tool_calls"), "done"])
    first = engine.generate([{"role": "user", "content": "hi"}], model="m", temperature=0, seed=3)
    assert first.tool_calls == (call,) and first.finish_reason == "tool_calls" and first.model == "m"
    second = engine.generate([Message.user("hi"), Message.tool("2", "c1")], model="m")
    assert second.content == "done"
    assert [c.method for c in engine.calls] == ["generate", "generate"]
    assert engine.calls[0].messages == [Message.user("hi")]  # dicts are coerced
    assert engine.calls[0].options == {"seed": 3} and engine.calls[0].temperature == 0
    assert engine.calls[1].messages[-1].role is Role.TOOL


def test_fake_engine_exhausted_script_fails_loudly():
    engine = FakeEngine(["one"])
    engine.generate([Message.user("x")], model="m")
    with pytest.raises(AssertionError, match="call #2"):
        engine.generate([Message.user("x")], model="m")
    assert FakeEngine(default="again").generate([], model="m").content == "again"


def test_fake_engine_raises_scripted_errors_and_checks_options():
    engine = FakeEngine([RateLimitError("slow", retry_after=1.0), ValueError])
    with pytest.raises(RateLimitError):
        engine.generate([], model="m")
    with pytest.raises(ValueError):
        engine.generate([], model="m")
    with pytest.raises(InvalidOptionError, match="bogus"):
        FakeEngine(["x"]).generate([], model="m", bogus=1)


def test_fake_engine_callable_items_see_the_call():
    engine = FakeEngine(default=lambda call: f"echo {call.messages[-1].content}")
    assert engine.generate([Message.user("ping")], model="m").content == "echo ping"


async def test_fake_engine_streams_scripts_and_completions():
    engine = FakeEngine(
        [
            ["a", "b", StreamChunk(finish_reason="length", usage=Usage(1, 2))],
            Completion(content="whole", reasoning="think", usage=Usage(3, 4)),
            ["x", RuntimeError("mid-stream")],
        ]
    )
    chunks = [c async for c in engine.stream_full([], model="m")]
    assert [c.content for c in chunks] == ["a", "b", None]
    assert chunks[-1].finish_reason == "length"
    chunks = [c async for c in engine.stream_full([], model="m")]
    assert [(c.reasoning, c.content, c.finish_reason) for c in chunks] == [
        ("think", None, None), (None, "whole", None), (None, None, "stop")
    ]
    assert chunks[-1].usage == Usage(3, 4)
    got = []
    with pytest.raises(RuntimeError, match="mid-stream"):
        async for text in engine.stream([], model="m"):
            got.append(text)
    assert got == ["x"]


def test_fake_engine_assembles_stream_scripts_for_generate():
    call = ToolCall("c", "f", "{}")
    engine = FakeEngine([["Hel", "lo", StreamChunk(tool_calls=[call], finish_reason="tool_calls")]])
    result = engine.generate([], model="m")
    assert (result.content, result.tool_calls, result.finish_reason) == ("Hello", (call,), "tool_calls")


def test_fake_engine_management():
    engine = FakeEngine(models=["a"], healthy=False, engine_id="scripted")
    assert engine.list_models() == ["a"] and engine.health() is False and engine.engine_id == "scripted"
    engine.prepare("a")
    with engine:
        pass
    engine.close()
    assert engine.prepared == ["a"] and engine.close_count == 2 and engine.closed


# -- in-process plugins -------------------------------------------------------------------------------
def test_registry_with_simple_plugins_has_provenance():
    reg = registry_with(
        simple_plugin("p1", engines={"fake": "jarvis_core.testing.fake_engine:FakeEngine"}, tools={"calc": "x:y"}),
        ("p2", simple_plugin("ignored-name", agents={"simple": "a:b"}, defaults=[("qwen3", {"tool_parser": "hermes"})])),
    )
    engine = reg.get("engine", "fake")
    assert (engine.plugin, engine.distribution) == ("p1", "p1")
    assert reg.get("agent", "simple").plugin == "p2"
    assert reg.default_rules[0][:3] == ("qwen3", {"tool_parser": "hermes"}, "p2")
    assert reg.load("engine", "fake") is FakeEngine
    with pytest.raises(UnknownNameError, match="available: fake"):
        reg.get("engine", "nope")


def test_registry_with_sees_duplicates():
    with pytest.raises(DuplicateRegistrationError, match=r"by both a .*and b"):
        registry_with(simple_plugin("a", engines={"x": "m:X"}), simple_plugin("b", engines={"x": "m:Y"}))


def test_registry_with_parsers():
    reg = registry_with(simple_plugin("p", parsers=[("hermes", "m:H", "tool"), ("qwen3", "m:Q", "reasoning")]))
    assert set(reg.items("parser")) == {"tool:hermes", "reasoning:qwen3"}


def test_installed_registry_restores_the_previous_one():
    sentinel = registry_with()
    reset_registry(sentinel)
    try:
        plugin = simple_plugin("p", engines={"fake": FakeEngine})
        with installed_registry(plugin) as reg:
            assert get_registry() is reg
            engine = create_engine("fake", models=["z"])
            assert isinstance(engine, FakeEngine) and engine.list_models() == ["z"]
        assert get_registry() is sentinel
    finally:
        reset_registry(None)
    assert registry_mod._registry is None


def test_installed_registry_restores_on_error():
    reset_registry(None)
    with pytest.raises(RuntimeError), installed_registry(simple_plugin("p", engines={"fake": FakeEngine})):
        raise RuntimeError
    assert registry_mod._registry is None


# -- fixtures -----------------------------------------------------------------------------------------
def test_jarvis_plugins_fixture(jarvis_plugins):  # noqa: F811
    reg = jarvis_plugins(simple_plugin("p", engines={"fake": FakeEngine}))
    assert get_registry() is reg


def test_fixture_left_no_registry_behind():
    assert registry_mod._registry is None or "fake" not in registry_mod._registry.items("engine")


def test_replay_server_and_events_fixtures(replay_server, jarvis_events):  # noqa: F811
    from jarvis_core.testing import Exchange

    server = replay_server([Exchange("GET", "/x", json=1)])
    assert server.url.startswith("http://127.0.0.1:")
    engine = InstrumentedEngine(FakeEngine(["hi"]), jarvis_events)
    engine.generate([], model="m")
    assert jarvis_events.types() == [EventType.INFERENCE_START, EventType.INFERENCE_END]


def test_fixtures_work_from_a_plugin_authors_conftest(tmp_path):
    (tmp_path / "conftest.py").write_text('pytest_plugins = ["jarvis_core.testing.pytest_plugin"]\n')
    (tmp_path / "test_author.py").write_text(
        textwrap.dedent(
            """
            import httpx
            from jarvis_core.plugins.registry import get_registry
            from jarvis_core.testing import Exchange, FakeEngine, simple_plugin

            def test_it(jarvis_plugins, replay_server):
                reg = jarvis_plugins(simple_plugin("mine", engines={"mine": FakeEngine}))
                assert get_registry() is reg
                server = replay_server([Exchange("GET", "/ping", json="pong")])
                assert httpx.get(server.url + "/ping").json() == "pong"
            """
        )
    )
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path)],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "1 passed" in proc.stdout


# -- RecordingProxy -----------------------------------------------------------------------------------
def test_recording_proxy_forwards_and_keeps_each_request():
    import httpx

    from jarvis_core.testing import Exchange, RecordingProxy, ReplayServer

    backend = [Exchange("GET", "/v1/models", json={"data": []}), Exchange("POST", "/echo", status=201, json={"ok": 1})]
    with ReplayServer(backend) as target, RecordingProxy(target.url) as proxy:
        assert httpx.get(proxy.url + "/v1/models").json() == {"data": []}
        posted = httpx.post(proxy.url + "/echo", json={"a": [1, 2]})
        assert (posted.status_code, posted.json()) == (201, {"ok": 1})
        assert [r.json for r in target.requests] == [None, {"a": [1, 2]}]
    assert proxy.seen == [{"method": "GET", "path": "/v1/models", "json": None},
                          {"method": "POST", "path": "/echo", "json": {"a": [1, 2]}}]
    with pytest.raises(RuntimeError, match="not started"):
        _ = proxy.url
