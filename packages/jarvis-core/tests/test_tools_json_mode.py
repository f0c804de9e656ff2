"""The one JSON-schema tool-call mode: the action schema, the request field, the history rewrite, the parser."""

from __future__ import annotations

import json

import pytest

from jarvis_core.tools import json_mode
from jarvis_core.tools.schema import validate
from jarvis_core.types import ToolSpec

CALC = ToolSpec("calculator", "Evaluate arithmetic.", {
    "type": "object", "properties": {"expression": {"type": "string"}}, "required": ["expression"]})
CLOCK = ToolSpec("clock", "The time.", {"type": "object", "properties": {}})


def test_the_action_schema_has_one_branch_per_tool_and_an_answer_branch():
    schema = json_mode.action_schema([CALC, CLOCK])
    names = [b["properties"].get("name", {}).get("const") for b in schema["anyOf"]]
    assert names == ["calculator", "clock", None]
    assert schema["anyOf"][-1]["required"] == ["content"]
    assert schema["anyOf"][0]["properties"]["arguments"] == dict(CALC.parameters)
    # what it admits, checked with the core's own validator
    assert validate({"name": "calculator", "arguments": {"expression": "1+1"}}, schema) == []
    assert validate({"content": "hi"}, schema) == []
    assert validate({"name": "calculator", "arguments": {}}, schema)
    assert validate({"name": "rm", "arguments": {}}, schema)


def test_answer_only_and_bounded_strings():
    only = json_mode.action_schema([CALC, CLOCK], answer=False, only="clock")
    assert only["properties"]["name"] == {"const": "clock"} and "anyOf" not in only
    answer_only = json_mode.action_schema([], answer=True)
    assert answer_only["required"] == ["content"]
    bounded = json_mode.action_schema([CALC], max_string_length=40)
    branches = bounded["anyOf"]
    assert branches[0]["properties"]["arguments"]["properties"]["expression"]["maxLength"] == 40
    assert branches[1]["properties"]["content"]["maxLength"] == 40
    assert "maxLength" not in CALC.parameters["properties"]["expression"]  # the tool's own spec is untouched
    with pytest.raises(ValueError, match="allows nothing"):
        json_mode.action_schema([], answer=False)
    with pytest.raises(ValueError, match="'nope' is not among the tools"):
        json_mode.action_schema([CALC], only="nope")


def test_the_request_field_uses_the_nested_form():
    fmt = json_mode.response_format([CALC])
    assert fmt["type"] == "json_schema"
    assert fmt["json_schema"]["name"] == json_mode.SCHEMA_NAME and fmt["json_schema"]["strict"] is True
    assert "anyOf" in fmt["json_schema"]["schema"] and "schema" not in fmt


@pytest.mark.parametrize("choice, answer, forced", [
    (None, True, None), ("auto", True, None), ("required", False, None),
    ({"type": "function", "function": {"name": "clock"}}, False, "clock"),
])
def test_tool_choice_maps_onto_the_schema(choice, answer, forced):
    schema = json_mode.response_format_for_choice([CALC, CLOCK], choice)["json_schema"]["schema"]
    branches = schema.get("anyOf", [schema])
    assert any("content" in b["properties"] for b in branches) is answer
    if forced:
        assert [b["properties"]["name"]["const"] for b in branches] == [forced]


def test_tool_choice_none_admits_only_the_answer_and_strings_are_bounded_by_default():
    schema = json_mode.response_format_for_choice([CALC, CLOCK], "none")["json_schema"]["schema"]
    assert "anyOf" not in schema and set(schema["properties"]) == {"content"}
    assert validate({"name": "calculator", "arguments": {"expression": "1"}}, schema)  # a call is not admitted
    schema = json_mode.response_format_for_choice([CALC], "auto", max_content_length=json_mode.content_limit(100))
    call, answer = schema["json_schema"]["schema"]["anyOf"]
    limit = json_mode.DEFAULT_MAX_STRING_LENGTH
    assert call["properties"]["arguments"]["properties"]["expression"]["maxLength"] == limit
    assert answer["properties"]["content"]["maxLength"] == 100 - json_mode.ANSWER_OVERHEAD_TOKENS
    assert json_mode.content_limit(None) is None and json_mode.content_limit(3) == 1


def test_history_is_rewritten_for_templates_without_tool_roles():
    messages = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "17*23?"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "calculator", "arguments": '{"expression": "17*23"}'}}]},
        {"role": "tool", "tool_call_id": "c1", "name": "calculator", "content": "391"},
    ]
    out = json_mode.rewrite_messages(messages, [CALC])
    assert out[0]["role"] == "system" and out[0]["content"].startswith("Be brief.\n\nYou can use these tools:")
    assert json.loads(out[2]["content"]) == {"name": "calculator", "arguments": {"expression": "17*23"}}
    assert out[3] == {"role": "user", "content": "Result of calculator: 391"}
    assert messages[0]["content"] == "Be brief."  # the caller's list is not changed
    no_system = json_mode.rewrite_messages([{"role": "user", "content": "hi"}], [CALC], answer=False)
    assert no_system[0]["role"] == "system" and "Call a tool" in no_system[0]["content"]


def test_parse_a_call_an_answer_and_bad_replies_without_raising():
    action = json_mode.parse_action('{"name": "calculator", "arguments": {"expression": "2+2"}}', ["calculator"],
                                    call_id="x1")
    assert action.ok and action.content is None
    assert [(c.id, c.name, json.loads(c.arguments)) for c in action.tool_calls] == [
        ("x1", "calculator", {"expression": "2+2"})]
    assert json_mode.parse_action('{"content": "4"}', ["calculator"]).content == "4"
    for text, problem in [("", "no text"), ('{"name": "calc', "not valid JSON"),
                          ('{"name": "rm", "arguments": {}}', "unknown tool 'rm'"), ("[1]", "neither a tool call")]:
        bad = json_mode.parse_action(text, ["calculator"])
        assert not bad.ok and problem in bad.problem and bad.tool_calls == ()
    assert json_mode.parse_action("   ", ["calculator"]).content is None


def test_tool_history_is_detected_and_rewritten_without_a_note_when_no_tools_are_offered():
    from jarvis_core.types import Message, ToolCall

    assert json_mode.has_tool_history([Message.user("x"), Message.tool("1", "c1", "calculator")])
    assert json_mode.has_tool_history([{"role": "assistant", "tool_calls": [{"id": "c"}]}])
    assert not json_mode.has_tool_history([Message.user("x"), Message.assistant("y", [])])
    calls = [ToolCall("c1", "calculator", "{}").to_openai()]
    out = json_mode.rewrite_messages([{"role": "assistant", "content": None, "tool_calls": calls},
                                      {"role": "tool", "name": "calculator", "content": "4"}], [])
    assert out == [{"role": "assistant", "content": '{"name": "calculator", "arguments": {}}'},
                   {"role": "user", "content": "Result of calculator: 4"}]
