"""The user's [model_defaults] rules reach engines that apply them, and only those."""

from __future__ import annotations

import textwrap
from typing import Any, List, Optional

import pytest

from jarvis_core.config import load_config
from jarvis_core.engine.base import InferenceEngine
from jarvis_core.engine.factory import create_engine
from jarvis_core.errors import InvalidOptionError
from jarvis_core.testing import installed_registry, registry_with, simple_plugin
from jarvis_core.types import Completion


class _Base(InferenceEngine):
    def generate(self, messages, *, model, temperature=None, max_tokens=1024, tools=None, **options) -> Completion:
        return Completion(content="ok")

    def list_models(self) -> List[str]:
        return []

    def health(self) -> bool:
        return True


class RulesEngine(_Base):
    engine_id = "rules"

    def __init__(self, *, host: Optional[str] = None, model_defaults: Any = None) -> None:
        self.host = host
        self.model_defaults = model_defaults


class PlainEngine(_Base):
    engine_id = "plain"

    def __init__(self, *, host: Optional[str] = None) -> None:
        self.host = host


def _plugin():
    return simple_plugin("rule-engines", engines={"rules": RulesEngine, "plain": PlainEngine})


def _config(tmp_path, text: str):
    path = tmp_path / "config.toml"
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return load_config(path, environ={}, registry=registry_with(_plugin()))


RULES = """
[model_defaults.qwen3]
temperature = 0
tool_parser = "none"
"""


def test_engine_options_carry_user_rules_only_when_there_are_some(tmp_path):
    assert "model_defaults" not in _config(tmp_path, "").engine_options("rules")
    options = _config(tmp_path, RULES).engine_options("rules")
    assert options["model_defaults"] == {"qwen3": {"temperature": 0.0, "tool_parser": "none"}}


def test_create_engine_passes_rules_to_an_engine_that_takes_them(tmp_path):
    config = _config(tmp_path, RULES)
    with installed_registry(_plugin()):
        engine = create_engine("rules", **config.engine_options("rules"))
    assert engine.model_defaults == {"qwen3": {"temperature": 0.0, "tool_parser": "none"}}


def test_create_engine_drops_rules_with_a_warning_for_an_engine_that_does_not(tmp_path):
    config = _config(tmp_path, RULES)
    # A warning, not a log record: the CLI prints it as one "jarvis: warning:" line.
    with installed_registry(_plugin()), pytest.warns(RuntimeWarning, match=r"does not apply \[model_defaults\]"):
        engine = create_engine("plain", **config.engine_options("plain"))
    assert isinstance(engine, PlainEngine)


def test_other_unknown_options_are_still_errors():
    with installed_registry(_plugin()):
        try:
            create_engine("plain", colour="red")
        except InvalidOptionError as exc:
            assert "colour" in str(exc)
        else:
            raise AssertionError("an unknown option was accepted")


def test_parser_name_none_is_accepted_next_to_the_real_parsers(tmp_path):
    path = tmp_path / "config.toml"
    path.write_text('[model_defaults.qwen3]\ntool_parser = "none"\nreasoning_parser = "none"\n', encoding="utf-8")
    registry = registry_with(load_entrypoints=True, allow=["core-parsers", "core-defaults"])
    assert registry.items("parser"), "the core's parsers should be loaded for this check to mean anything"
    config = load_config(path, environ={}, registry=registry)
    assert config.model_defaults["qwen3"] == {"tool_parser": "none", "reasoning_parser": "none"}
