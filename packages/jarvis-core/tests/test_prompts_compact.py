"""The shared tool-description compactor (``jarvis_core.prompts.compact``): what it drops, what it keeps."""

from __future__ import annotations

import copy
import json

from jarvis_core.prompts.compact import FORMAT_HINTS, compact_schema, compact_tools
from jarvis_core.types import ToolSpec

EVENT = {"type": "function", "function": {
    "name": "add_event", "description": "Add an event\n  to the calendar",
    "allow_direct_answer": False,
    "parameters": {"type": "object", "description": "the event", "required": ["title", "when"], "properties": {
        "title": {"type": "string", "description": "what it is", "minLength": 1, "examples": ["Dentist"]},
        "when": {"type": "string", "format": "date-time", "pattern": "^\\d{4}", "description": "ISO time"},
        "kind": {"type": "string", "enum": ["work", "home"], "default": "home"},
        "description": {"type": "string", "description": "a property NAMED description"},
        "guests": {"type": "array", "maxItems": 5,
                   "items": {"type": "object", "properties": {"email": {"type": "string", "format": "email"}}}},
        "repeat": {"anyOf": [{"type": "null"}, {"type": "integer", "minimum": 1, "description": "days"}]},
    }}}}


def test_default_keeps_names_types_enums_required_and_the_tool_description():
    before = copy.deepcopy(EVENT)
    (tool,) = compact_tools([EVENT])
    assert EVENT == before  # the input is never modified
    fn = tool["function"]
    assert tool["type"] == "function" and fn["name"] == "add_event"
    assert fn["description"] == "Add an event to the calendar"  # whitespace collapsed
    assert "allow_direct_answer" not in fn  # Jarvis extras stay out
    params = fn["parameters"]
    assert params == {"type": "object", "required": ["title", "when"], "properties": {
        "title": {"type": "string"},
        "when": {"type": "string"},
        "kind": {"type": "string", "enum": ["work", "home"]},
        "description": {"type": "string"},
        "guests": {"type": "array", "items": {"type": "object", "properties": {"email": {"type": "string"}}}},
        "repeat": {"anyOf": [{"type": "null"}, {"type": "integer"}]},
    }}
    assert len(json.dumps(tool)) < len(json.dumps(EVENT)) * 0.6


def test_each_kind_of_text_can_be_kept():
    (full,) = compact_tools([EVENT], param_descriptions=True, format_hints=True)
    props = full["function"]["parameters"]["properties"]
    assert props["when"] == {"type": "string", "format": "date-time", "pattern": "^\\d{4}", "description": "ISO time"}
    (bare,) = compact_tools([EVENT], tool_descriptions=False)
    assert "description" not in bare["function"]


def test_tool_specs_and_bare_dicts_are_accepted():
    spec = ToolSpec("clock", "What time it is", {"type": "object", "properties": {"tz": {"type": "string",
                                                                                         "description": "zone"}}})
    assert compact_tools([spec, {"name": "noop"}]) == [
        {"type": "function", "function": {"name": "clock", "description": "What time it is",
                                          "parameters": {"type": "object", "properties": {"tz": {"type": "string"}}}}},
        {"type": "function", "function": {"name": "noop", "parameters": {"type": "object", "properties": {}}}}]


def test_schema_values_that_are_not_schemas_are_left_alone():
    assert compact_schema({"enum": [{"format": "x"}], "const": {"description": "kept"}}) == {
        "enum": [{"format": "x"}], "const": {"description": "kept"}}
    assert "format" in FORMAT_HINTS and "type" not in FORMAT_HINTS
