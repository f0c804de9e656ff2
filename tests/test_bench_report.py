"""benchmarks/report.py: ``nox -s bench -- <some>`` refreshes those sections of docs/performance.md and keeps
the others (section and budget rows) from the report it replaces, in the report's fixed order."""

from __future__ import annotations

import importlib.util
import pathlib
import sys
from typing import Any, Dict

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
BENCHMARKS = ROOT / "benchmarks"


@pytest.fixture(scope="module")
def report() -> Any:
    sys.path.insert(0, str(BENCHMARKS))  # report.py imports its sibling results.py, as when run as a script
    try:
        spec = importlib.util.spec_from_file_location("bench_report", BENCHMARKS / "report.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.path.remove(str(BENCHMARKS))


def result(name: str, title: str, value: str, rate: str) -> Dict[str, Any]:
    return {"name": name, "title": title, "summary": f"{title} summary.", "command": f"python benchmarks/bench_{name}.py",
            "finished": "2026-11-28 07:00 UTC", "seconds": 60, "budgets": [
                {"what": f"{name} ratio", "value": value, "budget": ">= 0.80x", "met": True}],
            "tables": [{"caption": "rates", "headers": ["client", "chunks/s"], "rows": [["jarvis", rate]]}],
            "machine": {"cores": 2, "usable_cores": 2, "cpu": "cpu", "python": "3.11", "platform": "linux"},
            "data": {}}


def test_a_partial_run_refreshes_its_sections_and_keeps_the_others(report: Any, tmp_path: pathlib.Path) -> None:
    out = tmp_path / "performance.md"
    first = [result("server", "jarvis serve", "0.62x", "10k"), result("parsers", "Parser throughput", "2.00x", "5k"),
             result("cloud", "Cloud engine (Anthropic, Gemini)", "0.96x", "7k")]
    out.write_text(report.render(first, out, []), encoding="utf-8")

    second = [result("server", "jarvis serve", "0.87x", "54k")]
    text = report.render(second, out, [], out.read_text(encoding="utf-8"))

    assert "0.87x" in text and "54k" in text and "0.62x" not in text and "| jarvis | 10k |" not in text
    assert "| jarvis | 5k |" in text and "| jarvis | 7k |" in text  # kept sections, tables included
    budget_rows = [line for line in text.splitlines() if line.startswith("| [")]
    assert [row.split("](")[0] for row in budget_rows] == ["| [Cloud engine (Anthropic, Gemini)", "| [jarvis serve",
                                                          "| [Parser throughput"]  # the report's order, not the run's
    headings = [line for line in text.splitlines() if line.startswith("## ")]
    assert headings.index("## Cloud engine (Anthropic, Gemini)") < headings.index("## jarvis serve") \
        < headings.index("## Parser throughput")
    assert headings.count("## jarvis serve") == 1 and "## Not in this report" in headings
    # Rendering again from the same results changes nothing.
    out.write_text(text, encoding="utf-8")
    assert report.render(second, out, [], text) == text


def test_every_benchmark_title_is_known_to_the_report(report: Any) -> None:
    titles = report.bench_titles()
    scripts = {p.stem.removeprefix("bench_") for p in BENCHMARKS.glob("bench_*.py")}
    assert set(titles.values()) == scripts, "a bench script whose write_result the report cannot read"
    assert set(titles.values()) <= set(report.ORDER)
