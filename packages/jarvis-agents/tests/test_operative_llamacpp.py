"""``operative`` against the REAL llama.cpp server (SmolLM2-135M, a chat template without tools): two ticks by
two agent objects on one SQLite file. The plumbing is asserted, not the model's wisdom: auto mode works without
native tool calls, both ticks are saved whole, the state follows the rule (the model's own write, else a
non-empty answer, else unchanged), and tick 2's first request is longer than the same request from an operator
with no past, so the history really reached the server."""

from __future__ import annotations

import asyncio

import pytest

from jarvis_agents.agents.operative import OperativeAgent
from jarvis_core import create_engine
from jarvis_core.agents import RunFinished, TurnFinished
from jarvis_core.stores import SQLiteStore
from jarvis_core.types import Role

pytestmark = [pytest.mark.llamacpp, pytest.mark.slow]

TICK_BOUND_S = 300.0


@pytest.fixture
def engine(llama_url):
    with create_engine("llamacpp", host=llama_url) as eng:
        yield eng


def tick(engine, store, operator_id, instruction):
    agent = OperativeAgent(engine, model="smollm2", operator_id=operator_id, sessions=store.sessions,
                           state=store.state, temperature=0, max_turns=2, max_tokens=96)

    async def collect():
        return [e async for e in agent.astream(instruction)]

    # A tick makes a bounded number of 96-token calls (at most 2 turns, one structured retry, 2 continuations):
    # seconds on an idle machine. The bound turns a stuck tick into a failure instead of a hung suite.
    events = asyncio.run(asyncio.wait_for(collect(), TICK_BOUND_S))
    first = next(e for e in events if isinstance(e, TurnFinished))
    (finished,) = [e for e in events if isinstance(e, RunFinished)]
    return finished.result, first.usage.prompt_tokens


def test_two_ticks_by_two_agents_on_one_file(engine, tmp_path):
    with SQLiteStore(tmp_path / "operators.db") as store:
        before = store.state.get("operator:op:state")
        one, _ = tick(engine, store, "op", "Remember the code word is ORCHID.")
        two, prompt_two = tick(engine, store, "op", "What is the code word?")
        _, prompt_control = tick(engine, store, "control", "What is the code word?")
        for result in (one, two):
            assert result.stop_reason in ("final", "max_turns"), result
            assert result.metadata["state_write"] in ("model", "auto", "kept")
        saved = store.sessions.tail("operator:op", 100)
        users = [m.content for m in saved if m.role is Role.USER]
        assert users[0] == "Remember the code word is ORCHID." and "What is the code word?" in users
        assert saved[-1].role is Role.ASSISTANT
        state = store.state.get("operator:op:state")
        if two.metadata["state_write"] == "auto":
            assert state == two.content[:4000] and state.strip()
        elif two.metadata["state_write"] == "kept":
            assert not two.content.strip()
        assert before is None
        assert prompt_two > prompt_control  # tick 1 was in tick 2's first request
