"""The SDK builds agent requests from a frozen RequestScope, not by reading the Jarvis object's privates.

``jarvis_core.sdk_agents`` imports nothing from ``jarvis_core.sdk`` (no import cycle) and touches no private
member of anything it is given; a scope built by hand, with no ``Jarvis`` at all, runs an agent.
"""

from __future__ import annotations

import ast
import pathlib

import attrs
import pytest

import jarvis_core.sdk_agents as sdk_agents
from jarvis_core.agents import BaseAgent, TextDelta
from jarvis_core.config.schema import AgentConfig, JarvisConfig
from jarvis_core.events import EventBus
from jarvis_core.request_scope import RequestScope
from jarvis_core.sdk import Jarvis
from jarvis_core.testing import FakeEngine, installed_registry
from jarvis_core.testing.plugins import simple_plugin
from jarvis_core.types import AgentContext, Message


class EchoAgent(BaseAgent):
    agent_id = "echo"

    async def loop(self, run):
        run.turns = 1
        reply = self.engine.generate([Message.user(run.input)], model=self.model).content
        run.finish(f"{self.model}: {reply}", "final")
        yield TextDelta(run.run_id, 1, reply)


def test_sdk_agents_imports_nothing_from_sdk_and_reads_no_private_member():
    tree = ast.parse(pathlib.Path(sdk_agents.__file__).read_text(encoding="utf-8"))
    imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert "jarvis_core.sdk" not in imported
    private = sorted({n.attr for n in ast.walk(tree)
                      if isinstance(n, ast.Attribute) and n.attr.startswith("_") and not n.attr.startswith("__")})
    assert private == []


def test_a_scope_built_without_a_jarvis_runs_an_agent_with_what_it_holds():
    engine = FakeEngine(["hi"])
    used = []

    def use(model):
        used.append(model)
        return engine, "fake", model or "default-model"

    bus = EventBus()
    scope = RequestScope(use, JarvisConfig(), agent_key="echo", model_given="given", bus=bus)
    with installed_registry(simple_plugin("p", agents={"echo": EchoAgent})):
        key, runner = sdk_agents.agent_for_request(scope, None, None)
        result = sdk_agents.run_agent(key, runner, "q", AgentContext())
    assert (key, used, result.content) == ("echo", ["given"], "given: hi")
    assert runner.bus is bus


def test_the_scope_is_frozen_and_says_which_agent_a_request_runs():
    config = JarvisConfig(agent=AgentConfig(default="echo"))
    scope = RequestScope(lambda m: (FakeEngine(), "fake", "m"), config)
    assert scope.requested_agent() == "echo" and scope.requested_agent("other") == "other"
    assert attrs.evolve(scope, config=None).requested_agent() is None  # a borrowed engine reads no config
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        scope.agent_key = "x"  # type: ignore[misc]


def test_jarvis_hands_its_settings_over_in_the_scope():
    engine = FakeEngine(["x"])
    j = Jarvis(engine=engine, model="m", agent="echo", tools=["a", "b"], system_prompt="S")
    scope = j.scope()
    assert (scope.agent_key, scope.tool_keys, scope.model_given, scope.system_prompt) == ("echo", ("a", "b"), "m", "S")
    assert scope.config is None  # borrowed engine, no config given: the user's config file is not read
    assert scope.use(None)[1:] == (engine.engine_id or "FakeEngine", "m")
