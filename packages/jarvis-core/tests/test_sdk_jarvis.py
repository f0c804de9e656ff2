"""The ``Jarvis`` facade over a scripted engine: messages sent, model resolution, streaming (async and sync),
agents and tools from the registry, events, and who closes what."""

from __future__ import annotations

import attrs
import pytest

from jarvis_core.agents import BaseAgent, TextDelta
from jarvis_core.answer import Answer
from jarvis_core.config import EngineSettings, JarvisConfig
from jarvis_core.errors import JarvisDeprecationWarning, JarvisError, ModelNotFoundError, UnknownNameError, UsageError
from jarvis_core.events import EventType
from jarvis_core.sdk import DEFAULT_SYSTEM_PROMPT, Jarvis
from jarvis_core.testing import FakeEngine, installed_registry
from jarvis_core.testing.plugins import simple_plugin
from jarvis_core.testing.recording_bus import RecordingBus
from jarvis_core.tools import BaseTool
from jarvis_core.types import Message, Role, StreamChunk, ToolResult, ToolSpec, Usage


@pytest.fixture(autouse=True)
def isolated_env(monkeypatch, tmp_path):
    """No user config, no JARVIS_* switches from the machine running the tests."""
    for var in ("JARVIS_CONFIG", "JARVIS_ENGINE", "JARVIS_LOAD_PLUGINS", "JARVIS_DISABLE_PLUGINS"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("JARVIS_HOME", str(tmp_path / "home"))


def scripted(script=(), **kwargs):
    """An engine class for the registry whose instances replay ``script``; ``cls.instances`` lists them."""
    instances = []

    class Scripted(FakeEngine):
        def __init__(self, **options):
            super().__init__(list(script), **kwargs)
            self.options = options
            instances.append(self)

    Scripted.instances = instances
    return Scripted


class WordAgent(BaseAgent):
    """A minimal agent: answers with the engine's reply, prefixed by the names of its tools."""

    agent_id = "words"
    accepts_tools = True

    async def loop(self, run):
        run.turns = 1
        reply = self.engine.generate([Message.user(run.input)], model=self.model).content
        names = ",".join(t.spec.name for t in self.tools)
        run.usage = Usage(3, 4)
        run.tool_results.append(ToolResult("c1", "t", "ok"))
        run.finish(f"[{names}] {reply}", "final")
        yield TextDelta(run.run_id, 1, f"[{names}] {reply}")


class NamedTool(BaseTool):
    spec = ToolSpec("clock", "the time", {"type": "object", "properties": {}})

    def run(self, **arguments):
        return "noon"


def test_ask_sends_system_and_user_and_picks_the_first_model():
    engine = FakeEngine(["Paris."], models=["m1", "m2"])
    announced = []
    j = Jarvis(engine=engine, announce=announced.append)
    assert j.ask("Capital of France?") == "Paris."
    call = engine.calls[0]
    assert [(m.role, m.content) for m in call.messages] == [
        (Role.SYSTEM, DEFAULT_SYSTEM_PROMPT), (Role.USER, "Capital of France?")
    ]
    assert call.model == "m1"
    assert announced == ["model m1 (the first of 2 offered by fake; choose with --model)"]


def test_borrowed_engine_reads_no_config_and_stays_open(monkeypatch, tmp_path):
    broken = tmp_path / "broken.toml"
    broken.write_text("[engine\n", encoding="utf-8")
    monkeypatch.setenv("JARVIS_CONFIG", str(broken))
    engine = FakeEngine(["ok"])
    with Jarvis(engine=engine, model="m") as j:
        assert j.ask("hi") == "ok"
    assert not engine.closed


def test_system_prompt_none_and_conversation_with_its_own_system():
    engine = FakeEngine(["a", "b"])
    j = Jarvis(engine=engine, model="m", system_prompt=None)
    j.ask("q")
    assert [m.role for m in engine.calls[0].messages] == [Role.USER]
    j.system_prompt = "default"
    j.ask([{"role": "system", "content": "mine"}, {"role": "user", "content": "q2"}])
    assert [(m.role, m.content) for m in engine.calls[1].messages] == [(Role.SYSTEM, "mine"), (Role.USER, "q2")]


def test_ask_full_is_a_typed_answer_whose_dict_is_the_completion_dict_plus_engine():
    engine = FakeEngine([[StreamChunk(content="hi"), StreamChunk(finish_reason="length", usage=Usage(5, 1))]])
    out = Jarvis(engine=engine, model="m").ask_full("x", temperature=0, max_tokens=1, top_p=0.5)
    assert isinstance(out, Answer)
    assert (out.content, out.model, out.engine, out.finish_reason, out.usage) == ("hi", "m", "fake", "length", Usage(5, 1))
    assert (out.agent, out.turns, out.stop_reason, out.tool_calls, out.tool_results) == (None, None, None, (), ())
    assert out.to_dict() == {
        "content": "hi", "usage": {"prompt_tokens": 5, "completion_tokens": 1, "total_tokens": 6},
        "model": "m", "finish_reason": "length", "engine": "fake",
    }
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        out.content = "changed"  # type: ignore[misc]
    call = engine.calls[0]
    assert (call.temperature, call.max_tokens, call.options) == (0, 1, {"top_p": 0.5})


def test_reading_the_answer_as_a_dict_still_works_and_warns_naming_the_caller():
    out = Jarvis(engine=FakeEngine(["hi"]), model="m").ask_full("x")
    with pytest.warns(JarvisDeprecationWarning, match=r"as a dict \(answer\['content'\]\) is deprecated.*use the Answer's "
                      r"attributes.*used by .*test_sdk_jarvis"):
        assert out["content"] == "hi"
    with pytest.warns(JarvisDeprecationWarning, match=r"answer\.get\("):
        assert out.get("engine") == "fake" and out.get("nope", 1) == 1
    with pytest.warns(JarvisDeprecationWarning):
        assert "finish_reason" in out and "agent" not in out
    with pytest.warns(JarvisDeprecationWarning):
        assert dict(out) == out.to_dict()  # type: ignore[call-overload]


def test_model_argument_beats_listing_and_empty_listing_is_a_clear_error():
    engine = FakeEngine(["x"], models=[])
    j = Jarvis(engine=engine)
    with pytest.raises(ModelNotFoundError, match="offers no models; pass --model"):
        j.ask("q")
    assert j.ask("q", model="given") == "x"
    assert engine.calls[0].model == "given"


async def test_ask_stream_yields_pieces_as_they_come():
    engine = FakeEngine([["Par", "is", "."]])
    async with Jarvis(engine=engine, model="m") as j:
        pieces = [p async for p in j.ask_stream("q")]
    assert pieces == ["Par", "is", "."]
    assert engine.calls[0].method == "stream"


def test_ask_stream_sync_and_early_exit_leave_the_session_usable():
    engine = FakeEngine([["a", "b", "c"], ["d", "e"]])
    j = Jarvis(engine=engine, model="m")
    for piece in j.ask_stream_sync("first"):
        assert piece == "a"
        break  # leaving early closes that stream
    assert list(j.ask_stream_sync("second")) == ["d", "e"]
    j.close()
    assert not engine.closed  # borrowed


def test_engine_by_key_is_built_lazily_and_closed_by_close():
    cls = scripted(["hello"])
    with installed_registry(simple_plugin("p", engines={"scripted": cls})):
        j = Jarvis(JarvisConfig(), engine="scripted", host="http://h:1", model="m")
        assert cls.instances == []  # nothing built yet
        assert j.ask("q") == "hello"
        assert j.engine_key == "scripted"
        (engine,) = cls.instances
        assert engine.options == {"host": "http://h:1"}
        j.close()
        assert engine.closed
        with pytest.raises(JarvisError, match="closed"):
            j.ask("again")


def test_agent_from_registry_with_tools():
    engine = FakeEngine(["reply"])
    plugin = simple_plugin("agents", agents={"words": WordAgent}, tools={"clock": NamedTool})
    with installed_registry(plugin):
        out = Jarvis(engine=engine, model="m", agent="words", tools=["clock"]).ask_full("q")
    assert out.content == "[clock] reply"
    assert (out.agent, out.turns, out.engine, out.model, out.stop_reason) == ("words", 1, "fake", "m", "final")
    assert out.usage.total_tokens == 7
    assert [r.name for r in out.tool_results] == ["t"]
    assert set(out.to_dict()) == {"content", "turns", "tool_results", "usage", "stop_reason", "model", "engine",
                                  "agent"}
    assert out.to_dict()["tool_results"][0]["name"] == "t"


async def test_agent_answer_streams_as_one_piece():
    plugin = simple_plugin("agents", agents={"words": WordAgent})
    with installed_registry(plugin):
        j = Jarvis(engine=FakeEngine(["r"]), model="m", agent="words")
        assert [p async for p in j.ask_stream("q")] == ["[] r"]


def test_config_default_agent_is_used(tmp_path):
    config = tmp_path / "c.toml"
    config.write_text('[agent]\ndefault = "words"\n', encoding="utf-8")
    plugin = simple_plugin("p", agents={"words": WordAgent}, engines={"scripted": scripted(["r"])})
    with installed_registry(plugin):
        assert Jarvis(str(config), engine="scripted", model="m").ask("q") == "[] r"


def test_unknown_agent_and_tool_names_list_the_available_ones():
    plugin = simple_plugin("p", agents={"words": WordAgent}, tools={"clock": NamedTool})
    with installed_registry(plugin):
        with pytest.raises(UnknownNameError, match=r"unknown agent 'wrds'; available: words"):
            Jarvis(engine=FakeEngine(), model="m", agent="wrds").check_names()
        with pytest.raises(UnknownNameError, match=r"unknown tool 'clok'; available: clock"):
            Jarvis(engine=FakeEngine(), model="m", tools=["clok"]).check_names()
        with pytest.raises(JarvisError, match=r"tools need an agent.*--agent NAME \(available: words\)"):
            Jarvis(engine=FakeEngine(), model="m", tools=["clock"]).ask("q")
    with installed_registry(simple_plugin("tools-only", tools={"clock": NamedTool})):
        with pytest.raises(JarvisError, match=r"install an agents plugin \(pip install jarvis-agents\)"):
            Jarvis(engine=FakeEngine(), model="m", tools=["clock"]).ask("q")


def test_bus_gets_inference_events():
    bus = RecordingBus()
    Jarvis(engine=FakeEngine(["x"]), model="m", bus=bus).ask("q")
    assert bus.types() == [EventType.INFERENCE_START, EventType.INFERENCE_END]


def test_configured_default_engine_is_used_without_probing(tmp_path):
    cls = scripted(["from default"], healthy=False)
    with installed_registry(simple_plugin("p", engines={"dflt": cls})):
        config = JarvisConfig(engine=EngineSettings(default="dflt"))
        with Jarvis(config, model="m") as j:
            assert j.ask("q") == "from default"
            assert j.engine_key == "dflt"


def test_configured_model_is_not_used_on_a_fallback_engine():
    down, up = scripted([], healthy=False), scripted(["hi"], models=("up-model",))
    said = []
    with installed_registry(simple_plugin("p", engines={"down": down, "up": up})):
        config = JarvisConfig(engine=EngineSettings(default="down", model="down-model", fallback=True))
        with Jarvis(config, announce=said.append) as j:
            assert j.ask("q") == "hi"
            assert j.model == "up-model"
        with Jarvis(JarvisConfig(engine=EngineSettings(default="up", model="cfg-model"))) as j:
            j.ask("q")
            assert j.model == "cfg-model"
    assert up.instances[0].calls[0].model == "up-model"


def test_reading_the_properties_picks_nothing_connect_does():
    cls = scripted(["hi"], models=("first", "second"))
    said = []
    with installed_registry(simple_plugin("p", engines={"scripted": cls})):
        j = Jarvis(JarvisConfig(), engine="scripted", announce=said.append)
        for prop in ("engine", "engine_key", "model"):
            with pytest.raises(UsageError, match=r"call connect\(\) first"):
                getattr(j, prop)
        assert cls.instances == [] and said == [] and j.connection is None  # no engine built, nothing announced
        conn = j.connect()
        (engine,) = cls.instances
        # the picked engine, wrapped with the retries and fallbacks of [retry]
        assert (conn.engine_key, conn.engine.engine, conn.model, conn.how) == ("scripted", engine, "first", "explicit")
        assert (j.engine.engine, j.engine_key, j.model, j.connection) == (engine, "scripted", "first", conn)
        assert j.connect() is conn and len(cls.instances) == 1 and len(said) == 1  # idempotent, announced once
        assert j.ask("q") == "hi" and engine.calls[0].model == "first"
        j.close()
        with pytest.raises(UsageError, match="closed"):
            j.connect()


def test_what_the_caller_gave_is_readable_at_once():
    engine = FakeEngine(["x"])
    j = Jarvis(engine=engine, model="m")
    assert (j.engine, j.engine_key, j.model) == (engine, "fake", "m")
    assert j.connect().model == "m" and engine.calls == []  # a given model is not looked up


def test_connect_is_thread_safe():
    import threading

    cls = scripted(["x"], models=("m",))
    with installed_registry(simple_plugin("p", engines={"scripted": cls})):
        j = Jarvis(JarvisConfig(), engine="scripted")
        got, start = [], threading.Barrier(8)

        def connect():
            start.wait()
            got.append(j.connect())

        threads = [threading.Thread(target=connect) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=30)
        assert len(got) == 8 and all(c is got[0] for c in got) and len(cls.instances) == 1
        j.close()
