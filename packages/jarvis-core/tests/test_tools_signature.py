"""Tools from a signature: ``@tool`` and ``function_tool(fn)`` build the schema from type hints and the
docstring, and the executor runs them (sync and async) with the arguments converted to the declared types."""

from __future__ import annotations

import datetime
import enum
from typing import Annotated, Dict, List, Literal, Optional, Sequence, Tuple

import attrs
import pytest

from jarvis_core.errors import UsageError
from jarvis_core.tools import ToolExecutor, ToolPolicy, function_tool, tool
from jarvis_core.types import ToolCall


@attrs.frozen
class Point:
    """A point on the map."""

    lat: float
    lon: float
    label: str = ""


class Unit(enum.Enum):
    C = "celsius"
    F = "fahrenheit"


def google(city: str, days: int = 1, unit: Literal["C", "F"] = "C", tags: Optional[List[str]] = None) -> str:
    """The weather forecast for a city.

    Several days at once.

    Args:
        city: the city's name,
            as the post office writes it.
        days: how many days ahead.
        unit: Celsius or Fahrenheit.
        tags: labels to attach.
    """
    return f"{city} {days} {unit} {tags}"


def sphinx(city: str, days: int = 1) -> str:
    """The weather forecast for a city.

    :param city: the city's name.
    :param days: how many days ahead.
    """
    return city


def numpy(city: str, days: int = 1) -> str:
    """The weather forecast for a city.

    Parameters
    ----------
    city : str
        the city's name.
    days : int
        how many days ahead.
    """
    return city


@pytest.mark.parametrize("fn", [google, sphinx, numpy])
def test_each_docstring_style_gives_the_descriptions(fn):
    spec = function_tool(fn).spec
    assert spec.name == fn.__name__
    assert spec.description.startswith("The weather forecast for a city.")
    props = spec.parameters["properties"]
    assert props["city"] == {"type": "string", "description": "the city's name." if fn is not google
                             else "the city's name, as the post office writes it."}
    assert props["days"] == {"type": "integer", "description": "how many days ahead.", "default": 1}
    assert spec.parameters["required"] == ["city"]
    assert spec.parameters["additionalProperties"] is False


def test_the_google_example_in_full():
    assert function_tool(google).spec.parameters == {
        "type": "object",
        "properties": {
            "city": {"type": "string", "description": "the city's name, as the post office writes it."},
            "days": {"type": "integer", "description": "how many days ahead.", "default": 1},
            "unit": {"enum": ["C", "F"], "type": "string", "description": "Celsius or Fahrenheit.", "default": "C"},
            "tags": {"anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "null"}],
                     "description": "labels to attach.", "default": None},
        },
        "required": ["city"],
        "additionalProperties": False,
    }
    assert function_tool(google).spec.description == "The weather forecast for a city.\n\nSeveral days at once."


def test_types_map_to_schemas():
    def f(p: Point, unit: Unit, pair: Tuple[int, str], scores: Dict[str, float], maybe: Optional[int],
          note: Annotated[str, "a note", {"maxLength": 5}], many: Sequence[Point] = ()) -> str:
        return ""

    props = function_tool(f).spec.parameters["properties"]
    assert props["p"] == {"type": "object", "description": "A point on the map.", "additionalProperties": False,
                          "properties": {"lat": {"type": "number"}, "lon": {"type": "number"},
                                         "label": {"type": "string", "default": ""}},
                          "required": ["lat", "lon"]}
    assert props["unit"] == {"enum": ["celsius", "fahrenheit"], "type": "string"}
    assert props["pair"] == {"type": "array", "prefixItems": [{"type": "integer"}, {"type": "string"}],
                             "minItems": 2, "maxItems": 2}
    assert props["scores"] == {"type": "object", "additionalProperties": {"type": "number"}}
    assert props["maybe"] == {"type": ["integer", "null"]}
    assert props["note"] == {"type": "string", "description": "a note", "maxLength": 5}
    assert props["many"]["type"] == "array" and props["many"]["default"] == []


def test_the_executor_runs_it_with_declared_types():
    seen = {}

    @tool(policy=ToolPolicy(isolation="inline", timeout=None))
    def where(at: Point, unit: Unit = Unit.C) -> dict:
        """Where to look."""
        seen["at"], seen["unit"] = at, unit
        return {"lat": at.lat, "unit": unit.value}

    out = ToolExecutor([where]).execute(ToolCall("1", "where", '{"at": {"lat": 1.5, "lon": 2}, "unit": "fahrenheit"}'))
    assert out.ok, out.content
    assert seen == {"at": Point(1.5, 2.0), "unit": Unit.F}
    assert out.content == '{"lat": 1.5, "unit": "fahrenheit"}'
    bad = ToolExecutor([where]).execute(ToolCall("2", "where", '{"at": {"lat": "north"}}'))
    assert not bad.ok
    assert bad.content == ("error: invalid arguments for 'where': missing required argument(s): 'at.lon'; "
                           "argument 'at.lat' must be of type number, got string")
    assert where(Point(0, 0)) == {"lat": 0, "unit": "celsius"}  # still the function


async def test_an_async_function_is_awaited():
    @tool
    async def shout(text: str) -> str:
        """Say it louder.

        :param text: what to say.
        """
        return text.upper()

    assert not callable(getattr(shout, "run", None))
    executor = ToolExecutor([shout])
    result = await executor.aexecute(ToolCall("1", "shout", '{"text": "hi"}'))
    assert (result.ok, result.content) == (True, "HI")
    assert executor.execute(ToolCall("2", "shout", '{"text": "yo"}')).content == "YO"  # sync callers too


@pytest.mark.parametrize("fn, problem", [
    (lambda *args: "", "parameter 'args' must be a plain or keyword-only parameter"),
    (lambda when: "", None),
])
def test_parameters_the_model_cannot_pass_are_refused(fn, problem):
    if problem is None:
        assert function_tool(fn, name="f").spec.parameters["properties"] == {"when": {}}  # no hint: anything
        return
    with pytest.raises(UsageError, match=problem):
        function_tool(fn, name="f")


def test_a_type_without_a_schema_is_named():
    def f(when: datetime.datetime) -> str:
        return ""

    with pytest.raises(UsageError, match="tool 'f': parameter 'when': type 'datetime' has no JSON schema"):
        function_tool(f)


def test_explicit_parameters_still_win():
    t = function_tool(lambda city: city, name="w", parameters={"type": "object", "properties": {"city": {}}})
    assert t.spec.parameters == {"type": "object", "properties": {"city": {}}}


def test_the_worked_example_in_the_plugin_guide():
    import json
    import pathlib
    import re

    guide = (pathlib.Path(__file__).resolve().parents[3] / "docs" / "plugins.md").read_text(encoding="utf-8")
    code, schema = re.search(r"<!-- tool-example -->\n```python\n(.*?)```.*?```json\n(.*?)```", guide, re.S).groups()
    namespace: dict = {}
    exec(compile(code, "docs/plugins.md", "exec"), namespace)
    plan_trip = namespace["plan_trip"]
    assert plan_trip.spec.parameters == json.loads(schema)
    assert plan_trip.spec.description == "Plan a trip through the given stops."
    result = ToolExecutor([plan_trip]).execute(ToolCall("1", "plan_trip", '{"stops": [{"city": "Lyon"}, {"city": "Nice"}]}'))
    assert (result.ok, result.content) == (True, "2 stops by train")
