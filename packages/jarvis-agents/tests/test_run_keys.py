"""Typed keys of ``run.state`` (:class:`jarvis_agents.run_keys.RunKey`): they read and write the same entries
the dict spelling does, so an agent written against ``run.state["sections"]`` keeps working."""

from __future__ import annotations

from typing import AsyncIterator

import pytest

from jarvis_agents.agents.context_window import WINDOW
from jarvis_agents.agents.operative import SECTIONS, OperativeAgent
from jarvis_agents.run_keys import RunKey
from jarvis_core.agents import AgentEvent, AgentRun
from jarvis_core.testing import FakeEngine
from jarvis_core.types import Role


def test_a_key_reads_and_writes_the_dict_entry_of_its_name():
    run = AgentRun("run_x", "q", None)
    WINDOW.set(run, 4096)
    assert run.state["window"] == 4096 and WINDOW.get(run) == 4096
    run.state["window"] = 2048
    assert WINDOW.get(run) == 2048
    counted: RunKey[int] = RunKey("counted")
    assert counted.get(run, None) is None and counted.pop(run, 0) == 0
    with pytest.raises(KeyError, match="counted"):
        counted.get(run)
    counted.set(run, 3)
    assert counted.pop(run, 0) == 3 and "counted" not in run.state
    assert repr(counted) == "<RunKey 'counted'>"


class _DictSections(OperativeAgent):
    """Adds its section the way an agent written before the typed keys does."""

    async def prepare(self, run: AgentRun) -> AsyncIterator[AgentEvent]:
        run.state["sections"].append("## From the dict\nstill shown")
        return
        yield


class _TypedSections(OperativeAgent):
    async def prepare(self, run: AgentRun) -> AsyncIterator[AgentEvent]:
        SECTIONS.get(run).append("## From the key\nshown too")
        return
        yield


@pytest.mark.parametrize(("cls", "section"), [(_DictSections, "## From the dict\nstill shown"),
                                              (_TypedSections, "## From the key\nshown too")])
def test_an_operative_section_added_either_way_reaches_the_system_message(tmp_path, cls, section):
    engine = FakeEngine(["ok"])
    agent = cls(engine, model="m", operator_id="op", db=tmp_path / "operators.db", mode="function_calling")
    assert agent.run("hello").content == "ok"
    system = engine.calls[0].messages[0]
    assert system.role is Role.SYSTEM and "## Your state" in system.content and section in system.content
