"""rlm against a scripted engine, with the real REPL child process: sub-calls reach the engine with the
sub-model settings and count in usage, llm_batch does not serialise, FINAL in code and in text, the
context lives in the REPL and not in the prompt, failures are observations, and no process is left after
a run that ends, fails or is cancelled."""

from __future__ import annotations

import asyncio
import os
import re
import time

import psutil
import pytest

import jarvis_agents.plugin
from jarvis_agents.agents.rlm import RLMAgent, RLMContextError, final_in_text
from jarvis_agents.tools.calculator import Calculator
from jarvis_core.agents import create_agent
from jarvis_core.errors import ConfigError, EngineError
from jarvis_core.events import EventType
from jarvis_core.testing import FakeEngine, RecordingBus, installed_registry
from jarvis_core.types import AgentContext, Completion, StreamChunk, Usage

MARKER = "ZEBRA-7731"


class SubEngine(FakeEngine):
    """Calls for the model ``big`` follow the script. Calls for any other model (the sub-model) are
    recorded in ``sub_calls``, wait ``delay`` seconds without blocking the loop, and answer
    ``sub:<prompt>`` with 10 prompt and 5 completion tokens."""

    def __init__(self, script, *, delay: float = 0.0) -> None:
        super().__init__(script)
        self.delay = delay
        self.sub_calls = []

    async def stream_full(self, messages, *, model, **kwargs):
        if model == "big":
            async for chunk in super().stream_full(messages, model=model, **kwargs):
                yield chunk
            return
        self.sub_calls.append({"model": model, "prompt": messages[-1].content, **kwargs})
        await asyncio.sleep(self.delay)
        yield StreamChunk(content=f"sub:{messages[-1].content}")
        yield StreamChunk(finish_reason="stop", usage=Usage(10, 5))


def rlm(engine, **kwargs):
    return RLMAgent(engine, model="big", sub_model=kwargs.pop("sub_model", "small"), **kwargs)


def code(text: str) -> str:
    return f"```python\n{text}\n```"


def last_text(call) -> str:
    return call.messages[-1].content or ""


def gone(mark: str, within_s: float = 5.0) -> bool:
    """No host process runs ``sleep <mark>`` (a child the REPL started; its pids are the jail's own)."""
    end = time.monotonic() + within_s
    while any(p.info["cmdline"] == ["sleep", mark] and p.info["status"] != psutil.STATUS_ZOMBIE
              for p in psutil.process_iter(["cmdline", "status"])):
        if time.monotonic() > end:
            return False
        time.sleep(0.05)
    return True


# -- sub-calls -----------------------------------------------------------------------------------------
def test_llm_query_reaches_the_engine_with_the_sub_model_settings_and_counts_in_usage():
    engine, bus = SubEngine([
        Completion(content=code("print(llm_query('What colour is the sky?'))"), usage=Usage(100, 20)),
        Completion(content="FINAL(blue)", usage=Usage(200, 3)),
    ]), RecordingBus()
    result = rlm(engine, sub_model="small", sub_temperature=0.1, sub_max_tokens=77, bus=bus).run("sky?")
    (sub,) = engine.sub_calls
    assert sub["model"] == "small" and sub["temperature"] == 0.1 and sub["max_tokens"] == 77
    assert sub["prompt"] == "What colour is the sky?"
    assert last_text(engine.calls[1]) == "REPL output:\nsub:What colour is the sky?"
    assert result.content == "blue" and result.stop_reason == "final"
    assert (result.usage.prompt_tokens, result.usage.completion_tokens) == (310, 28)
    assert result.metadata["sub_calls"] == 1 and result.metadata["model_calls"] == 3
    ends = [e.data for e in bus.of_type(EventType.INFERENCE_END)]
    assert [(d["model"], d["usage"]["total_tokens"]) for d in ends] == [("small", 15)]
    assert len(bus.of_type(EventType.INFERENCE_START)) == 1


def test_llm_batch_runs_its_prompts_concurrently_and_answers_in_order():
    engine = SubEngine([
        code("import time\nt = time.monotonic()\nanswers = llm_batch(['a', 'b', 'c'])\n"
             "print(answers, round(time.monotonic() - t, 3))"),
        "FINAL(ok)",
    ], delay=0.3)
    result = rlm(engine, sub_model="small").run("batch")
    answers, elapsed = re.match(r"REPL output:\n(\[.*\]) ([\d.]+)$", last_text(engine.calls[1])).groups()
    assert answers == "['sub:a', 'sub:b', 'sub:c']"
    assert float(elapsed) < 0.8  # three 0.3 s calls: serialised they would take 0.9 s
    assert result.metadata["sub_calls"] == 3 and result.usage.total_tokens == 45


def test_tool_call_runs_the_agents_tool_through_the_executor():
    engine, bus = SubEngine([code("print(tool_call('calculator', expression='6*7'))"), "FINAL(42)"]), RecordingBus()
    result = rlm(engine, tools=[Calculator()], bus=bus).run("6*7?")
    assert last_text(engine.calls[1]) == "REPL output:\n42" and result.content == "42"
    assert [(r.name, r.content) for r in result.tool_results] == [("calculator", "42"), ("python", "42")]
    assert [e.data["name"] for e in bus.of_type(EventType.TOOL_CALL_END)] == ["calculator", "python"]


# -- FINAL ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("reply", [
    code("x = 6 * 7\nFINAL(x)"),
    "I counted them.\nFINAL(42)",
    "FINAL('42')",
    "**FINAL(42)**",
])
def test_final_in_code_and_in_plain_text_gives_the_value(reply):
    result = rlm(SubEngine([reply])).run("how many?")
    assert result.content == "42" and result.stop_reason == "final" and result.turns == 1


def test_final_var_reads_a_repl_variable_in_code_and_in_text():
    engine = SubEngine([code("total = sum(range(10))\nprint('ready')"), "FINAL_VAR(total)"])
    assert rlm(engine).run("sum?").content == "45"


def test_final_in_text_parsing():
    assert final_in_text("thinking...\nFINAL(the answer is (a))\nthanks") == ("the answer is (a)", False)
    assert final_in_text("FINAL(\"multi\nline\")") == ("multi\nline", False)
    assert final_in_text("FINAL_VAR(result)") == ("result", True)
    assert final_in_text("the FINAL(x) is not at a line start") is None


def test_a_reply_with_neither_code_nor_final_is_corrected_once():
    engine = SubEngine(["I think it is 42.", "It is 42."])
    result = rlm(engine).run("?")
    assert "neither a ```python block nor a FINAL(answer) line" in last_text(engine.calls[1])
    assert result.content == "It is 42." and len(engine.calls) == 2


# -- the context ---------------------------------------------------------------------------------------
def test_the_context_lives_in_the_repl_and_not_in_the_prompt():
    document = ("filler line\n" * 5000) + f"the key is {MARKER}\n"
    engine = SubEngine([code("import re\nprint(len(context), re.search(r'key is (\\S+)', context).group(1)[:5])"),
                        "FINAL(found)"])
    rlm(engine).run("What is the key?", AgentContext(metadata={"context": document}))
    first = engine.calls[0].messages
    assert not any(MARKER in (m.content or "") for call in engine.calls for m in call.messages)
    assert f"`context` is a str of {len(document)} characters" in first[-1].content
    assert first[-1].content.startswith("What is the key?")
    assert last_text(engine.calls[1]) == f"REPL output:\n{len(document)} ZEBRA"


def test_structured_context_and_a_long_input_without_one():
    engine = SubEngine([code("print(type(context).__name__, len(context), context[1]['n'])"), "FINAL(ok)"])
    rlm(engine).run("items?", AgentContext(metadata={"context": [{"n": 1}, {"n": 2}]}))
    assert "`context` is a list with 2 items" in last_text(engine.calls[0])
    assert last_text(engine.calls[1]) == "REPL output:\nlist 2 2"

    long_input = "question? " + "x" * 10_000 + MARKER
    engine = SubEngine([code("print(context.endswith('" + MARKER + "'))"), "FINAL(ok)"])
    rlm(engine, max_input_chars=1000).run(long_input)
    assert MARKER not in last_text(engine.calls[0]) and "the whole of it is in `context`" in last_text(engine.calls[0])
    assert last_text(engine.calls[1]) == "REPL output:\nTrue"


def test_a_context_that_is_not_json_is_a_typed_error():
    with pytest.raises(RLMContextError, match="must be text or JSON values"):
        rlm(SubEngine(["FINAL(x)"])).run("?", AgentContext(metadata={"context": object()}))


# -- failures, limits, clean-up ------------------------------------------------------------------------
def test_exit_and_an_infinite_loop_are_error_observations_and_the_run_goes_on():
    engine = SubEngine([code("kept = 1\nexit()"), code("print(kept)\nwhile True: pass"), code("print('alive')"),
                        "FINAL(done)"])
    result = rlm(engine, cell_timeout_s=1.0).run("?")
    assert "SystemExit" in last_text(engine.calls[1])
    assert "timed out after 1 s" in last_text(engine.calls[2]) and "every variable is gone" in last_text(engine.calls[2])
    assert last_text(engine.calls[3]) == "REPL output:\nalive"  # a fresh REPL
    assert [r.ok for r in result.tool_results] == [False, False, True] and result.content == "done"


def test_output_longer_than_max_output_chars_is_capped():
    engine = SubEngine([code("print('y' * 5000)"), "FINAL(ok)"])
    rlm(engine, max_output_chars=200).run("?")
    seen = last_text(engine.calls[1])
    assert "y" * 200 in seen and "y" * 201 not in seen and "[output truncated: 4801 more characters" in seen


def pid_cell(mark: str) -> str:
    return code(f"import os, subprocess\nsubprocess.Popen(['sleep', '{mark}'])\nprint(os.getpid(), os.getcwd())")


def _pid_and_dir(text: str):
    pid, cwd = text.removeprefix("REPL output:\n").split()
    return int(pid), cwd


def test_the_repl_is_a_child_process_that_is_gone_after_the_run(run_dirs):
    engine = SubEngine([pid_cell("81.25"), "FINAL(ok)"])
    rlm(engine).run("?")
    pid, cwd = _pid_and_dir(last_text(engine.calls[1]))
    assert pid != os.getpid() and cwd == "/work" and gone("81.25") and list(run_dirs.iterdir()) == []


def test_the_repl_is_gone_after_an_engine_error(run_dirs):
    engine = SubEngine([pid_cell("82.25"), EngineError("the server went away")])
    with pytest.raises(EngineError):
        rlm(engine).run("?")
    _, cwd = _pid_and_dir(last_text(engine.calls[1]))
    assert cwd == "/work" and gone("82.25") and list(run_dirs.iterdir()) == []


def test_the_repl_is_gone_after_a_cancel_during_a_cell():
    engine = SubEngine([code("import subprocess\nsubprocess.Popen(['sleep', '83.25'])\nllm_query('x')")],
                       delay=30.0)
    agent = rlm(engine)

    async def scenario():
        task = asyncio.ensure_future(agent.arun("?"))
        for _ in range(500):
            if engine.sub_calls:
                break
            await asyncio.sleep(0.01)
        assert engine.sub_calls, "the cell never called llm_query"
        assert not gone("83.25", within_s=0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(asyncio.wait_for(scenario(), 20))
    assert gone("83.25")


# -- construction --------------------------------------------------------------------------------------
def test_registered_and_bad_options_are_config_errors():
    with installed_registry(jarvis_agents.plugin):
        built = create_agent("rlm", FakeEngine(), model="big", config={"sub_model": "small"})
    assert isinstance(built, RLMAgent) and built.sub_model == "small"
    assert RLMAgent(FakeEngine(), model="big").sub_model == "big"
    for bad in ({"sub_max_tokens": 0}, {"max_output_chars": "lots"}, {"sub_model": ""}, {"cell_timeout_s": -1}):
        with pytest.raises(ConfigError):
            rlm(FakeEngine(), **bad)


# -- caps on sub-calls ---------------------------------------------------------------------------------
LOOP_CELL = code("n = 0\ntry:\n    for i in range(3000):\n        llm_query('x')\n        n += 1\n"
                 "except RuntimeError as exc:\n    print(n, exc)")


def _cell_text(result) -> str:
    return result.tool_results[0].content


def test_a_cell_calling_llm_query_in_a_loop_stops_at_the_per_cell_cap():
    engine = SubEngine([LOOP_CELL, "FINAL(done)"])
    result = rlm(engine, max_sub_calls_per_cell=5).run("?")
    assert len(engine.sub_calls) == 5
    assert _cell_text(result).startswith("5 llm_query failed: SubCallLimitError: at most 5 sub-model calls per cell")
    assert result.metadata["sub_calls"] == 5


def test_the_per_run_cap_spans_cells_and_a_batch_past_a_cap_is_refused_whole():
    engine = SubEngine([LOOP_CELL, code("try:\n    llm_batch(['a'] * 3)\nexcept RuntimeError as exc:\n    print(exc)"),
                        "FINAL(done)"])
    result = rlm(engine, max_sub_calls_per_cell=5, max_sub_calls_per_run=7).run("?")
    assert _cell_text(result).startswith("5 ")
    assert "at most 7 sub-model calls per run: 5 made, 3 more asked" in result.tool_results[1].content
    assert len(engine.sub_calls) == 5  # none of the refused batch ran


def test_the_per_cell_token_budget_stops_sub_calls():
    engine = SubEngine([LOOP_CELL, "FINAL(done)"])  # each sub-call reports 15 tokens
    result = rlm(engine, max_sub_tokens_per_cell=40).run("?")
    assert len(engine.sub_calls) == 3
    assert "the sub-model token budget of this cell is spent (45 of 40)" in _cell_text(result)


def test_time_spent_answering_sub_calls_counts_against_the_cell_deadline():
    engine = SubEngine([LOOP_CELL, "FINAL(done)"], delay=0.5)
    started = time.monotonic()
    result = rlm(engine, cell_timeout_s=1.5).run("?")
    assert time.monotonic() - started < 10
    assert "timed out after 1.5 s (its llm_query, llm_batch and tool_call time included)" in _cell_text(result)
    assert len(engine.sub_calls) <= 4
