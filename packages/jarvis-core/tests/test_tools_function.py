"""function_tool: a plain function as a tool, honouring the contract and run by the one executor."""

from __future__ import annotations

import json
import os

import pytest

from jarvis_core.errors import JarvisError, UsageError
from jarvis_core.tools import ToolExecutor, ToolPolicy, check_tool, function_tool
from jarvis_core.tools.base import has_async_run, has_sync_run
from jarvis_core.types import ToolCall

CITY = {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
        "required": ["city"], "additionalProperties": False}


def call(name: str, arguments: dict, call_id: str = "c1") -> ToolCall:
    return ToolCall(call_id, name, json.dumps(arguments))


def test_a_function_becomes_a_tool_named_and_described_by_itself():
    def forecast(city: str) -> str:
        """Tomorrow's weather."""
        return city

    tool = function_tool(forecast)
    assert check_tool(tool) is tool
    assert (tool.spec.name, tool.spec.description) == ("forecast", "Tomorrow's weather.")
    assert tool.spec.parameters == {"type": "object", "properties": {"city": {"type": "string"}},  # from the signature
                                    "required": ["city"], "additionalProperties": False}
    assert tool.policy == ToolPolicy()
    named = function_tool(forecast, name="weather", description="Weather.", parameters=CITY,
                          policy=ToolPolicy(timeout=2.0))
    assert (named.spec.name, named.spec.description, named.policy.timeout) == ("weather", "Weather.", 2.0)
    assert named.spec.parameters == CITY and repr(named) == "<function tool 'weather'>"


def test_the_executor_checks_the_arguments_and_sends_other_results_as_json():
    weather = function_tool(lambda city, days=1: {"city": city, "days": days}, name="weather", parameters=CITY)
    ex = ToolExecutor([weather])
    result = ex.execute(call("weather", {"city": "Oslo", "days": 2}))
    assert result.ok and json.loads(result.content) == {"city": "Oslo", "days": 2}
    bad = ex.execute(call("weather", {"city": 3}))
    assert not bad.ok and "'city' must be of type string" in bad.content
    broken = ToolExecutor([function_tool(lambda: 1 / 0, name="broken")]).execute(call("broken", {}))
    assert not broken.ok and broken.content == "error: ZeroDivisionError: division by zero"


def test_a_module_level_function_runs_in_a_child_process():
    pid = function_tool(os.getpid, name="pid", policy=ToolPolicy(isolation="process", timeout=30.0))
    result = ToolExecutor([pid]).execute(call("pid", {}))
    assert result.ok and int(result.content) != os.getpid()


def test_bad_names_are_usage_errors():
    with pytest.raises(UsageError, match="a tool name must be letters, digits") as info:
        function_tool(lambda: 1, name="two words")
    assert info.value.argument == "name" and isinstance(info.value, (JarvisError, ValueError))
    with pytest.raises(UsageError, match="tool name"):
        function_tool(lambda: 1)  # a lambda's own name, '<lambda>', is not a tool name

    async def later() -> str:
        return "x"

    assert has_async_run(function_tool(later)) and not has_sync_run(function_tool(later))  # awaited by the executor
