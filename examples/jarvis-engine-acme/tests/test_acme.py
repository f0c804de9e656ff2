"""The example's own tests: its parser, its defaults rule, and the core's engine conformance suite against a
ReplayServer. They run from a source checkout (the plugin is registered from ``pyproject.toml`` by
``jarvis_core.testing.source_plugin``) and against an installed copy (its real entry point)."""

from __future__ import annotations

import importlib.metadata
import pathlib

import pytest

from jarvis_core.defaults import resolve
from jarvis_core.plugins import get_registry
from jarvis_core.testing import EngineConformance, Exchange, source_plugin

PROJECT = pathlib.Path(__file__).resolve().parent.parent
ANSWER = ["The capital", " of France", " is Paris."]
CALL = '<call>{"name": "get_weather", "arguments": {"location": "Paris"}}</call>'


def _installed() -> bool:
    try:
        importlib.metadata.distribution("jarvis-engine-acme")
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


@pytest.fixture(autouse=True)
def acme_registry():
    if _installed():
        yield get_registry()
    else:
        with source_plugin(PROJECT) as registry:
            yield registry


def _stream(deltas, finish="stop"):
    return [*({"delta": d} for d in deltas), {"done": True, "finish": finish, "usage": {"input": 12, "output": 7}}]


def _reply(text, finish="stop"):
    return {"message": {"content": text}, "finish": finish, "usage": {"input": 12, "output": 7}}


EXCHANGES = {
    "text": [
        Exchange("POST", "/api/chat", match={"stream": True}, ndjson=_stream(ANSWER)),
        Exchange("POST", "/api/chat", match={"stream": False}, json=_reply("".join(ANSWER))),
    ],
    "tools": [
        Exchange("POST", "/api/chat", match={"stream": True}, ndjson=_stream(["Let me check. <ca", "ll>", CALL[6:30], CALL[30:]])),
        Exchange("POST", "/api/chat", match={"stream": False}, json=_reply("Let me check. " + CALL)),
    ],
    "models": [
        Exchange("GET", "/api/models", json={"models": ["acme-7b", "acme-70b"]}),
        Exchange("GET", "/health", json={"ok": True}),
    ],
}


class TestAcmeConformance(EngineConformance):
    model = "acme-7b"
    expected_text = "".join(ANSWER)
    expected_models = ["acme-7b", "acme-70b"]

    def make_engine(self, url, **options):
        from jarvis_engine_acme.engine import AcmeEngine

        return AcmeEngine(host=url, **options)

    def exchanges(self, scenario):
        return EXCHANGES[scenario]


def test_the_family_rule_picks_the_parser_and_sampling():
    resolved = resolve("acme-7b", "acme")
    assert resolved.tool_parser == "acme_call"
    assert resolved.sampling == {"temperature": 0.3, "top_p": 0.9}
    assert resolved.provenance["tool_parser"].distribution == "jarvis-engine-acme"


def test_the_parser_whole_and_streamed():
    from jarvis_core.parsers import get_tool_parser

    result = get_tool_parser("acme_call").parse("Let me check. " + CALL + " done")
    assert result.content == "Let me check.  done"
    assert [(c.name, c.parsed_arguments()) for c in result.tool_calls] == [("get_weather", {"location": "Paris"})]

    parser = get_tool_parser("acme_call")
    pieces = [parser.feed(ch) for ch in "a <call>{\"name\": \"x\"}</call> b <cal"]
    pieces.append(parser.finish())
    events = [e for batch in pieces for e in batch]
    assert "".join(e.content or "" for e in events) == "a  b <cal"
    assert [c.name for e in events for c in e.tool_calls] == ["x"]


def test_bad_model_output_is_content_with_a_diagnostic():
    from jarvis_core.parsers import get_tool_parser

    result = get_tool_parser("acme_call").parse("<call>not json</call> and <call>{\"name\": 1")
    assert result.tool_calls == ()
    assert result.content == "<call>not json</call> and <call>{\"name\": 1"
    assert [d.code for d in result.diagnostics] == ["bad_call", "unclosed_call"]


def test_sampling_reaches_the_wire(replay_server):
    from jarvis_engine_acme.engine import AcmeEngine

    server = replay_server(EXCHANGES["text"])
    with AcmeEngine(host=server.url, model_defaults={"acme-7b": {"top_p": 0.5}}) as engine:
        engine.generate([{"role": "user", "content": "hi"}], model="acme-7b")
        engine.generate([{"role": "user", "content": "hi"}], model="acme-7b", temperature=0.0, seed=7)
    first, second = (r.json["options"] for r in server.requests)
    assert first == {"max_tokens": 1024, "temperature": 0.3, "top_p": 0.5}  # family rule, then the user's rule
    assert second == {"max_tokens": 1024, "temperature": 0.0, "top_p": 0.5, "seed": 7}  # explicit 0 is a value
