"""ModelAdapter: sampling precedence, whole-response post-processing, and the stream processor."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

from jarvis_core import hookimpl
from jarvis_core.defaults import ENGINE_DEFAULTS, ModelAdapter
from jarvis_core.plugins import Registry, make_plugin_manager
from jarvis_core.types import Completion, StreamChunk, ToolCall, ToolSpec, Usage

WEATHER = ToolSpec("get_weather", "Weather", {"type": "object", "properties": {"city": {"type": "string"},
                                                                              "days": {"type": "integer"}}})
HERMES_CALL = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'


class FamilyPlugin:
    @hookimpl
    def jarvis_backend_defaults(self, register):
        register("acme-coder", tool_parser="qwen3_xml", reasoning_parser="qwen3",
                 sampling={"temperature": 0.2, "top_k": 0})


@pytest.fixture(scope="module")
def reg():
    return Registry(make_plugin_manager(allow=["core-parsers", "core-defaults"], plugins=[("acme", FamilyPlugin())]))


def adapter(model, reg, backend="llamacpp", **kw):
    return ModelAdapter.for_model(model, backend, registry=reg, **kw)


# -- sampling ---------------------------------------------------------------------------------------------

def test_precedence_request_user_plugin_engine(reg):
    user = {"qwen3": {"top_p": 0.5}}
    a = adapter("Qwen/Qwen3-8B", reg, user_rules=user)
    got = a.sampling({"temperature": 0, "top_k": None, "max_tokens": 64, "seed": None})
    assert got["temperature"] == 0  # explicit 0 kept
    assert got["top_p"] == 0.5  # user config beats the family default 0.95
    assert got["top_k"] == 20  # explicit None = unset: the family default fills it
    assert got["max_tokens"] == 64 and "seed" not in got
    sources = a.sampling_sources({"temperature": 0})
    assert sources["temperature"] == "request" and sources["top_p"] == "user config"
    assert sources["top_k"] == "jarvis-core"


def test_engine_default_temperature_only_when_nobody_sets_it(reg):
    a = adapter("acme/unknown-model", reg)
    assert a.sampling({}) == dict(ENGINE_DEFAULTS) == {"temperature": 0.7}
    assert a.sampling_sources() == {"temperature": "engine default"}
    assert adapter("acme-coder-7b", reg).sampling()["temperature"] == 0.2  # plugin beats engine
    assert adapter("acme-coder-7b", reg).sampling()["top_k"] == 0  # a 0 from a plugin is a value too


def test_adapter_is_cached_per_model_backend_and_user_rules(reg):
    assert adapter("qwen3:8b", reg) is adapter("qwen3:8b", reg)
    assert adapter("qwen3:8b", reg) is not adapter("qwen3:8b", reg, backend="ollama")
    assert adapter("qwen3:8b", reg) is not adapter("qwen3:8b", reg, user_rules={"qwen": {"top_p": 0.1}})


# -- whole responses --------------------------------------------------------------------------------------

def test_postprocess_splits_think_and_parses_calls_with_tools(reg):
    a = adapter("Qwen/Qwen3-8B", reg)
    c = a.postprocess(Completion(content="<think>need weather</think>On it.\n" + HERMES_CALL, usage=Usage(3, 4)), [WEATHER])
    assert c.reasoning == "need weather" and c.content == "On it.\n"
    assert [(t.name, json.loads(t.arguments)) for t in c.tool_calls] == [("get_weather", {"city": "Paris"})]
    assert c.finish_reason == "tool_calls" and c.usage == Usage(3, 4)


def test_postprocess_leaves_calls_as_text_without_tools(reg):
    c = adapter("Qwen/Qwen3-8B", reg).postprocess(Completion(content=HERMES_CALL))
    assert c.content == HERMES_CALL and not c.tool_calls


def test_postprocess_keeps_plain_answers_plain(reg):
    """A model with thinking off writes no tags: its answer must not become 'truncated reasoning'."""
    done = Completion(content="Paris.")
    assert adapter("deepseek-r1:8b", reg).postprocess(done, [WEATHER]) is done


def test_postprocess_orphan_end_tag_splits(reg):
    c = adapter("deepseek-r1:8b", reg).postprocess(Completion(content="thinking\n</think>\n\nanswer"))
    assert (c.reasoning, c.content) == ("thinking\n", "\n\nanswer")


def test_postprocess_respects_native_fields(reg):
    native = Completion(content=HERMES_CALL, reasoning="r", tool_calls=(ToolCall("id1", "x", "{}"),))
    assert adapter("Qwen/Qwen3-8B", reg).postprocess(native, [WEATHER]) is native


def test_postprocess_reports_malformed_calls(reg):
    bad = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \n</tool_call>"
    c = adapter("Qwen/Qwen3-8B", reg).postprocess(Completion(content=bad), [WEATHER])
    assert c.content == bad and not c.tool_calls and c.finish_reason == "stop"
    assert any("invalid_json" in d for d in c.metadata["parser_diagnostics"])


def test_postprocess_types_qwen3_xml_values_by_schema(reg):
    text = "<tool_call>\n<function=get_weather>\n<parameter=city>\nOslo\n</parameter>\n<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>"
    c = adapter("acme-coder-7b", reg).postprocess(Completion(content=text), [WEATHER.to_openai()])
    assert json.loads(c.tool_calls[0].arguments) == {"city": "Oslo", "days": 3}


def test_unknown_parser_name_warns_and_passes_text_through():
    class Broken:
        @hookimpl
        def jarvis_backend_defaults(self, register):
            register("ghost-model", tool_parser="no_such_parser")

    reg = Registry(make_plugin_manager(allow=["core-parsers"], plugins=[("broken", Broken())]))
    a = ModelAdapter.for_model("ghost-model", None, registry=reg)
    with pytest.warns(RuntimeWarning, match="no_such_parser"):
        c = a.postprocess(Completion(content=HERMES_CALL), [WEATHER])
    assert c.content == HERMES_CALL
    assert not a.needs_postprocessing([WEATHER])  # an unavailable parser is no parser: engines pass text through


# -- the public answer: which parsers apply ---------------------------------------------------------------

def test_parser_plan_is_the_one_rule_for_every_engine(reg):
    """The reasoning parser always applies; the tool parser only with tools, unless its format is always
    parsed (gpt-oss Harmony). Engines ask needs_postprocessing and agree by construction."""
    qwen, llama, gptoss, plain = (adapter(m, reg) for m in ("Qwen/Qwen3-8B", "llama3.1:8b", "gpt-oss-20b", "acme/plain"))
    assert qwen.parser_plan().tool is None and qwen.parser_plan().reasoning is not None
    assert qwen.parser_plan([WEATHER]).tool is not None
    assert not llama.needs_postprocessing() and llama.needs_postprocessing([WEATHER])
    assert gptoss.needs_postprocessing() and gptoss.parser_plan().tool is not None  # always_parse
    assert not plain.needs_postprocessing([WEATHER])
    done = Completion(content=HERMES_CALL)
    assert llama.postprocess(done) is done and plain.postprocess(done, [WEATHER]) is done


def test_plans_and_derived_values_live_on_the_cached_adapter(reg):
    a = adapter("Qwen/Qwen3-8B", reg)
    assert a.parser_plan([WEATHER]) is adapter("Qwen/Qwen3-8B", reg).parser_plan(["other tools"])
    built = []
    assert a.derived("k", lambda ad: built.append(ad) or 42) == 42
    assert adapter("Qwen/Qwen3-8B", reg).derived("k", lambda ad: built.append(ad) or 0) == 42 and built == [a]


# -- streams ----------------------------------------------------------------------------------------------

def _run_stream(a, pieces, tools, finish="stop", usage=None):
    proc = a.stream_processor(tools)
    out = []
    for p in pieces:
        out.extend(proc.feed(StreamChunk(content=p)))
    out.extend(proc.feed(StreamChunk(finish_reason=finish)))
    if usage is not None:
        out.extend(proc.feed(StreamChunk(usage=usage)))
    out.extend(proc.finish())
    return out


def _aggregate(chunks):
    content = "".join(c.content or "" for c in chunks) or None
    reasoning = "".join(c.reasoning or "" for c in chunks) or None
    calls = [(t.name, t.arguments) for c in chunks for t in c.tool_calls]
    finish = [c.finish_reason for c in chunks if c.finish_reason]
    return content, reasoning, calls, finish


@pytest.mark.parametrize(
    ("model", "text"),
    [
        ("Qwen/Qwen3-8B", "<think>need weather</think>On it.\n" + HERMES_CALL),
        ("Qwen/Qwen3-8B", "Just text, with a <tool_ca near miss and {braces}."),
        ("llama3.1:8b", '{"name": "get_weather", "parameters": {"city": "Paris"}}'),
        ("llama3.1:8b", "The answer is {1, 2}."),
        ("llama3.1:8b", 'Prefix {"name": "get_weather", "parameters": {}}'),
        ("mistral-small-3.2", "Sure[TOOL_CALLS]get_weather[ARGS]{\"city\": \"Paris\"}"),
        ("Magistral-Small", "[THINK]hmm[/THINK]Answer."),
    ],
)
def test_stream_matches_postprocess_at_any_split(reg, model, text):
    a = adapter(model, reg)
    whole = a.postprocess(Completion(content=text), [WEATHER])
    expected = (whole.content, whole.reasoning, [(t.name, t.arguments) for t in whole.tool_calls])
    rng = random.Random(text)
    splits = [[text[:i], text[i:]] for i in range(len(text) + 1)]
    splits += [[text[i : i + n] for i in range(0, len(text), n)] for n in (1, 3, 8)]
    splits += [[text[:a_], text[a_:b], text[b:]] for a_, b in sorted((rng.randrange(len(text)),) * 2 for _ in range(10))]
    for pieces in splits:
        content, reasoning, calls, finish = _aggregate(_run_stream(a, pieces, [WEATHER]))
        assert (content, reasoning, calls) == expected, pieces
        assert finish == ["tool_calls" if calls else "stop"]


def test_stream_passes_native_reasoning_and_usage_through(reg):
    a = adapter("Qwen/Qwen3-8B", reg)
    proc = a.stream_processor()
    out = proc.feed(StreamChunk(reasoning="native"))
    out += proc.feed(StreamChunk(content="Paris."))
    out += proc.feed(StreamChunk(finish_reason="stop"))
    out += proc.feed(StreamChunk(usage=Usage(1, 2)))
    out += proc.finish()
    assert [(c.content, c.reasoning, c.finish_reason, c.usage) for c in out] == [
        (None, "native", None, None), ("Paris.", None, None, None), (None, None, "stop", None), (None, None, None, Usage(1, 2))
    ]


def test_stream_without_a_finishing_chunk_is_flushed_by_finish(reg):
    proc = adapter("Qwen/Qwen3-8B", reg).stream_processor([WEATHER])
    assert proc.feed(StreamChunk(content=HERMES_CALL)) == []
    (last,) = proc.finish()
    assert last.tool_calls[0].name == "get_weather" and last.finish_reason == "tool_calls"


def test_native_reasoning_flushes_text_the_reasoning_parser_held(reg):
    proc = adapter("Qwen/Qwen3-8B", reg).stream_processor()
    out = proc.feed(StreamChunk(content="Hi <thi"))  # "<thi" may still open a think block: held
    out += proc.feed(StreamChunk(reasoning="native", content="nk"))
    out += proc.feed(StreamChunk(content="</think>", finish_reason="stop"))
    content, reasoning, _, _ = _aggregate(out)
    assert content == "Hi <think</think>" and reasoning == "native"


def test_stream_with_native_calls_keeps_text_as_text(reg):
    proc = adapter("Qwen/Qwen3-8B", reg).stream_processor([WEATHER])
    out = proc.feed(StreamChunk(content="<tool_call>{not really"))
    out += proc.feed(StreamChunk(tool_calls=(ToolCall("n1", "get_weather", "{}"),), finish_reason="tool_calls"))
    content, _, calls, finish = _aggregate(out)
    assert content == "<tool_call>{not really" and calls == [("get_weather", "{}")] and finish == ["tool_calls"]


def test_generator_script_check_passes():
    script = Path(__file__).resolve().parents[3] / "scripts" / "gen_backend_defaults.py"
    if not script.exists():
        pytest.skip("not running from a repository checkout")
    done = subprocess.run([sys.executable, str(script), "--check"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
