"""``monitor_operative``: each value of each strategy axis, shown by the requests the scripted engine received
and the rows in the real SQLite store; bad values are ConfigErrors when the agent is created."""

from __future__ import annotations

import json
import re

import pytest

from jarvis_agents.agents.monitor import AXES, MonitorOperativeAgent
from jarvis_agents.agents.strategies.compression import SUMMARY_PROMPT
from jarvis_agents.agents.strategies.extraction import CAUSALITY_PROMPT
from jarvis_agents.agents.strategies.planning import PLAN_PROMPT
from jarvis_agents.agents.strategies.retrieval import SELF_EVAL_PROMPT
from jarvis_agents.tools.calculator import Calculator
from jarvis_core.agents import FINAL_ANSWER_PROMPT
from jarvis_core.errors import ConfigError
from jarvis_core.stores import SQLiteStore
from jarvis_core.testing import FakeEngine
from jarvis_core.types import Completion, Role, ToolCall, ToolSpec

NO_ARGS = {"type": "object", "properties": {}, "additionalProperties": False}
LONG = "Heavy rain closed the bridge, so the traffic moved to the ring road. " * 80  # 5,680 characters


class Weather:
    spec = ToolSpec("weather", "The weather now.", NO_ARGS)

    def run(self) -> str:
        return '{"temp": 21, "unit": "C", "wind": [3, 5]}'


class Feed:
    spec = ToolSpec("feed", "Read the news feed.", NO_ARGS)

    def run(self) -> str:
        return LONG


class Motto:
    spec = ToolSpec("motto", "Today's motto.", NO_ARGS)

    def run(self) -> str:
        return "keep calm and carry on"


TOOLS = [Weather(), Feed(), Motto(), Calculator()]
BASE = {"memory_extraction": "none", "observation_compression": "none", "retrieval_strategy": "none",
        "task_decomposition": "monolithic"}


@pytest.fixture
def db(tmp_path):
    return tmp_path / "operators.db"


def monitor(engine, db, **axes):
    return MonitorOperativeAgent(engine, model="m", operator_id="op", db=db, tools=TOOLS, mode="function_calling",
                                 **{**BASE, **axes})


def call(name, cid="c1", arguments="{}"):
    return Completion(tool_calls=[ToolCall(cid, name, arguments)])


def rows(db, kind=""):
    with SQLiteStore(db) as store:
        return [(k, v) for k, v in store.state.items(f"operator:op:{kind}") if not k.endswith(":state")]


def tool_messages(request):
    return [m.content for m in request.messages if m.role is Role.TOOL]


# -- validation ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("axis", sorted(AXES))
def test_an_unknown_value_is_a_config_error_naming_the_allowed_ones(db, axis):
    with pytest.raises(ConfigError) as info:
        MonitorOperativeAgent(FakeEngine([]), model="m", operator_id="op", db=db, **{axis: "sqlite"})
    assert axis in str(info.value) and "'sqlite'" in str(info.value)
    assert all(value in str(info.value) for value in AXES[axis])
    assert info.value.key == f"agents.monitor_operative.{axis}"
    assert not db.exists()  # refused before anything was opened


def test_semantic_retrieval_without_an_embedding_backend_is_a_config_error(db):
    with pytest.raises(ConfigError, match="needs embeddings, and engine 'fake' has no embeddings"):
        MonitorOperativeAgent(FakeEngine([]), model="m", operator_id="op", db=db, retrieval_strategy="semantic")


def test_a_bad_embedder_target_is_a_config_error(db):
    with pytest.raises(ConfigError, match="could not be loaded"):
        MonitorOperativeAgent(FakeEngine([]), model="m", operator_id="op", db=db, retrieval_strategy="semantic",
                              embedder="no_such_module_anywhere:embed")


# -- memory_extraction --------------------------------------------------------------------------------
def test_scratchpad_stores_one_row_per_tool_call_and_makes_no_extra_call(db):
    two = Completion(tool_calls=[ToolCall("c1", "motto"), ToolCall("c2", "calculator", '{"expression": "6*7"}')])
    engine = FakeEngine([two, "done"])
    monitor(engine, db, memory_extraction="scratchpad").run("check")
    assert len(engine.calls) == 2
    assert [v for _k, v in rows(db, "scratchpad:")] == [
        {"tool": "motto", "ok": True, "output": "keep calm and carry on"},
        {"tool": "calculator", "ok": True, "output": "42"}]


def test_structured_json_stores_the_parsed_json_and_skips_text(db):
    engine = FakeEngine([call("weather"), call("motto", "c2"), "done"])
    result = monitor(engine, db, memory_extraction="structured_json").run("check")
    assert [v for _k, v in rows(db, "structured:")] == [
        {"tool": "weather", "data": {"temp": 21, "unit": "C", "wind": [3, 5]}}]
    assert result.content == "done" and len(engine.calls) == 3
    assert rows(db) == rows(db, "structured:")


def test_causality_graph_makes_an_extra_call_and_stores_each_relation(db):
    relations = ('```json\n[{"cause": "heavy rain", "effect": "bridge closed", "confidence": 0.9},'
                 ' {"cause": "bridge closed", "effect": "traffic on the ring road"}, {"nonsense": 1}]\n```')
    engine = FakeEngine([call("feed"), relations, "The bridge is closed."])
    monitor(engine, db, memory_extraction="causality_graph").run("what happened?")
    assert len(engine.calls) == 3
    extract = engine.calls[1]
    assert extract.messages[0].content == CAUSALITY_PROMPT and extract.tools is None
    assert "Heavy rain closed the bridge" in extract.messages[1].content
    assert CAUSALITY_PROMPT not in json.dumps([m.content for m in engine.calls[2].messages])
    assert [v for _k, v in rows(db, "causality:")] == [
        {"cause": "heavy rain", "effect": "bridge closed", "confidence": 0.9, "tool": "feed"},
        {"cause": "bridge closed", "effect": "traffic on the ring road", "confidence": None, "tool": "feed"}]


def test_causality_graph_skips_short_outputs(db):
    engine = FakeEngine([call("calculator", arguments='{"expression": "1+1"}'), "2"])
    monitor(engine, db, memory_extraction="causality_graph").run("add")
    assert len(engine.calls) == 2 and rows(db, "causality:") == []


def test_no_extraction_stores_nothing_and_makes_no_extra_call(db):
    engine = FakeEngine([call("feed"), call("weather", "c2"), "done"])
    monitor(engine, db, memory_extraction="none").run("check")
    assert len(engine.calls) == 3 and rows(db) == []


# -- observation_compression --------------------------------------------------------------------------
def test_truncate_cuts_a_long_observation_with_a_marker(db):
    engine = FakeEngine([call("feed"), "done"])
    monitor(engine, db, observation_compression="truncate").run("read the feed")
    (seen,) = tool_messages(engine.calls[1])
    assert seen.startswith(LONG[:2000]) and seen.endswith(
        f"[observation truncated: {len(LONG)} characters, showing the first 2000]")
    assert len(seen) < 2100 and len(engine.calls) == 2


def test_truncate_works_on_text_protocol_observations_too(db):
    engine = FakeEngine(["Thought: read it\nAction: feed\nAction Input: {}", "Final Answer: done"])
    agent = MonitorOperativeAgent(engine, model="m", operator_id="op", db=db, tools=TOOLS, mode="react",
                                  **{**BASE, "observation_compression": "truncate"})
    assert agent.run("read the feed").content == "done"
    observation = engine.calls[1].messages[-1]
    assert observation.role is Role.USER and f"[observation truncated: {len(LONG)} characters" in observation.content
    assert LONG not in observation.content and len(observation.content) < 2200


def test_summarize_replaces_the_observation_with_the_extra_calls_summary(db):
    engine = FakeEngine([call("feed"), "Rain closed the bridge; traffic uses the ring road.", "done"])
    monitor(engine, db, observation_compression="summarize").run("read the feed")
    summary_call = engine.calls[1]
    assert summary_call.messages[0].content == SUMMARY_PROMPT and summary_call.tools is None
    assert summary_call.messages[1].content == LONG[:8000]
    expected = f"[summary of a {len(LONG)}-character tool output]\nRain closed the bridge; traffic uses the ring road."
    assert tool_messages(engine.calls[2]) == [expected]
    with SQLiteStore(db) as store:  # the session keeps what the model saw
        assert [m.content for m in store.sessions.tail("operator:op", 10) if m.role is Role.TOOL] == [expected]


def test_short_outputs_and_none_are_left_alone(db, tmp_path):
    engine = FakeEngine([call("feed"), call("motto", "c2"), "done"])
    monitor(engine, db, observation_compression="none").run("read the feed")
    assert tool_messages(engine.calls[2]) == [LONG, "keep calm and carry on"]
    engine = FakeEngine([call("motto"), "done"])
    monitor(engine, tmp_path / "other.db", observation_compression="summarize").run("motto?")
    assert tool_messages(engine.calls[1]) == ["keep calm and carry on"] and len(engine.calls) == 2


# -- retrieval_strategy -------------------------------------------------------------------------------
def seed(db, *notes):
    with SQLiteStore(db) as store:
        for n, text in enumerate(notes, start=1):
            store.state.put(f"operator:op:note:{n}", text)


def test_keyword_retrieval_puts_matching_items_in_the_system_prompt(db):
    seed(db, "the code word is ORCHID", "the printer on floor two is broken")
    engine = FakeEngine(["ORCHID"])
    monitor(engine, db, retrieval_strategy="keyword").run("what is the code word?")
    system = engine.calls[0].messages[0].content
    assert "## Recalled from memory\n- [note:1] the code word is ORCHID" in system and "printer" not in system


def test_no_retrieval_recalls_nothing(db):
    seed(db, "the code word is ORCHID")
    engine = FakeEngine(["?"])
    monitor(engine, db, retrieval_strategy="none").run("what is the code word?")
    assert "Recalled" not in engine.calls[0].messages[0].content and "ORCHID" not in engine.calls[0].messages[0].content


VOCAB = ("code", "word", "orchid", "printer", "broken", "flower")


def bag_of_words(texts):
    """A tiny real embedding: counts of a few words."""
    bag_of_words.calls.append(list(texts))
    return [[float(t.lower().count(w)) for w in VOCAB] for t in texts]


bag_of_words.calls = []


def test_semantic_retrieval_ranks_by_the_embedding_backend(db):
    seed(db, "the printer is broken", "ORCHID is a flower: it is the code word")
    bag_of_words.calls.clear()
    engine = FakeEngine(["ORCHID"])
    monitor(engine, db, retrieval_strategy="semantic", embedder=bag_of_words).run("which flower?")
    system = engine.calls[0].messages[0].content
    assert "[note:2] ORCHID is a flower" in system and "printer" not in system
    assert bag_of_words.calls == [["which flower?", "the printer is broken", "ORCHID is a flower: it is the code word"]]


def pick_orchid(call):
    lines = call.messages[1].content.splitlines()
    return json.dumps([int(m.group(1)) for m in map(re.compile(r"^(\d+)\. .*ORCHID").match, lines) if m])


def test_hybrid_self_evaluation_keeps_only_what_the_model_chose(db):
    seed(db, "the code word is ORCHID", "an old code word was TULIP (retired)", "lunch is at noon")
    engine = FakeEngine([pick_orchid, "ORCHID"])
    monitor(engine, db, retrieval_strategy="hybrid_with_self_eval").run("what is the code word?")
    evaluation, main = engine.calls
    assert evaluation.messages[0].content == SELF_EVAL_PROMPT and evaluation.tools is None
    assert "TULIP" in evaluation.messages[1].content and "ORCHID" in evaluation.messages[1].content
    assert "lunch" not in evaluation.messages[1].content  # not a keyword candidate
    system = main.messages[0].content
    assert "the code word is ORCHID" in system and "TULIP" not in system


def test_hybrid_without_candidates_makes_no_extra_call_and_an_unreadable_choice_recalls_nothing(db):
    engine = FakeEngine(["nothing stored yet"])
    monitor(engine, db, retrieval_strategy="hybrid_with_self_eval").run("what is the code word?")
    assert len(engine.calls) == 1
    seed(db, "the code word is ORCHID")
    engine = FakeEngine(["I think the first one", "?"])
    monitor(engine, db, retrieval_strategy="hybrid_with_self_eval").run("what is the code word?")
    assert "ORCHID" not in engine.calls[1].messages[0].content


# -- task_decomposition -------------------------------------------------------------------------------
def test_monolithic_makes_no_planning_call(db):
    engine = FakeEngine(["done"])
    monitor(engine, db, task_decomposition="monolithic").run("summarise the feed")
    assert len(engine.calls) == 1 and "## Plan" not in engine.calls[0].messages[0].content
    assert rows(db, "plan") == []


def test_phased_plans_first_and_shows_the_phases(db):
    engine = FakeEngine(["Here is the plan:\n1. Read the feed\n2) Write the summary", "done"])
    result = monitor(engine, db, task_decomposition="phased").run("summarise the feed")
    plan_call, main = engine.calls
    assert plan_call.messages[0].content == PLAN_PROMPT.format(max_phases=5) and plan_call.tools is None
    assert plan_call.messages[1].content == "Task: summarise the feed"
    assert "## Plan\nWork through these phases in order, then give your final answer:\n1. Read the feed\n" \
           "2. Write the summary" in main.messages[0].content
    assert result.content == "done"
    ((_key, plan),) = rows(db, "plan")
    assert plan["mode"] == "phased" and plan["status"] == "final"
    assert [p["phase"] for p in plan["phases"]] == ["Read the feed", "Write the summary"]


def test_hierarchical_runs_one_budgeted_sub_loop_per_phase_then_answers(db):
    engine = FakeEngine([
        "1. Compute the total\n2. Report it",
        call("calculator", arguments='{"expression": "17*23"}'),  # phase 1 uses its one turn on a tool
        "The total is 391.",                                     # ...then answers (turn limit reached)
        "Reported.",                                             # phase 2
        "All done: 391.",                                        # the final answer
    ])
    agent = monitor(engine, db, task_decomposition="hierarchical", phase_max_turns=1)
    result = agent.run("compute and report the total")
    assert len(engine.calls) == 5 and result.content == "All done: 391." and result.stop_reason == "final"
    assert engine.calls[1].messages[-1].content.startswith("Phase 1 of 2: Compute the total")
    assert engine.calls[2].messages[-1].content == FINAL_ANSWER_PROMPT and engine.calls[2].tools is None
    assert engine.calls[3].messages[-1].content.startswith("Phase 2 of 2: Report it")
    assert engine.calls[4].messages[-1].content.startswith("All 2 phases are done.")
    assert "## Plan" not in engine.calls[1].messages[0].content  # phases are driven, not shown
    ((_key, plan),) = rows(db, "plan")
    assert [(p["status"], p["result"]) for p in plan["phases"]] == [("max_turns", "The total is 391."),
                                                                    ("final", "Reported.")]
    assert result.turns == 3 and agent.max_turns == 25  # the phase budget does not outlive the phases


def test_a_plan_reply_without_phases_works_without_a_plan(db):
    engine = FakeEngine(["I would just do it.", "done"])
    result = monitor(engine, db, task_decomposition="hierarchical").run("do it")
    assert result.content == "done" and len(engine.calls) == 2 and rows(db, "plan") == []
