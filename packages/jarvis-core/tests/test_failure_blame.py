"""Which part of an agent's run a failure is blamed on (jarvis_core.plugins.blame), with in-process plugins whose
code lives in this module. tests/test_plugin_contract.py does the same with real installed distributions."""

from __future__ import annotations

import pytest

from jarvis_core import Jarvis
from jarvis_core.errors import EngineConnectionError, PluginError
from jarvis_core.prompts import PromptDrivenAgent, PromptProvider
from jarvis_core.testing import FakeEngine, installed_registry, simple_plugin

JSON = {"response_format"}
AGENT = "agent 'driven' (plugin 'test-agents', test-agents)"


def _templates() -> str:
    raise RuntimeError("no acme templates")


class FlakyProvider(PromptProvider):
    @property
    def name(self) -> str:
        return "Flaky"

    def build_system_prompt(self, node_context, timezone, tools, available_commands=None) -> str:
        return _templates()


class SteadyProvider(FlakyProvider):
    @property
    def name(self) -> str:
        return "Steady"

    def build_system_prompt(self, node_context, timezone, tools, available_commands=None) -> str:
        return "you are steady"


@pytest.fixture
def registry():
    providers = simple_plugin("acme-prompts", prompt_providers={"Steady": SteadyProvider, "Flaky": FlakyProvider})
    agents = simple_plugin("test-agents", agents={"driven": PromptDrivenAgent})  # jarvis-core's own class
    with installed_registry(providers, agents) as reg:
        yield reg


def test_a_prompt_provider_that_raises_inside_an_agent_run_is_named_with_the_agent(registry):
    with Jarvis(engine=FakeEngine(["never"]), model="m") as j, pytest.raises(PluginError) as caught:
        j.ask_full("q", prompt_provider="flaky", agent="driven")
    assert str(caught.value) == (
        f"{AGENT} failed in prompt provider 'Flaky' (plugin 'acme-prompts', acme-prompts): RuntimeError: no acme "
        "templates; report it to the authors of acme-prompts, or disable it with JARVIS_DISABLE_PLUGINS=acme-prompts")
    assert (caught.value.key, caught.value.plugin, caught.value.distribution) == ("Flaky", "acme-prompts",
                                                                                  "acme-prompts")


def test_a_failure_in_jarvis_core_code_stays_the_agents_and_typed_errors_pass_through(registry):
    # FakeEngine is jarvis-core's: the core is the host, never the part blamed, so the agent keeps the blame.
    with Jarvis(engine=FakeEngine([RuntimeError("boom")], allowed_options=JSON), model="m") as j, pytest.raises(PluginError) as caught:
        j.ask_full("q", prompt_provider="steady", agent="driven")
    assert str(caught.value).startswith(f"{AGENT} failed while running: RuntimeError: boom; ")
    down = EngineConnectionError("fake: the server went away; is it running?", engine_id="fake")
    with Jarvis(engine=FakeEngine([down], allowed_options=JSON), model="m") as j, pytest.raises(EngineConnectionError) as typed:
        j.ask_full("q", prompt_provider="steady", agent="driven")
    assert typed.value is down
