"""The JSON-schema argument checker: each keyword it supports, and messages a model can act on."""

from __future__ import annotations

import pytest

from jarvis_core.tools.schema import check_arguments, decode_arguments, validate

SCHEMA = {
    "type": "object",
    "properties": {
        "path": {"type": "string", "minLength": 1},
        "max_lines": {"type": "integer", "minimum": 1, "maximum": 1000},
        "mode": {"enum": ["text", "bytes"]},
        "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 2},
        "ratio": {"type": "number", "exclusiveMinimum": 0},
        "opts": {"type": "object", "properties": {"deep": {"type": "boolean"}}, "required": ["deep"]},
        "either": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
        "maybe": {"type": ["string", "null"]},
    },
    "required": ["path"],
    "additionalProperties": False,
}


@pytest.mark.parametrize("args", [
    {"path": "a"},
    {"path": "a", "max_lines": 10, "mode": "text", "tags": ["x"], "ratio": 0.5, "opts": {"deep": True}},
    {"path": "a", "either": 3, "maybe": None, "ratio": 2},
])
def test_valid_arguments_pass(args):
    assert validate(args, SCHEMA) == []


@pytest.mark.parametrize("args, message", [
    ({"path": ""}, "argument 'path' must have at least 1 character(s), got 0"),
    ({"path": "a", "max_lines": "10"}, "argument 'max_lines' must be of type integer, got string"),
    ({"path": "a", "max_lines": 1.5}, "argument 'max_lines' must be of type integer, got number"),
    ({"path": "a", "max_lines": True}, "argument 'max_lines' must be of type integer, got boolean"),
    ({"path": "a", "max_lines": 0}, "argument 'max_lines' must be at least 1, got 0"),
    ({"path": "a", "max_lines": 5000}, "argument 'max_lines' must be at most 1000, got 5000"),
    ({"path": "a", "mode": "hex"}, 'argument \'mode\' must be one of "text", "bytes", got "hex"'),
    ({"path": "a", "tags": ["x", 2]}, "argument 'tags[1]' must be of type string, got integer"),
    ({"path": "a", "tags": ["x", "y", "z"]}, "argument 'tags' must have at most 2 item(s), got 3"),
    ({"path": "a", "ratio": 0}, "argument 'ratio' must be greater than 0, got 0"),
    ({"path": "a", "opts": {}}, "missing required argument(s): 'opts.deep'"),
    ({"path": "a", "opts": {"deep": "yes"}}, "argument 'opts.deep' must be of type boolean, got string"),
    ({"path": "a", "either": [1]}, "argument 'either' matches none of the allowed forms"),
    ({"path": "a", "maybe": 1}, "argument 'maybe' must be of type string or null, got integer"),
    ({"path": "a", "extra": 1}, "unknown argument 'extra'; allowed: path, max_lines"),
    ({}, "missing required argument(s): 'path'"),
])
def test_each_problem_is_named_for_the_model(args, message):
    problems = validate(args, SCHEMA)
    assert problems and message in problems[0]


def test_all_problems_are_reported_up_to_a_limit():
    problems = validate({"max_lines": "x", "mode": "hex", "ratio": -1}, SCHEMA)
    assert len(problems) == 4  # missing path, then one per bad argument
    assert len(validate({"max_lines": "x", "mode": "hex", "ratio": -1}, SCHEMA, limit=2)) == 2


def test_additional_properties_as_a_schema():
    schema = {"type": "object", "additionalProperties": {"type": "integer"}}
    assert validate({"a": 1}, schema) == []
    assert validate({"a": "1"}, schema) == ["argument 'a' must be of type integer, got string"]


@pytest.mark.parametrize("raw, expected", [
    (None, {}), ("", {}), ("  ", {}), ('{"a": 1}', {"a": 1}), ({"a": 1}, {"a": 1}),
])
def test_decode_accepts_text_mappings_and_empty(raw, expected):
    assert decode_arguments(raw) == (expected, "")


def test_check_arguments_joins_problems_and_skips_without_schema():
    args, problem = check_arguments(SCHEMA, '{"max_lines": "x"}')
    assert args is None
    assert problem == ("missing required argument(s): 'path'; "
                       "argument 'max_lines' must be of type integer, got string")
    assert check_arguments(None, '{"anything": 1}') == ({"anything": 1}, "")
    assert check_arguments(SCHEMA, "nope")[1].startswith("the arguments are not valid JSON")
