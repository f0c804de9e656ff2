"""The reference docs state budgets and link to docs/performance.md; dated run figures live only there
(written by ``nox -s bench``) or in benchmarks/HISTORY.md."""

from __future__ import annotations

import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
# A clock time in UTC, a "run of the 27th" style reference, or a day cited as when a run was made.
DATED = re.compile(r"\b\d{2}:\d{2}(?:[\u2013-]\d{2}:\d{2})? UTC\b|\bthe (?:report|run) of the \d{1,2}(?:st|nd|rd|th)\b|"
                   r"\b20\d\d-\d\d-\d\d(?:\)|,? (?:morning|afternoon|evening|night))")
ALLOWED = {ROOT / "docs" / "performance.md"}


def reference_docs() -> list[pathlib.Path]:
    found = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md")), *sorted(ROOT.glob("packages/*/README.md")),
             *sorted(ROOT.glob("packages/*/docs/*.md")), *sorted(ROOT.glob("examples/*/README.md"))]
    return [p for p in found if p not in ALLOWED]


@pytest.mark.parametrize("path", reference_docs(), ids=lambda p: str(p.relative_to(ROOT)))
def test_reference_docs_carry_no_dated_runs(path: pathlib.Path) -> None:
    dated = [f"{path.name}:{n}: {line.strip()}" for n, line in enumerate(path.read_text().splitlines(), 1)
             if DATED.search(line)]
    assert not dated, "dated run figures belong in docs/performance.md or benchmarks/HISTORY.md:\n" + "\n".join(dated)


def test_the_pattern_catches_what_it_is_for() -> None:
    assert DATED.search("(2026-11-28, 00:04\u201300:16 UTC, ...)")
    assert DATED.search("in the report of the 27th")
    assert DATED.search("(figures from performance.md, 2026-11-27).")
    assert DATED.search("shared 2-core machine, 2026-11-27 evening")
    assert not DATED.search("a 5 s timeout; 0.8x the direct rate")
    assert not DATED.search("| Anthropic API version | `2023-06-01` |")
