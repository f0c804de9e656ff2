"""The JSON-schema argument checker (jsonschema and fastjsonschema): keywords, messages a model can act on,
and broken schemas reported as the tool's fault."""

from __future__ import annotations

import pytest

from jarvis_core.tools.schema import check_arguments, decode_arguments, schema_problem, validate

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


FULL = {
    "type": "object",
    "properties": {
        "code": {"type": "string", "pattern": "^[A-Z]{3}$"},
        "mail": {"type": "string", "format": "email"},
        "when": {"type": "string", "format": "date"},
        "shape": {"oneOf": [{"type": "integer", "multipleOf": 2}, {"type": "integer", "multipleOf": 3}]},
        "node": {"$ref": "#/definitions/node"},
    },
    "definitions": {"node": {"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]}},
}


@pytest.mark.parametrize("args, message", [
    # Keywords the old hand-written checker ignored: each one now holds.
    ({"code": "usd"}, "argument 'code' must match the pattern '^[A-Z]{3}$', got \"usd\""),
    ({"mail": "not-an-address"}, "argument 'mail' must be a valid email, got \"not-an-address\""),
    ({"when": "2026-13-45"}, "argument 'when' must be a valid date, got \"2026-13-45\""),
    ({"shape": 6}, "argument 'shape' matches more than one of the allowed forms; it must match exactly one"),
    ({"shape": 5}, "argument 'shape' matches none of the allowed forms (e.g. argument 'shape' must be a multiple of 2"),
    ({"node": {}}, "missing required argument(s): 'node.id'"),
])
def test_every_keyword_holds(args, message):
    problems = validate(args, FULL)
    assert problems and problems[0].startswith(message), problems
    assert validate({"code": "USD", "mail": "a@b.org", "when": "2026-11-28", "shape": 4, "node": {"id": 1}}, FULL) == []


@pytest.mark.parametrize("schema, problem", [
    ("object", "a schema must be a JSON object, got string"),
    ({"type": "objekt"}, "'objekt' is not valid under any of the given schemas (at 'type')"),
    ({"type": "object", "properties": {"n": {"type": "integer", "minimum": "1"}}},
     "'1' is not of type 'number' (at 'properties/n/minimum')"),
    ({"type": "object", "required": "n"}, "'n' is not of type 'array' (at 'required')"),
])
def test_a_broken_schema_is_named(schema, problem):
    assert schema_problem(schema) == problem
    args, text = check_arguments(schema, '{"n": 1}')
    assert args is None and text.startswith("the tool's own schema is broken")


def test_a_later_draft_is_honoured():
    schema = {"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "array",
              "prefixItems": [{"type": "integer"}, {"type": "string"}]}
    assert schema_problem(schema) is None
    assert validate([1, "a"], schema) == []
    assert validate(["a", "a"], schema) == ["argument '[0]' must be of type integer, got string"] or validate(
        ["a", "a"], schema)[0].endswith("must be of type integer, got string")


def test_a_schema_is_compiled_once():
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}}
    from jarvis_core.tools import schema as module

    validate({"n": 1}, schema)
    first = module._cache[id(schema)]
    validate({"n": 2}, schema)
    assert module._cache[id(schema)] is first
