"""Which engine a session gets: named, configured, fallback (opt-in, announced, published), discovered
(announced), embedded (announced), or a one-line error saying what to do."""

from __future__ import annotations

import pytest

from jarvis_core.config import EngineSettings, JarvisConfig
from jarvis_core.engine_choice import choose_engine, resolve_model
from jarvis_core.errors import EngineConnectionError, JarvisError, UnknownNameError
from jarvis_core.events import EventType, default_bus
from jarvis_core.testing import FakeEngine, installed_registry


@pytest.fixture(autouse=True)
def isolated_env(monkeypatch, tmp_path):
    for var in ("JARVIS_CONFIG", "JARVIS_ENGINE", "JARVIS_LOAD_PLUGINS", "JARVIS_DISABLE_PLUGINS"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("JARVIS_HOME", str(tmp_path / "home"))


def engine_class(*, healthy=True, base_url=None):
    """A registrable engine class; ``cls.instances`` lists what was built, ``probes`` counts health calls."""
    instances = []

    class Probed(FakeEngine):
        probes = 0

        def __init__(self, **options):
            super().__init__(["answer"], healthy=healthy)
            self.options = options
            self.base_url = options.get("host", base_url)
            instances.append(self)

        def health(self):
            type(self).probes += 1
            return super().health()

    Probed.instances = instances
    return Probed


def registry(*, discoverable=None, **engines):
    """Register engines by key; keys in ``discoverable`` get ``discoverable=False`` when mapped to False."""
    discoverable = discoverable or {}

    class Plugin:
        jarvis_plugin_name = "test-engines"

        @staticmethod
        def jarvis_register_engines(register):
            for key, cls in engines.items():
                register(key, cls, discoverable=discoverable.get(key, True))

    from jarvis_core import hookimpl

    Plugin.jarvis_register_engines = staticmethod(hookimpl(Plugin.jarvis_register_engines))
    return installed_registry(Plugin())


def config(**engine):
    return JarvisConfig(engine=EngineSettings(**engine))


def test_named_engine_with_host_override():
    cls = engine_class()
    with registry(up=cls):
        choice = choose_engine(config(default="other"), "up", host="http://there:9")
    assert (choice.key, choice.how) == ("up", "explicit")
    assert choice.engine.options == {"host": "http://there:9"}
    assert cls.probes == 0  # no health probe for an engine the caller named


def test_unknown_engine_lists_installed():
    with registry(up=engine_class(), down=engine_class()):
        with pytest.raises(UnknownNameError, match=r"unknown engine 'upp'; available: down, up"):
            choose_engine(config(), "upp")


def test_configured_default_is_used_without_probe_when_fallback_is_off():
    down = engine_class(healthy=False)
    with registry(down=down, up=engine_class()):
        choice = choose_engine(config(default="down"))
    assert (choice.key, choice.how) == ("down", "configured")
    assert down.probes == 0


def test_fallback_is_announced_and_published():
    down, up = engine_class(healthy=False, base_url="http://down:1"), engine_class(base_url="http://up:2")
    said, events = [], []
    unsubscribe = default_bus().subscribe(events.append, EventType.ENGINE_FALLBACK)
    try:
        with registry(down=down, up=up):
            choice = choose_engine(config(default="down", fallback=True), announce=said.append)
    finally:
        unsubscribe()
    assert (choice.key, choice.how) == ("up", "fallback")
    assert said == [
        "down at http://down:1 is not answering; falling back to up at http://up:2 ([engine] fallback = true)"
    ]
    assert [dict(e.data) for e in events] == [{"requested": "down", "used": "up", "reason": "unhealthy"}]
    assert down.instances[0].closed  # the engine not used is closed
    assert down.probes == 1  # probed once, not again by discovery


def test_fallback_with_nothing_else_is_an_error_naming_the_engine():
    with registry(down=engine_class(healthy=False, base_url="http://down:1")):
        with pytest.raises(EngineConnectionError, match=r"down at http://down:1 is not answering and no other"):
            choose_engine(config(default="down", fallback=True, auto_embedded=False))


def test_nothing_configured_uses_first_healthy_and_announces_it():
    a, b, c = engine_class(healthy=False), engine_class(base_url="http://b:1"), engine_class(base_url="http://c:1")
    said = []
    with registry(a=a, b=b, c=c):
        choice = choose_engine(config(), announce=said.append)
    assert (choice.key, choice.how) == ("b", "discovered")
    assert said == ["using b at http://b:1 (found by probing; pin it with [engine] default or --engine)"]
    assert c.instances[0].closed and a.instances[0].closed and not choice.engine.closed


def test_nothing_reachable_starts_the_embedded_engine_announced():
    embedded = engine_class(healthy=False)
    said = []
    with registry(a=engine_class(healthy=False), embedded=embedded, discoverable={"embedded": False}):
        choice = choose_engine(config(), announce=said.append)
        assert (choice.key, choice.how) == ("embedded", "embedded")
        assert embedded.probes == 0  # not probed by discovery: it would have to start a server
        assert said == [
            "no engine server is reachable; starting the embedded llama.cpp server "
            "(turn this off with [engine] auto_embedded = false)"
        ]


def test_nothing_reachable_without_embedded_says_what_to_do():
    with registry(a=engine_class(healthy=False), embedded=engine_class(), discoverable={"embedded": False}):
        with pytest.raises(EngineConnectionError) as info:
            choose_engine(config(auto_embedded=False))
    message = str(info.value)
    assert "no inference engine is reachable (probed: a)" in message
    assert "--engine NAME and --host URL" in message
    assert "jarvis-engine-openai-compat[embedded]" in message


def test_host_without_an_engine_is_a_usage_error():
    with registry(a=engine_class()):
        with pytest.raises(JarvisError, match="--host needs --engine too"):
            choose_engine(config(), host="http://x:1")


def test_resolve_model_prefers_argument_then_listing():
    engine = FakeEngine(models=["first", "second"])
    said = []
    assert resolve_model(engine, "fake", None, "given", announce=said.append) == "given"
    assert said == []
    assert resolve_model(engine, "fake", config(), announce=said.append) == "first"
    assert said == ["model first (the first of 2 offered by fake; choose with --model)"]


def test_resolve_model_uses_the_configured_model_before_asking_the_engine():
    class NoListing(FakeEngine):
        def list_models(self):
            raise AssertionError("the engine should not be asked")

    assert resolve_model(NoListing(), "fake", config(model="from-config")) == "from-config"
