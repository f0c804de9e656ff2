"""The tool loop's per-run values are typed attributes of AgentRun (``run.decision``, ``run.guard``) instead
of ``run.state["decision"]``/``["guard"]``; an agent written against the dict keeps working and is told,
with a JarvisDeprecationWarning naming its module, what to use instead. An agent's own keys stay plain."""

from __future__ import annotations

import warnings

import pytest

from jarvis_core.agents import Decision, LoopGuard, ToolUsingAgent
from jarvis_core.errors import JarvisDeprecationWarning
from jarvis_core.testing import FakeEngine


class OldStyle(ToolUsingAgent):
    agent_id = "old_style"

    async def decide(self, run):
        run.state["decision"] = Decision("from the dict")
        assert isinstance(run.state.get("guard"), LoopGuard)
        return
        yield


class NewStyle(ToolUsingAgent):
    agent_id = "new_style"

    async def decide(self, run):
        run.decision = Decision("typed")
        run.state["mine"] = 1  # an agent's own key: a plain dict entry
        return
        yield


def test_the_typed_decision_ends_the_run_and_warns_nothing():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = NewStyle(FakeEngine(), model="m").run("q")
    assert (result.content, result.stop_reason) == ("typed", "final")


def test_the_dict_form_still_works_and_warns_naming_the_replacement_and_the_user():
    with pytest.warns(JarvisDeprecationWarning, match=r'run\.state\["\w+"\] is deprecated.*use run\.\w+ instead.*'
                      r"test_agents_run_state") as caught:
        result = OldStyle(FakeEngine(), model="m").run("q")
    assert (result.content, result.stop_reason) == ("from the dict", "final")
    said = " ".join(str(w.message) for w in caught)
    assert 'run.state["decision"] is deprecated' in said and "use run.decision instead" in said
    assert 'run.state["guard"] is deprecated' in said and "use run.guard instead" in said


def test_the_run_keeps_typed_values_off_the_dict():
    agent = NewStyle(FakeEngine(), model="m")
    run = agent.new_run("q")
    assert isinstance(run.guard, LoopGuard) and run.decision is None
    assert "guard" in run.state and "decision" not in run.state and dict(run.state) == {}
    run.state["mine"] = 2
    assert run.state.get("mine") == 2 and run.state.pop("mine") == 2
