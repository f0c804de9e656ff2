"""The repeated-line / runaway-line detector on synthetic streams and on real SmolLM2 outputs."""

from __future__ import annotations

import json
import pathlib
import random

import pytest

from jarvis_core.errors import ConfigError
from jarvis_engine_openai_compat.worker.loop_detector import LoopDetector, LoopDetectorConfig, normalize_line

DATA = pathlib.Path(__file__).parent / "data"


def feed_all(text: str, *, step: int = 3, config: LoopDetectorConfig | None = None):
    """Feed ``text`` in pieces of ``step`` characters; return the first verdict (or None) and where it fired."""
    det = LoopDetector(config)
    for i in range(0, len(text), step):
        verdict = det.feed(text[i:i + step])
        if verdict is not None:
            return verdict, i + step
    return None, len(text)


def test_same_line_six_times_fires_with_the_line():
    text = "Intro line here.\n" + "A refrain, a refrain, a refrain,\n" * 6 + "never read\n"
    verdict, at = feed_all(text)
    assert verdict is not None
    assert verdict.reason == "repeated_line_loop"
    assert verdict.line == "A refrain, a refrain, a refrain,"
    assert verdict.repeats == 6
    assert at <= text.index("never read") + 3  # fired when the sixth copy ended, not later


def test_five_copies_do_not_fire():
    text = "A reminder of the unforgiving sea,\n" * 5 + "And then the story moves on to other things.\n"
    assert feed_all(text)[0] is None


@pytest.mark.parametrize("step", [1, 2, 7, 64, 10_000])
def test_piece_size_does_not_matter(step):
    text = "Hello there.\n" + "The same sentence again and again.\n" * 8
    verdict, _ = feed_all(text, step=step)
    assert verdict is not None and verdict.line == "The same sentence again and again."


def test_blank_lines_between_copies_are_transparent():
    text = "Climate change requires immediate attention.\n\n" * 6
    verdict, _ = feed_all(text)
    assert verdict is not None and verdict.reason == "repeated_line_loop"


def test_numbered_list_items_with_the_same_text_count_as_one_line():
    text = "".join(f"{i}. Cats are the most social animal on the planet.\n" for i in range(1, 8))
    verdict, _ = feed_all(text)
    assert verdict is not None
    assert verdict.line.startswith("6. Cats are")
    assert normalize_line("12) - Cats  ARE the most") == "cats are the most"


def test_cycle_of_two_lines_fires():
    text = "Question: what next?\nAnswer: the same again.\n" * 6
    verdict, _ = feed_all(text)
    assert verdict is not None
    assert verdict.cycle_lines == 2
    assert verdict.line == "Question: what next? / Answer: the same again."


# -- legitimate repetition must not fire ------------------------------------------------------------
def test_horizontal_rules_and_blank_lines_never_fire():
    text = "# Title\n\n---\n\n---\n\n---\n\n***\n\n___\n\n===\n" * 20
    assert feed_all(text)[0] is None


def test_table_rules_and_distinct_rows_do_not_fire():
    rows = "".join(f"| row {i} | value {i * 3} |\n|---|---|\n" for i in range(40))
    text = "| name | value |\n|:---|---:|\n" + rows
    assert feed_all(text)[0] is None


def test_short_lines_never_fire():
    text = "{\n}\n" * 30 + "end\n" * 30 + "ok\n" * 30
    assert feed_all(text)[0] is None


def test_code_fence_is_lenient():
    code = "```python\n" + "    result.append(compute(x))\n" * 10 + "```\n"
    assert feed_all(code)[0] is None  # 10 < fence_repeats (12)
    runaway = "```\n" + "    result.append(compute(x))\n" * 12
    verdict, _ = feed_all(runaway)
    assert verdict is not None and verdict.line == "result.append(compute(x))"


def test_a_fence_resets_the_run():
    text = "Same line, long enough to count.\n" * 5 + "```\n" + "Same line, long enough to count.\n" * 5
    assert feed_all(text)[0] is None


def test_varied_prose_does_not_fire():
    rng = random.Random(7)
    words = "the a river stone light over under quickly model server slot token line cache".split()
    text = "".join(" ".join(rng.choice(words) for _ in range(12)) + ".\n" for _ in range(500))
    assert feed_all(text, step=5)[0] is None


def test_runaway_line_fires_on_a_repeated_sentence():
    text = "The Romans were also masters of war. " + "They built their own military, with their legions. " * 6
    verdict, _ = feed_all(text, step=4)
    assert verdict is not None
    assert verdict.reason == "repeated_text_loop"
    assert verdict.line == "They built their own military, with their legions."
    assert verdict.cycle_lines == 0


def test_runaway_check_ignores_data_without_words():
    text = "weights = [" + "0, " * 400 + "1]\n"
    assert feed_all(text)[0] is None
    text = "row = " + "-1.5, 2.25, " * 60
    assert feed_all(text)[0] is None


def test_fires_once_then_stays_quiet():
    det = LoopDetector()
    text = "Repeat this line for ever and ever.\n" * 20
    verdicts = [v for v in (det.feed(text[i:i + 10]) for i in range(0, len(text), 10)) if v is not None]
    assert len(verdicts) == 1
    assert det.verdict == verdicts[0]


def test_disabled_detector_never_fires():
    text = "Repeat this line for ever and ever.\n" * 20
    assert feed_all(text, config=LoopDetectorConfig(enabled=False))[0] is None


def test_thresholds_are_validated():
    with pytest.raises(ConfigError, match="repeats"):
        LoopDetectorConfig(repeats=1)
    with pytest.raises(ConfigError, match="min_line_chars"):
        LoopDetectorConfig(min_line_chars=0)


def test_a_very_long_line_costs_bounded_memory():
    det = LoopDetector()
    rng = random.Random(3)
    for _ in range(2000):  # 200 000 random letters and spaces without a newline
        assert det.feed("".join(rng.choice("abcdefghij klmnop") for _ in range(100))) is None
    assert sum(len(p) for p in det._pending) <= 8192


# -- real SmolLM2 outputs ---------------------------------------------------------------------------
def _real_outputs():
    data = json.loads((DATA / "smollm2_loop_outputs.json").read_text(encoding="utf-8"))
    return [pytest.param(o, id=o["prompt"][:40]) for o in data["outputs"]]


@pytest.mark.parametrize("output", _real_outputs())
def test_real_smollm2_outputs(output):
    verdict, at = feed_all(output["text"], step=4)
    expected = output["expected_reason"]
    if expected is None:
        assert verdict is None, f"false alarm on a legitimate output: {verdict}"
    else:
        assert verdict is not None and verdict.reason == expected
        assert at < len(output["text"])  # caught before the model ran out of tokens
