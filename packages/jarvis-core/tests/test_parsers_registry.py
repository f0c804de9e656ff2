"""Parsers are found through the plugin registry: built-ins are lazy strings, plugins can add parsers."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from jarvis_core import hookimpl
from jarvis_core.errors import UnknownNameError
from jarvis_core.parsers import ToolParseResult, get_reasoning_parser, get_tool_parser, tool_parser_names
from jarvis_core.plugins import Registry, get_registry, make_plugin_manager, reset_registry
from jarvis_core.types import ToolCall

ISSUE_TOOL_PARSERS = [
    "hermes", "qwen3_xml", "qwen3_coder", "llama3_json", "pythonic", "llama4_pythonic", "mistral", "deepseek_v3",
    "granite", "granite4", "glm45", "glm47", "kimi_k2",
]
ISSUE_REASONING_PARSERS = ["qwen3", "deepseek_r1", "mistral", "granite"]


class ShoutParser:
    """A third-party tool parser: ``CALL name`` on its own line (deliberately tiny)."""

    def __init__(self, tools=None, **options):
        self.tools = tools

    def parse(self, text, tools=None):
        if text.startswith("CALL "):
            return ToolParseResult(None, (ToolCall("call_1", text[5:].strip(), "{}"),))
        return ToolParseResult(text or None)


class ShoutPlugin:
    @hookimpl
    def jarvis_register_parsers(self, register):
        register("shout", ShoutParser, kind="tool", aliases=("loud",))


def core_only_registry(*plugins):
    pm = make_plugin_manager(allow=["core-parsers", "core-defaults"], plugins=list(plugins))
    return Registry(pm)


@pytest.mark.parametrize("name", ISSUE_TOOL_PARSERS)
def test_issue_tool_parsers_are_registered(name):
    assert name in tool_parser_names()
    assert callable(get_tool_parser(name).parse)


@pytest.mark.parametrize("name", ISSUE_REASONING_PARSERS)
def test_issue_reasoning_parsers_are_registered(name):
    result = get_reasoning_parser(name).parse("plain")
    assert hasattr(result, "content") and hasattr(result, "reasoning")


def test_core_registrations_are_lazy_strings_from_jarvis_core():
    reg = core_only_registry()
    parsers = reg.items("parser")
    assert {r.distribution for r in parsers.values()} == {"jarvis-core"}
    assert all(isinstance(r.target, str) for r in parsers.values())
    assert parsers["tool:qwen3_coder"] is parsers["tool:qwen3_xml"]


def test_building_the_registry_imports_no_parser_module():
    code = (
        "import sys; from jarvis_core.plugins import get_registry; get_registry(); "
        "import json; print(json.dumps(sorted(m for m in sys.modules if m.startswith(('jarvis_core.parsers', "
        "'jarvis_core.defaults')))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    loaded = set(json.loads(out))
    assert loaded <= {"jarvis_core.parsers", "jarvis_core.parsers.plugin", "jarvis_core.defaults", "jarvis_core.defaults.plugin"}


def test_a_plugin_adds_a_parser_found_by_name():
    reg = core_only_registry(("shout-plugin", ShoutPlugin()))
    parser = get_tool_parser("shout", registry=reg)
    assert parser.parse("CALL lights_on").tool_calls[0].name == "lights_on"
    assert get_tool_parser("loud", registry=reg).parse("hi").content == "hi"
    assert reg.get("parser", "tool:shout").distribution == "shout-plugin"


def test_process_registry_is_used_by_default():
    reg = core_only_registry(("shout-plugin", ShoutPlugin()))
    reset_registry(reg)
    try:
        assert get_registry() is reg
        assert get_tool_parser("shout").parse("CALL x").tool_calls[0].name == "x"
    finally:
        reset_registry()


def test_unknown_name_is_a_typed_error_listing_the_known_ones():
    with pytest.raises(UnknownNameError) as err:
        get_tool_parser("hermez")
    assert "hermes" in str(err.value)
    with pytest.raises(UnknownNameError):
        get_reasoning_parser("")


def test_names_are_forgiving_about_case_and_hyphens():
    assert get_tool_parser("Qwen3-Coder").name == "qwen3_xml"
