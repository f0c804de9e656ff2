"""The per-agent defaults the agents documentation states (CodeAct 3 turns / 2048 tokens; RLM 2048; Operative
20 / 0.3 / 2048; Monitor 25 / 0.3 / 4096 and its strategy axes), as the registry builds the agents."""

from __future__ import annotations

import pytest

from jarvis_agents.agents.monitor import DEFAULTS
from jarvis_core.agents.factory import create_agent
from jarvis_core.testing import FakeEngine


@pytest.mark.parametrize("key, turns, temperature, max_tokens", [
    ("codeact", 3, None, 2048),
    ("rlm", None, None, 2048),
    ("operative", 20, 0.3, 2048),
    ("monitor_operative", 25, 0.3, 4096),
])
def test_documented_settings(key, turns, temperature, max_tokens, tmp_path, monkeypatch):
    monkeypatch.setenv("JARVIS_HOME", str(tmp_path))
    options = {"db": str(tmp_path / "ops.db")} if "operative" in key else {}
    agent = create_agent(key, FakeEngine([]), model="m", **options)
    try:
        s = agent.settings
        if turns is not None:
            assert s.max_turns == turns
        assert s.temperature == temperature and s.max_tokens == max_tokens
        if key == "monitor_operative":
            assert (agent.memory_extraction, agent.observation_compression, agent.retrieval_strategy,
                    agent.task_decomposition) == ("causality_graph", "summarize", "hybrid_with_self_eval", "phased")
    finally:
        close = getattr(agent, "close", None)
        if close is not None:
            close()


def test_monitor_default_axes():
    assert DEFAULTS == {"memory_extraction": "causality_graph", "observation_compression": "summarize",
                        "retrieval_strategy": "hybrid_with_self_eval", "task_decomposition": "phased"}
