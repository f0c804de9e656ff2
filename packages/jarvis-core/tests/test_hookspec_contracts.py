"""Each hook's docstring links the contract of its targets, and every class it links is importable from the
core; the config-section contract accepts exactly what the loader accepts (an attrs class)."""

from __future__ import annotations

import importlib
import re

import attrs
import pytest

import jarvis_core
from jarvis_core import hookspecs
from jarvis_core.config import ConfigSection, is_config_section_schema

HOOKS = sorted(name for name in dir(hookspecs) if name.startswith("jarvis_"))
LINK = re.compile(r":class:`~?([\w.]+)`")

#: hook -> the contract its targets satisfy (a class or protocol importable from the core).
CONTRACTS = {
    "jarvis_register_engines": "jarvis_core.engine.InferenceEngine",
    "jarvis_register_agents": "jarvis_core.agents.BaseAgent",
    "jarvis_register_tools": "jarvis_core.tools.Tool",
    "jarvis_discover_tools": "jarvis_core.tools.Tool",
    "jarvis_register_prompt_providers": "jarvis_core.prompts.PromptProvider",
    "jarvis_register_parsers": "jarvis_core.parsers.ToolParser",
    "jarvis_register_config_sections": "jarvis_core.config.ConfigSection",
    "jarvis_register_commands": "jarvis_core.commands.CommandModule",
}


def _resolve(dotted: str):
    module, _, name = dotted.rpartition(".")
    try:
        return getattr(importlib.import_module(module), name)
    except ModuleNotFoundError:  # a nested name: module.Class.attribute
        return getattr(_resolve(module), name)


def test_every_registration_hook_with_a_target_has_a_contract():
    assert set(CONTRACTS) == set(HOOKS) - {"jarvis_backend_defaults"}  # defaults rules have no target


@pytest.mark.parametrize("hook", sorted(CONTRACTS))
def test_the_hook_docstring_links_its_contract(hook):
    links = LINK.findall(getattr(hookspecs, hook).__doc__)
    assert CONTRACTS[hook] in links
    assert isinstance(_resolve(CONTRACTS[hook]), type)


@pytest.mark.parametrize("hook", HOOKS)
def test_every_class_a_hook_docstring_links_is_importable(hook):
    for dotted in LINK.findall(getattr(hookspecs, hook).__doc__):
        assert _resolve(dotted) is not None, dotted


def test_every_hook_says_the_release_that_added_it():
    # A plugin author reads which jarvis-core a hook needs from its docstring (and its distribution's
    # jarvis-core range); no hook can be newer than the core that declares it.
    release = tuple(int(p) for p in jarvis_core.__version__.split(".")[:2])
    for hook in HOOKS:
        found = re.search(r"\.\. versionadded:: (\d+)\.(\d+)\n", getattr(hookspecs, hook).__doc__)
        assert found, hook
        assert (int(found.group(1)), int(found.group(2))) <= release, hook


def test_a_config_section_schema_is_an_attrs_class():
    @attrs.frozen
    class AcmeConfig:
        level: int = 1

    class Plain:
        level = 1

    assert is_config_section_schema(AcmeConfig)
    assert not is_config_section_schema(Plain)
    assert not is_config_section_schema(AcmeConfig())  # an instance, not the class
    assert not is_config_section_schema("jarvis_tools_acme.config:AcmeConfig")
    assert ConfigSection.__module__ == "jarvis_core.config.section"
