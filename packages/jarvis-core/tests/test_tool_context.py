"""A tool built by create_tool may take its runtime as one typed ToolContext (``context``) instead of
objects matched by name; the name-matched form keeps working, and ``context`` cannot come from the config."""

from __future__ import annotations

import pathlib
from typing import Any, Dict

import attrs
import pytest

from jarvis_core.errors import ConfigError
from jarvis_core.events import EventBus
from jarvis_core.sdk import Jarvis
from jarvis_core.testing import FakeEngine, installed_registry
from jarvis_core.testing.plugins import simple_plugin
from jarvis_core.tools import BaseTool, ToolContext, create_tool
from jarvis_core.types import ToolSpec

SPEC = ToolSpec("ctx", "Says what it was built with.", {"type": "object", "properties": {}})


class ContextTool(BaseTool):
    spec = SPEC

    def __init__(self, *, context: ToolContext, prefix: str = "") -> None:
        self.context = context
        self.prefix = prefix

    def run(self, **arguments: Any) -> str:
        return f"{self.prefix}{self.context.model}"


class NamedTool(BaseTool):
    spec = SPEC

    def __init__(self, *, model: str = "", home: Any = None) -> None:
        self.model, self.home = model, home

    def run(self, **arguments: Any) -> str:
        return self.model


def test_a_tool_with_a_context_parameter_gets_the_runtime_typed_and_its_options_beside_it(tmp_path):
    engine, bus = FakeEngine(), EventBus()
    with installed_registry(simple_plugin("p", tools={"ctx": ContextTool})) as registry:
        tool = create_tool("ctx", config={"prefix": "> "}, registry=registry, engine=engine, model="m",
                           home=tmp_path, bus=bus)
    assert tool.context == ToolContext(engine=engine, model="m", home=tmp_path, bus=bus)
    assert tool.prefix == "> " and tool.run() == "> m"
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        tool.context.model = "other"  # type: ignore[misc]


def test_context_is_not_a_config_option_and_the_named_form_still_works(tmp_path):
    with installed_registry(simple_plugin("p", tools={"ctx": ContextTool, "named": NamedTool})) as registry:
        with pytest.raises(ConfigError, match="'context' is given by jarvis"):
            create_tool("ctx", config={"context": "x"}, registry=registry)
        with pytest.raises(ConfigError, match=r"allowed: prefix$"):
            create_tool("ctx", config={"nope": 1}, registry=registry)
        named = create_tool("named", registry=registry, model="m", home=tmp_path, engine=FakeEngine())
    assert (named.model, named.home) == ("m", tmp_path)


def test_an_agent_request_builds_its_tools_with_the_requests_context():
    from jarvis_core.agents import BaseAgent, TextDelta

    seen: Dict[str, Any] = {}

    class Peek(BaseAgent):
        agent_id = "peek"
        accepts_tools = True

        async def loop(self, run):
            seen["context"] = self.tools[0].context
            run.turns = 1
            run.finish("ok", "final")
            yield TextDelta(run.run_id, 1, "ok")

    engine = FakeEngine()
    with installed_registry(simple_plugin("p", agents={"peek": Peek}, tools={"ctx": ContextTool})):
        Jarvis(engine=engine, model="m", agent="peek", tools=["ctx"]).ask("q")
    context = seen["context"]
    assert (context.engine, context.model) == (engine, "m")
    assert isinstance(context.home, pathlib.Path)
