"""Backend defaults: normalization, longest match over every plugin, backends, precedence, provenance."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

from jarvis_core import hookimpl
from jarvis_core.defaults import model_id_candidates, normalize_model_id, resolve
from jarvis_core.defaults.generate import GeneratorError, build_rules
from jarvis_core.defaults.plugin import load_rules
from jarvis_core.errors import ConfigError
from jarvis_core.plugins import Registry, make_plugin_manager

DATA = Path(__file__).parent / "data"


class RulesPlugin:
    """An in-process plugin contributing family rules (a real pluggy plugin, not a mock)."""

    def __init__(self, *rules):
        self.rules = rules

    @hookimpl
    def jarvis_backend_defaults(self, register):
        for pattern, fields in self.rules:
            register(pattern, **fields)


def registry(*plugins):
    """The core's built-ins plus in-process plugins (other installed plugins left out, for determinism)."""
    return Registry(make_plugin_manager(allow=["core-parsers", "core-defaults"], plugins=list(plugins)))


@pytest.fixture(scope="module")
def core():
    return registry()


# -- normalization ----------------------------------------------------------------------------------

@pytest.mark.parametrize(
    ("model", "normalized"),
    [
        ("unsloth/Qwen3.5-9B-GGUF", "qwen3.5-9b-gguf"),
        ("someorg/deepseek-r1-7b.gguf", "deepseek-r1-7b"),
        ("/models/Llama_3.2.GGUF", "llama-3.2"),
        ("QWEN3_5-9B", "qwen3-5-9b"),
        ("llama3.1:8b", "llama3.1:8b"),
        ("hf.co/bartowski/Llama-3.2-3B-Instruct-GGUF:Q4_K_M", "llama-3.2-3b-instruct-gguf:q4-k-m"),
    ],
)
def test_normalize_model_id(model, normalized):
    assert normalize_model_id(model) == normalized


def test_spelled_out_variant_only_for_glued_versions():
    assert model_id_candidates("llama3.1:8b") == ("llama3.1:8b", "llama-3.1:8b")
    assert model_id_candidates("kimi-k2") == ("kimi-k2",)  # short runs such as k2, r1, v3 are left alone
    assert model_id_candidates("deepseek-r1:8b") == ("deepseek-r1:8b",)


# -- LocalAI's own test cases (hooks_test.go, inference_defaults_test.go) ---------------------------------

@pytest.mark.parametrize(
    ("model", "tool", "reasoning"),
    [
        ("Qwen/Qwen3-8B", "hermes", "qwen3"),
        ("Qwen/Qwen3.5-9B", "qwen3_xml", "qwen3"),
        ("meta/Llama-3.3-70B-Instruct", "llama3_json", None),
        ("deepseek-ai/DeepSeek-R1", "deepseek_v3", "deepseek_r1"),
        ("acme/unknown-model-xyz", None, None),
        ("Hermes-3-Llama-3.1-8B", "llama3_json", None),
        ("DeepSeek-R1-Distill-Qwen-7B", "deepseek_v3", "deepseek_r1"),
        ("QWEN3_5-9B", "hermes", "qwen3"),
        ("Qwen3.6-32B", "hermes", "qwen3"),
        ("qwen3:8b", "hermes", "qwen3"),
        ("llama3.1:8b", "llama3_json", None),
        ("gpt-oss:20b", "openai", "openai_gptoss"),
    ],
)
def test_parser_families(core, model, tool, reasoning):
    r = resolve(model, registry=core)
    assert (r.tool_parser, r.reasoning_parser) == (tool, reasoning)


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        ("unsloth/Qwen3.5-9B-GGUF", {"temperature": 0.7, "top_p": 0.8, "top_k": 20, "presence_penalty": 1.5}),
        ("meta-llama/Llama-3.3-70B", {"temperature": 1.5, "min_p": 0.1}),
        ("QWEN3.5-9B", {"temperature": 0.7}),
        ("someorg/deepseek-r1-7b.gguf", {"temperature": 0.6}),
        ("gemma-3-4b-q4_k_m.gguf", {"temperature": 1.0, "top_k": 64}),
        ("Qwen3-Coder-8B", {"temperature": 0.7, "top_p": 0.8}),
        ("deepseek-v3-base", {"temperature": 0.6}),
        ("lfm2-7b", {"temperature": 0.1, "top_p": 0.1, "min_p": 0.15, "repeat_penalty": 1.05}),
        ("gemma3:27b", {"temperature": 1.0, "top_k": 64}),
        ("llama3.1:8b", {"temperature": 1.5, "top_k": -1}),
    ],
)
def test_sampling_families(core, model, expected):
    sampling = resolve(model, registry=core).sampling
    assert {k: sampling[k] for k in expected} == expected


def test_unknown_model_has_nothing(core):
    r = resolve("my-custom-model-v1", registry=core)
    assert (r.tool_parser, r.reasoning_parser, dict(r.sampling), dict(r.provenance)) == (None, None, {}, {})


# -- longest match first over all plugins, ties by registration order -------------------------------------

def test_plugin_longer_pattern_beats_core_shorter_one():
    plugin = RulesPlugin(("qwen3-coder-plus", {"tool_parser": "hermes", "sampling": {"temperature": 0.3}}))
    reg = registry(("myplugin", plugin))
    r = resolve("Qwen/Qwen3-Coder-Plus-30B", registry=reg)
    assert r.tool_parser == "hermes" and r.sampling["temperature"] == 0.3
    assert r.provenance["tool_parser"] == ("qwen3-coder-plus", "myplugin")
    assert r.provenance["temperature"] == ("qwen3-coder-plus", "myplugin")
    # fields the plugin does not set come from the core's shorter rule, and say so
    assert r.reasoning_parser == "qwen3" and r.provenance["reasoning_parser"] == ("qwen3-coder", "jarvis-core")
    assert r.sampling["top_p"] == 0.8 and r.provenance["top_p"].distribution == "jarvis-core"


def test_plugin_shorter_pattern_loses_to_core_longer_one():
    reg = registry(("myplugin", RulesPlugin(("qwen", {"tool_parser": "pythonic"}))))
    assert resolve("qwen3-8b", registry=reg).tool_parser == "hermes"
    assert resolve("qwen-7b", registry=reg).tool_parser == "pythonic"


def test_ties_go_to_the_first_registered():
    first = RulesPlugin(("acme-llm", {"tool_parser": "hermes"}))
    second = RulesPlugin(("acme-llm", {"tool_parser": "mistral", "sampling": {"top_k": 5}}))
    reg = registry(("first", first), ("second", second))
    r = resolve("acme-llm-7b", registry=reg)
    assert r.tool_parser == "hermes" and r.provenance["tool_parser"].distribution == "first"
    assert r.sampling["top_k"] == 5 and r.provenance["top_k"].distribution == "second"


def test_none_stops_a_shorter_pattern():
    reg = registry(("myplugin", RulesPlugin(("qwen3-vl", {"tool_parser": "none"}))))
    r = resolve("Qwen3-VL-8B", registry=reg)
    assert r.tool_parser is None and r.reasoning_parser == "qwen3"
    assert r.provenance["tool_parser"] == ("qwen3-vl", "myplugin")


# -- backends ----------------------------------------------------------------------------------------------

def test_backend_keys():
    plugin = RulesPlugin(
        ("acme", {"backends": ("vllm",), "tool_parser": "hermes"}),
        ("acme", {"backends": ("",), "tool_parser": "pythonic"}),
        ("acme", {"backends": ("*",), "sampling": {"temperature": 0.1}}),
    )
    reg = registry(("p", plugin))
    assert resolve("acme-1", "vllm", registry=reg).tool_parser == "hermes"
    assert resolve("acme-1", "VLLM", registry=reg).tool_parser == "hermes"
    assert resolve("acme-1", None, registry=reg).tool_parser == "pythonic"
    assert resolve("acme-1", "", registry=reg).tool_parser == "pythonic"
    assert resolve("acme-1", "ollama", registry=reg).tool_parser is None
    for backend in ("vllm", None, "ollama"):
        assert resolve("acme-1", backend, registry=reg).sampling == {"temperature": 0.1}


# -- user rules and precedence -------------------------------------------------------------------------------

def test_user_rules_beat_plugin_rules_even_when_shorter(core):
    user = {"qwen": {"temperature": 0.0, "tool_parser": "qwen3_xml"}}
    r = resolve("Qwen/Qwen3-8B", user_rules=user, registry=core)
    assert r.sampling["temperature"] == 0.0  # an explicit 0 is a value
    assert r.tool_parser == "qwen3_xml"
    assert r.provenance["temperature"] == ("qwen", "user config")
    assert r.sampling["top_p"] == 0.95 and r.provenance["top_p"].distribution == "jarvis-core"


def test_user_rules_as_a_list_with_nested_sampling(core):
    user = [{"pattern": "Llama_3.1", "sampling": {"top_k": 0}, "backends": ["ollama"]}]
    assert resolve("llama3.1:8b", "ollama", user_rules=user, registry=core).sampling["top_k"] == 0
    assert resolve("llama3.1:8b", "vllm", user_rules=user, registry=core).sampling["top_k"] == -1


@pytest.mark.parametrize(
    "bad",
    [
        {"qwen": {"temprature": 0.5}},
        {"qwen": {"temperature": "hot"}},
        {"qwen": {"temperature": True}},
        {"": {"temperature": 0.5}},
        {"qwen": {"tool_parser": 3}},
        "qwen=0.5",
    ],
)
def test_bad_user_rules_are_config_errors(core, bad):
    with pytest.raises(ConfigError) as err:
        resolve("qwen3", user_rules=bad, registry=core)
    assert "model_defaults" in str(err.value) or err.value.key == "model_defaults"


def test_a_malformed_plugin_rule_is_skipped_with_a_warning():
    reg = registry(("sloppy", RulesPlugin(("acme", {"sampling": {"temp": 1}}), ("acme", {"tool_parser": "hermes"}))))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        r = resolve("acme", registry=reg)
    assert r.tool_parser == "hermes"
    assert any("sloppy" in str(w.message) and "temp" in str(w.message) for w in caught)


def test_resolved_to_dict_is_json(core):
    data = json.loads(json.dumps(resolve("qwen3:8b", "ollama", registry=core).to_dict()))
    assert data["provenance"]["tool_parser"] == {"pattern": "qwen3", "distribution": "jarvis-core"}
    assert data["backend"] == "ollama"


# -- the generated data file -----------------------------------------------------------------------------

def _tables():
    return (
        json.loads((DATA / "localai_parser_defaults.json").read_text("utf-8")),
        json.loads((DATA / "localai_inference_defaults.json").read_text("utf-8")),
    )


def test_shipped_rules_are_generated_from_the_localai_tables():
    parser, inference = _tables()
    assert load_rules() == build_rules(parser, inference)["rules"]
    patterns = {r["pattern"] for r in load_rules()}
    assert set(parser["patterns"]) | set(inference["patterns"]) == patterns


def test_generator_rejects_malformed_tables():
    parser, inference = _tables()
    with pytest.raises(GeneratorError, match="no families"):
        build_rules({"families": {}, "patterns": ["x"]}, inference)
    with pytest.raises(GeneratorError, match="has no family"):
        build_rules({"families": {"a": {}}, "patterns": ["a", "b"]}, inference)
    broken = json.loads(json.dumps(inference))
    del broken["families"]["qwen3"]["top_k"]
    with pytest.raises(GeneratorError, match="lacks top_k"):
        build_rules(parser, broken)
    renamed = {"families": {"x": {"temperature": 1, "top_p": 1, "top_k": 1, "repetition_penalty": 1.1, "junk": 2}},
               "patterns": ["x"]}
    rule = build_rules(parser, renamed)["rules"][-1]
    assert rule["sampling"] == {"temperature": 1, "top_p": 1, "top_k": 1, "repeat_penalty": 1.1}


def test_the_sampling_field_list_is_the_one_of_the_user_rule_class():
    """SAMPLING_FIELDS is the one list (engines, rules, the generator, FakeEngine and the server use it): it
    must name exactly the sampling fields of ModelDefaultsRule, the class a user's [model_defaults] table
    becomes, in the same order."""
    import attrs

    from jarvis_core.config import ModelDefaultsRule
    from jarvis_core.defaults import SAMPLING_FIELDS as from_defaults
    from jarvis_core.engine import SAMPLING_FIELDS, SAMPLING_OPTIONS
    from jarvis_core.testing import FakeEngine

    parsers = ("tool_parser", "reasoning_parser")
    assert SAMPLING_FIELDS == tuple(f.name for f in attrs.fields(ModelDefaultsRule) if f.name not in parsers)
    assert from_defaults is SAMPLING_FIELDS and SAMPLING_OPTIONS == frozenset(SAMPLING_FIELDS)
    assert set(SAMPLING_FIELDS) - {"temperature"} <= FakeEngine([]).allowed_options
