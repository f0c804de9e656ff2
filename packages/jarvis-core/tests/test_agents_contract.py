"""The shared agent constructor, the settings precedence, ``[agents.<key>]``/``[tools.<key>]`` config,
and building registered agents and tools."""

from __future__ import annotations

import pytest

from jarvis_core.agents import BaseAgent, ToolUsingAgent, create_agent, resolve_settings
from jarvis_core.config import load_config
from jarvis_core.errors import ConfigError, InvalidOptionError, UnknownNameError
from jarvis_core.testing.fake_engine import FakeEngine
from jarvis_core.testing.plugins import registry_with, simple_plugin
from jarvis_core.tools import BaseTool, InvalidToolError, ToolPolicy, create_tool
from jarvis_core.types import Message, Role, ToolSpec


class Plain(BaseAgent):
    agent_id = "plain"


class Tuned(ToolUsingAgent):
    agent_id = "tuned"
    default_max_turns = 4
    default_temperature = 0.3
    default_system_prompt = "You are tuned."

    def __init__(self, engine, *, model, style: str = "terse", **kwargs) -> None:
        super().__init__(engine, model=model, **kwargs)
        self.style = style


class Memo(BaseTool):
    spec = ToolSpec("memo", "Remember.", {"type": "object", "properties": {}})
    policy = ToolPolicy(isolation="inline")

    def __init__(self, *, root: str, engine=None, home=None) -> None:
        self.root, self.engine, self.home = root, engine, home

    def run(self) -> str:
        return self.root


def config(tmp_path, text: str):
    path = tmp_path / "config.toml"
    path.write_text(text, encoding="utf-8")
    return load_config(path, environ={}, registry=registry_with())


# -- precedence -----------------------------------------------------------------------------------
def test_class_default_beats_the_core_default():
    s = resolve_settings(Tuned, "tuned", {}, None)
    assert (s.max_turns, s.temperature, s.system_prompt, s.max_tokens) == (4, 0.3, "You are tuned.", None)
    assert s.sources == {"max_turns": "class", "temperature": "class", "system_prompt": "class", "max_tokens": "core"}
    assert resolve_settings(Plain, "plain", {}, None).max_turns == 10


def test_config_beats_class_and_argument_beats_config(tmp_path):
    cfg = config(tmp_path, "[agent]\nmax_turns = 7\n\n[agents.tuned]\ntemperature = 0.9\nmax_tokens = 256\n")
    s = resolve_settings(Tuned, "tuned", {}, cfg)
    assert (s.max_turns, s.temperature, s.max_tokens) == (7, 0.9, 256)
    assert s.sources["max_turns"] == "[agent]" and s.sources["temperature"] == "[agents.tuned]"
    s = resolve_settings(Tuned, "tuned", {"max_turns": 2, "temperature": 0.0}, cfg)
    assert (s.max_turns, s.temperature) == (2, 0.0)  # an explicit 0 is kept
    cfg2 = config(tmp_path, "[agent]\nmax_turns = 7\n\n[agents.tuned]\nmax_turns = 5\n")
    assert resolve_settings(Tuned, "tuned", {}, cfg2).max_turns == 5  # the agent's table beats [agent]


@pytest.mark.parametrize("table, message", [
    ("max_turns = 0", "max_turns must be a whole number of at least 1, got 0"),
    ('temperature = "hot"', "temperature must be a number from 0 to 2"),
    ("system_prompt = 3", "system_prompt must be text"),
])
def test_bad_config_values_are_config_errors_naming_the_key(tmp_path, table, message):
    cfg = config(tmp_path, f"[agents.tuned]\n{table}\n")
    with pytest.raises(ConfigError, match=message) as info:
        Tuned(FakeEngine(), model="m", config=cfg)
    assert info.value.key.startswith("agents.tuned.")


def test_agents_and_tools_tables_must_be_tables(tmp_path):
    with pytest.raises(ConfigError, match=r"wrong type for 'agents\.tuned': expected a table"):
        config(tmp_path, "[agents]\ntuned = 3\n")
    cfg = config(tmp_path, '[tools.memo]\nroot = "/srv"\n')
    assert cfg.tools == {"memo": {"root": "/srv"}} and cfg.agents == {}


# -- the constructor ------------------------------------------------------------------------------
def test_the_system_prompt_is_one_leading_system_message():
    from jarvis_core.types import AgentContext

    engine = FakeEngine(["ok"])
    context = AgentContext(messages=[Message.system("Context rules."), Message.user("hi"), Message.assistant("hey")])
    Tuned(engine, model="m").run("go", context)
    sent = engine.calls[0].messages
    assert [m.role for m in sent] == [Role.SYSTEM, Role.USER, Role.ASSISTANT, Role.USER]
    assert sent[0].content == "You are tuned.\n\nContext rules."
    assert engine.calls[0].temperature == 0.3


def test_engine_options_are_checked_at_construction_and_sent_every_call():
    with pytest.raises(InvalidOptionError, match="bogus"):
        Plain(FakeEngine(), model="m", bogus=1)
    engine = FakeEngine(["ok"])
    Plain(engine, model="m", top_p=0.5, max_tokens=64).run("x")
    assert engine.calls[0].options == {"top_p": 0.5} and engine.calls[0].max_tokens == 64


def test_an_agent_without_tool_support_refuses_tools_and_a_model_is_required():
    with pytest.raises(ConfigError, match="agent 'plain' does not use tools"):
        Plain(FakeEngine(), model="m", tools=[Memo(root="/")])
    with pytest.raises(ConfigError, match="needs a model"):
        Plain(FakeEngine(), model="")


# -- factories ------------------------------------------------------------------------------------
def registry():
    return registry_with(simple_plugin("acme", agents={"tuned": Tuned}, tools={"memo": Memo}))


def test_create_agent_passes_config_options_below_explicit_arguments(tmp_path):
    cfg = config(tmp_path, '[agents.tuned]\nstyle = "chatty"\nmax_turns = 6\n')
    agent = create_agent("tuned", FakeEngine(), model="m", config=cfg, registry=registry())
    assert isinstance(agent, Tuned) and agent.style == "chatty" and agent.max_turns == 6
    agent = create_agent("tuned", FakeEngine(), model="m", config=cfg, registry=registry(), style="plain")
    assert agent.style == "plain"
    bad = config(tmp_path, "[agents.tuned]\ncolour = 1\n")
    with pytest.raises(ConfigError, match=r"agent 'tuned' rejected an option from \[agents.tuned\] \(colour\)"):
        create_agent("tuned", FakeEngine(), model="m", config=bad, registry=registry())
    with pytest.raises(UnknownNameError, match="unknown agent 'nope'; available: tuned"):
        create_agent("nope", FakeEngine(), model="m", registry=registry())


def test_create_tool_passes_config_and_the_runtime_objects_it_asks_for(tmp_path):
    cfg = config(tmp_path, '[tools.memo]\nroot = "/srv/notes"\n')
    engine = FakeEngine()
    tool = create_tool("memo", config=cfg, registry=registry(), engine=engine, model="m", bus=None, home="/h")
    assert (tool.root, tool.engine, tool.home) == ("/srv/notes", engine, "/h")  # model/bus not in its signature
    with pytest.raises(ConfigError, match=r"tool 'memo' has no option.* 'colour'; allowed: root"):
        create_tool("memo", config={"root": "/", "colour": 1}, registry=registry())
    with pytest.raises(InvalidToolError, match=r"tool 'memo' \(plugin 'acme', .*\) failed to build: TypeError"):
        create_tool("memo", registry=registry())  # root is required


def test_create_tool_checks_what_the_factory_returns():
    def factory():
        return object()

    reg = registry_with(simple_plugin("acme", tools={"junk": factory}))
    with pytest.raises(InvalidToolError, match=r"tool 'junk' .*built 'object', which has no 'spec'"):
        create_tool("junk", registry=reg)


def test_config_show_renders_the_agent_and_tool_tables_with_secrets_masked(tmp_path):
    from jarvis_core.config.render import dumps_toml

    cfg = config(tmp_path, '[agents.tuned]\nmax_turns = 4\n\n[tools.web]\napi_key = "sk-secret-123"\n')
    text = dumps_toml(cfg)
    assert "[agents.tuned]\nmax_turns = 4" in text
    assert "[tools.web]" in text and "sk-secret-123" not in text
