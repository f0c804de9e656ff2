"""Request building and response parsing of the Anthropic and Gemini codecs, and model routing."""

from __future__ import annotations

import json

import pytest

from jarvis_core.errors import BadRequestError, ContentFilterError, InvalidOptionError
from jarvis_core.types import Message, ToolCall, ToolSpec
from jarvis_engine_cloud import anthropic_wire, gemini_wire
from jarvis_engine_cloud.routing import display_name, route_model

WEATHER = ToolSpec(
    "get_weather", "Weather for a city",
    {"type": "object", "properties": {"location": {"type": "string"}}, "required": ["location"]},
)
TWO_CALLS = (
    ToolCall("toolu_A", "get_weather", '{"location": "Paris"}'),
    ToolCall("toolu_B", "get_weather", '{"location": "Tokyo"}'),
)
LOOP = [
    Message.system("Be brief."),
    Message.user("Weather in Paris and Tokyo?"),
    Message.assistant("Checking both.", TWO_CALLS),
    Message.tool("18C", "toolu_A"),
    Message.tool("25C", "toolu_B"),
    Message.user("And which is warmer?"),
    {"role": "system", "content": "Answer in one word."},
]


# -- routing ------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("name", "provider", "model"),
    [
        ("claude-sonnet-4-5", "anthropic", "claude-sonnet-4-5"),
        ("gemini-2.5-flash", "google", "gemini-2.5-flash"),
        ("models/gemini-2.5-pro", "google", "gemini-2.5-pro"),
        ("gpt-4.1", "openai", "gpt-4.1"),
        ("o4-mini", "openai", "o4-mini"),
        ("openai/claude-behind-a-proxy", "openai", "claude-behind-a-proxy"),
        ("google/gemma-3-27b-it", "google", "gemma-3-27b-it"),
        ("gemini/gemini-2.0-flash", "google", "gemini-2.0-flash"),
        ("anthropic/my-claude-alias", "anthropic", "my-claude-alias"),
        ("Anthropic/claude-x", "anthropic", "claude-x"),
    ],
)
def test_routing(name, provider, model):
    route = route_model(name)
    assert (route.provider, route.model) == (provider, model)


def test_prefix_without_model_is_a_typed_error():
    with pytest.raises(InvalidOptionError, match="no model"):
        route_model("openai/")


def test_display_names_route_back_to_their_provider():
    for provider, model in (("google", "gemma-3-27b-it"), ("openai", "claude-3-via-proxy"), ("anthropic", "claude-x")):
        shown = display_name(provider, model)
        assert route_model(shown).provider == provider and route_model(shown).model == model
    assert display_name("anthropic", "claude-x") == "claude-x"


# -- Anthropic requests -------------------------------------------------------------------------------
def test_anthropic_gathers_system_and_merges_tool_results():
    body = anthropic_wire.build_payload(LOOP, model="claude-x", max_tokens=100, tools=[WEATHER])
    assert body["system"] == "Be brief.\n\nAnswer in one word."
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "user"]
    assistant = body["messages"][1]["content"]
    assert assistant[0] == {"type": "text", "text": "Checking both."}
    assert assistant[1:] == [
        {"type": "tool_use", "id": "toolu_A", "name": "get_weather", "input": {"location": "Paris"}},
        {"type": "tool_use", "id": "toolu_B", "name": "get_weather", "input": {"location": "Tokyo"}},
    ]
    results = body["messages"][2]["content"]
    assert results == [
        {"type": "tool_result", "tool_use_id": "toolu_A", "content": "18C"},
        {"type": "tool_result", "tool_use_id": "toolu_B", "content": "25C"},
        {"type": "text", "text": "And which is warmer?"},
    ]
    assert body["max_tokens"] == 100 and "temperature" not in body
    assert body["tools"] == [{"name": "get_weather", "description": "Weather for a city", "input_schema": dict(WEATHER.parameters)}]


def test_anthropic_replays_thinking_blocks_and_error_results():
    blocks = [{"type": "thinking", "thinking": "hmm", "signature": "sig=="}]
    msgs = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": None, "tool_calls": [TWO_CALLS[0].to_openai()], "thinking_blocks": blocks},
        {"role": "tool", "content": "boom", "tool_call_id": "toolu_A", "is_error": True},
    ]
    body = anthropic_wire.build_payload(msgs, model="claude-x", max_tokens=10)
    assert body["messages"][1]["content"][0] == blocks[0]
    assert body["messages"][2]["content"][0]["is_error"] is True


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        ({"tool_choice": "required"}, {"tool_choice": {"type": "any"}}),
        ({"tool_choice": {"type": "function", "function": {"name": "get_weather"}}},
         {"tool_choice": {"type": "tool", "name": "get_weather"}}),
        ({"parallel_tool_calls": False}, {"tool_choice": {"type": "auto", "disable_parallel_tool_use": True}}),
        ({"stop": "END"}, {"stop_sequences": ["END"]}),
        ({"thinking": 2048}, {"thinking": {"type": "enabled", "budget_tokens": 2048}}),
        ({"thinking_budget": 1024}, {"thinking": {"type": "enabled", "budget_tokens": 1024}}),
        ({"top_k": 5, "top_p": 0.5}, {"top_k": 5, "top_p": 0.5}),
    ],
)
def test_anthropic_options(options, expected):
    body = anthropic_wire.build_payload([Message.user("hi")], model="c", max_tokens=8, tools=[WEATHER], options=options)
    for key, value in expected.items():
        assert body[key] == value


def test_anthropic_rejects_non_object_arguments_in_history():
    bad = [Message.user("x"), Message.assistant(None, [ToolCall("t1", "f", "[1, 2]")])]
    with pytest.raises(BadRequestError, match="not a JSON object"):
        anthropic_wire.build_payload(bad, model="c", max_tokens=8)


def test_anthropic_refusal_and_unknown_blocks():
    completion = anthropic_wire.parse_message(
        {"model": "c", "content": [{"type": "server_tool_use", "id": "s"}, {"type": "text", "text": ""}],
         "stop_reason": "refusal", "usage": {"input_tokens": 3, "output_tokens": 0}}
    )
    assert completion.finish_reason == "content_filter"
    assert completion.content is None and completion.tool_calls == ()


# -- Gemini requests ----------------------------------------------------------------------------------
def _gemini_two_calls(signature=None, ids=(None, None)):
    parts = []
    for city, call_id in zip(("Paris", "Tokyo"), ids, strict=True):
        fc = {"name": "get_weather", "args": {"location": city}}
        if call_id:
            fc["id"] = call_id
        parts.append({"functionCall": fc})
    if signature:
        parts[0]["thoughtSignature"] = signature
    return {"candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP"}],
            "usageMetadata": {"promptTokenCount": 5, "candidatesTokenCount": 4, "totalTokenCount": 9}}


def test_gemini_parallel_calls_get_unique_ids_and_results_share_one_content():
    completion = gemini_wire.parse_response(_gemini_two_calls(), model="gemini-x")
    a, b = completion.tool_calls
    assert a.id != b.id and a.name == b.name == "get_weather"
    assert completion.finish_reason == "tool_calls"
    history = [Message.system("sys"), Message.user("both?"), completion.to_message(),
               Message.tool('{"temp": 18}', a.id), Message.tool("25C", b.id)]
    body = gemini_wire.build_payload(history, max_tokens=50, temperature=0.2)
    assert body["systemInstruction"] == {"parts": [{"text": "sys"}]}
    assert [c["role"] for c in body["contents"]] == ["user", "model", "user"]
    assert body["contents"][1]["parts"] == [
        {"functionCall": {"name": "get_weather", "args": {"location": "Paris"}}},
        {"functionCall": {"name": "get_weather", "args": {"location": "Tokyo"}}},
    ], "synthesized ids are not sent to Gemini"
    assert body["contents"][2]["parts"] == [
        {"functionResponse": {"name": "get_weather", "response": {"temp": 18}}},
        {"functionResponse": {"name": "get_weather", "response": {"result": "25C"}}},
    ]
    assert body["generationConfig"] == {"temperature": 0.2, "maxOutputTokens": 50}


def test_gemini_thought_signature_and_own_ids_go_back():
    completion = gemini_wire.parse_response(_gemini_two_calls("c2lnbmF0dXJl", ids=("fc-1", "fc-2")))
    first, second = completion.tool_calls
    assert first.id.startswith("fc-1") and second.id == "fc-2"
    body = gemini_wire.build_payload(
        [Message.user("q"), completion.to_message(), Message.tool("ok", first.id), Message.tool("ok", second.id)],
        max_tokens=None,
    )
    model_parts = body["contents"][1]["parts"]
    assert model_parts[0] == {"functionCall": {"name": "get_weather", "args": {"location": "Paris"}, "id": "fc-1"},
                              "thoughtSignature": "c2lnbmF0dXJl"}
    assert "thoughtSignature" not in model_parts[1]
    responses = [p["functionResponse"] for p in body["contents"][2]["parts"]]
    assert [r["id"] for r in responses] == ["fc-1", "fc-2"]
    assert "generationConfig" not in body


def test_gemini_generation_config_and_tools():
    bare = ToolSpec("now", "current time")
    rich = ToolSpec("f", "d", {"type": "object", "properties": {"x": {"type": "string"}}, "additionalProperties": False})
    body = gemini_wire.build_payload(
        [Message.user("hi")], max_tokens=64, temperature=0.0, tools=[WEATHER, bare, rich],
        options={"top_p": 0.9, "top_k": 3, "stop": ["x"], "seed": 7, "thinking_budget": 0, "include_thoughts": False,
                 "response_format": {"type": "json_schema", "json_schema": {"schema": {"type": "object"}}},
                 "tool_choice": {"type": "function", "function": {"name": "now"}}},
    )
    assert body["generationConfig"] == {
        "temperature": 0.0, "maxOutputTokens": 64, "topP": 0.9, "topK": 3, "seed": 7, "stopSequences": ["x"],
        "responseMimeType": "application/json", "responseJsonSchema": {"type": "object"},
        "thinkingConfig": {"thinkingBudget": 0, "includeThoughts": False},
    }
    decls = body["tools"][0]["functionDeclarations"]
    assert decls[0]["parameters"] == dict(WEATHER.parameters)
    assert "parameters" not in decls[1] and "parametersJsonSchema" not in decls[1]
    assert "parametersJsonSchema" in decls[2]
    assert body["toolConfig"] == {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["now"]}}


def test_gemini_tool_result_needs_a_function_name():
    with pytest.raises(InvalidOptionError, match="function name"):
        gemini_wire.build_payload([Message.user("q"), Message.tool("x", "unknown-id")], max_tokens=8)


def test_gemini_blocked_prompt_and_safety_stop():
    with pytest.raises(ContentFilterError, match="SAFETY"):
        gemini_wire.parse_response({"promptFeedback": {"blockReason": "SAFETY"}, "usageMetadata": {}})
    filtered = gemini_wire.parse_response(
        {"candidates": [{"content": {"parts": [{"text": "partial"}]}, "finishReason": "RECITATION"}]}
    )
    assert filtered.finish_reason == "content_filter" and filtered.content == "partial"


def test_gemini_args_absent_become_empty_object():
    completion = gemini_wire.parse_response(
        {"candidates": [{"content": {"parts": [{"functionCall": {"name": "now"}}]}, "finishReason": "STOP"}]}
    )
    assert json.loads(completion.tool_calls[0].arguments) == {}
