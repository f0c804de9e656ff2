"""Render ``docs/performance.md`` and its plots from the benchmarks' latest results.

    python benchmarks/report.py [--results DIR] [--out docs/performance.md] [--note TEXT ...]

Reads every ``<name>.json`` that ``results.write_result`` left in the results directory
(``$JARVIS_BENCH_RESULTS``, default ``benchmarks/results/``) and writes the report: the method and the
machine, every budget with its verdict, the plots, then one section per benchmark with the command that
produced it and its tables (jarvis's rows beside the floors and the peers measured in the same run). The
plots are PNG files next to the report (``docs/performance/``), drawn with matplotlib, a benchmark-only
dependency (``benchmarks/requirements.txt``); without it the report is written without them and says so.

``nox -s bench`` runs this last. To refresh one section: re-run that benchmark, then this script. A
benchmark with no result in the results directory keeps its section and its budget rows from the report
being replaced, so ``nox -s bench -- concurrency server`` refreshes those two and leaves the others as they
were (each section names the date of its run). ``--note`` adds a line to the method section (say, that
rounds were reduced).
"""

from __future__ import annotations

import argparse
import pathlib
import re
import sys
from typing import Any, Dict, List, Optional, Sequence

from results import load_results, results_dir

ROOT = pathlib.Path(__file__).resolve().parent.parent
#: Sections in this order; results with other names follow, alphabetically.
ORDER = ["concurrency", "openai_compat", "embeddings", "ollama", "cloud", "server", "agents", "convlog", "cli_startup", "memory",
         "discovery", "sandbox", "parsers", "tool_args"]
IMAGES = "performance"  # folder next to the report


# -- markdown ----------------------------------------------------------------------------------------------
def _cell(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def md_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> List[str]:
    """A markdown table; columns after the first are right-aligned when their cells look like numbers."""
    def numeric(i: int) -> bool:
        cells = [str(r[i]) for r in rows if i < len(r) and str(r[i])]
        return bool(cells) and all(c[:1].isdigit() or c[:1] in "+-" for c in cells)

    align = ["---"] + ["--:" if numeric(i) else "---" for i in range(1, len(headers))]
    out = ["| " + " | ".join(_cell(h) for h in headers) + " |", "|" + "|".join(align) + "|"]
    out += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return out


def _machine_line(m: Dict[str, Any]) -> str:
    cores = f"{m.get('cores')} cores" + (f" ({m.get('usable_cores')} usable)" if m.get("usable_cores") != m.get("cores") else "")
    memory = f", {m['memory_gib']} GiB" if m.get("memory_gib") else ""
    return f"{cores}, {m.get('cpu')}{memory}; {m.get('python')}; {m.get('platform')}"


def method(docs: List[Dict[str, Any]], notes: Sequence[str]) -> List[str]:
    machines = {_machine_line(d["machine"]) for d in docs}
    dates = sorted(d["finished"] for d in docs)
    minutes = sum(d.get("seconds", 0) for d in docs) / 60
    out = [
        "## Method",
        "",
        "- **Ratios, not absolute times.** Every benchmark measures jarvis against a *floor* measured side by side in "
        "the same run: the cheapest way to do the same work (a raw pooled httpx client sending the same request "
        "and decoding the same JSON, a hand-written line loop, a bare interpreter start, an entry-point scan). "
        "Absolute times hold for this machine only; the ratios are what carries over.",
        "- **Rounds interleaved.** Each benchmark splits its work into rounds and runs every client in every round "
        "(in a rotated or alternating order), so a slow patch of a shared machine hits all of them; a ratio is "
        "the median over rounds of the per-round ratio, with the min-max over rounds in brackets where shown.",
        "- **Loopback servers in their own process** answer with canned bytes, so the server's CPU is not charged "
        "to the client and the clients' own cost is what differs. Peers (the official `openai` and `ollama` "
        "clients, LiteLLM's proxy) run in the same rounds against the same servers.",
        "- **Budgets** come from [docs/contract.md](contract.md) §10 and the issues that set them; they are read "
        "here, never asserted by tests.",
        f"- **Machine:** {'; '.join(sorted(machines))}. "
        + ("Results from different machines are mixed above. " if len(machines) > 1 else "")
        + f"Measured {dates[0]}" + (f" to {dates[-1]}" if dates[-1] != dates[0] else "")
        + f", {minutes:.0f} minutes of benchmarks in all. The machine is shared and noisy: expect a few percent "
        "of spread between runs, more at high concurrency.",
    ]
    out += [f"- {note}" for note in notes]
    out += ["- **Reproduce:** `nox -s bench` runs every benchmark and then this report; `nox -s bench -- "
            "concurrency` runs one (any part of a script's name) and keeps the other sections as they were, and "
            "`python benchmarks/report.py` re-renders from the results in `benchmarks/results/`. Each section below "
            "gives the exact command and the date of its run.", ""]
    return out


def bench_titles() -> Dict[str, str]:
    """Each benchmark's section title → its result name, as the scripts pass them to ``write_result``."""
    found: Dict[str, str] = {}
    for script in sorted((ROOT / "benchmarks").glob("bench_*.py")):
        for name, title in re.findall(r'write_result\(\s*"(\w+)",\s*"([^"]+)"', script.read_text(encoding="utf-8")):
            found[title] = name
    return found


class Kept:
    """The sections and budget rows of an earlier report, by title, for the benchmarks with no fresh result."""

    def __init__(self, previous: str, fresh_titles: Sequence[str]) -> None:
        self.sections: Dict[str, List[str]] = {}
        self.budget_rows: Dict[str, List[str]] = {}
        generated = {"Method", "Budgets", "Plots", "Not in this report"}
        parts = re.split(r"^(?=## )", previous, flags=re.MULTILINE)
        for part in parts:
            title = part[3:].split("\n", 1)[0].strip() if part.startswith("## ") else ""
            if title and title not in generated and title not in fresh_titles:
                self.sections[title] = [*part.rstrip("\n").split("\n"), ""]
        for part in parts:
            if part.startswith("## Budgets"):
                for line in part.splitlines():
                    link = re.match(r"\| \[([^\]]+)\]\(#", line)
                    if link and link.group(1) in self.sections:
                        self.budget_rows.setdefault(link.group(1), []).append(line)


def _by_order(names: Sequence[str]) -> List[str]:
    return sorted(names, key=lambda n: (ORDER.index(n) if n in ORDER else len(ORDER), n))


def budgets(docs: List[Dict[str, Any]], kept: Kept, names: Dict[str, str]) -> List[str]:
    rows: Dict[str, List[str]] = {}
    for d in docs:
        fresh = []
        for b in d.get("budgets", []):
            verdict = {True: "met", False: "**not met**", None: "-"}[b.get("met")]
            fresh.append([f"[{d['title']}](#{_anchor(d['title'])})", b["what"], b["value"], b["budget"], verdict])
        rows[d["name"]] = md_table(["-"] * 5, fresh)[2:]
    for title, lines in kept.budget_rows.items():
        rows[names.get(title, title)] = lines
    if not any(rows.values()):
        return []
    head = ["| benchmark | measure | measured | budget | verdict |", "|---|---|---|---|---|"]
    return ["## Budgets", "", *head, *(line for n in _by_order(list(rows)) for line in rows[n]), ""]


def _anchor(title: str) -> str:
    keep = "".join(c for c in title.lower() if c.isalnum() or c in " -_")
    return keep.replace(" ", "-")


def section(d: Dict[str, Any]) -> List[str]:
    out = [f"## {d['title']}", "", d["summary"], "", f"`{d['command']}` — {d['finished']}, {d.get('seconds', 0):.0f} s.", ""]
    for t in d["tables"]:
        out += [f"**{t['caption']}**", "", *md_table(t["headers"], t["rows"]), ""]
        out += [f"{note}" for note in t.get("notes", [])]
        if t.get("notes"):
            out.append("")
    return out


# -- plots -------------------------------------------------------------------------------------------------
def plot_concurrency(doc: Dict[str, Any], path: pathlib.Path, plt: Any) -> None:
    """Aggregate chunk rate against N per client, and each client's rate at N over its own one-stream rate."""
    data = doc["data"]
    ns = data["concurrency"]
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.6))
    for name, c in data["clients"].items():
        style = "-" if c["ours"] else (":" if c["floor"] == name else "--")
        width = 2.2 if c["ours"] else 1.4
        left.plot(ns, [c["rate"][str(n)] / 1e3 for n in ns], style, marker="o", linewidth=width, label=name)
        right.plot(ns, [c["kept"][str(n)] for n in ns], style, marker="o", linewidth=width, label=name)
    for ax in (left, right):
        ax.set_xscale("log", base=2)
        ax.set_xticks(ns)
        ax.set_xticklabels([str(n) for n in ns])
        ax.set_xlabel("concurrent streams")
        ax.grid(True, alpha=0.3)
    left.set_ylabel("thousand chunks/s (all streams together)")
    left.set_title(f"Chunk rate, {data['chunks']}-chunk streams")
    left.set_ylim(bottom=0)
    right.axhline(0.8, color="black", linewidth=0.8, linestyle="-.")
    right.text(ns[0], 0.81, "goal for the engines at the widest N: 0.8", fontsize=8, va="bottom")
    right.set_ylabel("rate at N / the same client's rate at 1")
    right.set_title("Throughput kept as concurrency rises")
    right.set_ylim(bottom=0)
    right.legend(fontsize=8, loc="lower left")
    fig.text(0.01, 0.01, "solid: jarvis engines; dashed: official clients; dotted: raw httpx floors", fontsize=8)
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    fig.savefig(path, dpi=100)
    plt.close(fig)


def _ratios(docs: Dict[str, Dict[str, Any]], key: str) -> Dict[str, float]:
    out: Dict[str, float] = {}
    for name in ("openai_compat", "ollama", "cloud"):
        d = docs.get(name)
        if d:
            out.update({k: v for k, v in d["data"].get(key, {}).items() if not k.startswith("httpx")})
    return out


def plot_overhead(docs: Dict[str, Dict[str, Any]], path: pathlib.Path, plt: Any) -> bool:
    """Per-request time and per-stream chunk rate of each client, as ratios to its floor."""
    request, rate = _ratios(docs, "request_ratio"), _ratios(docs, "chunk_rate_ratio")
    if not request and not rate:
        return False
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.6))
    for ax, values, line, title, label in (
        (left, request, 1.1, "Per non-streamed request (lower is better)", "time / floor (raw pooled httpx)"),
        (right, rate, 0.9, "Per stream chunk (higher is better)", "chunk rate / floor (raw line loop)"),
    ):
        names = list(values)
        colors = ["tab:blue" if n.startswith("jarvis") else "tab:gray" for n in names]
        ax.barh(range(len(names)), [values[n] for n in names], color=colors)
        ax.set_yticks(range(len(names)))
        ax.set_yticklabels(names, fontsize=8)
        ax.invert_yaxis()
        ax.axvline(1.0, color="black", linewidth=0.8)
        ax.axvline(line, color="tab:red", linewidth=0.8, linestyle="--")
        ax.set_title(title)
        ax.set_xlabel(f"{label}; dashed: budget {line}")
        for i, n in enumerate(names):
            ax.text(values[n], i, f" {values[n]:.2f}", va="center", fontsize=8)
        ax.grid(True, axis="x", alpha=0.3)
    fig.text(0.01, 0.01, "blue: jarvis; gray: official clients (peers), measured in the same rounds", fontsize=8)
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return True


def plots(by_name: Dict[str, Dict[str, Any]], out: pathlib.Path) -> List[str]:
    """Draw the plots into ``<report dir>/performance/``; the markdown that shows them."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        return ["## Plots", "", f"Not drawn: matplotlib is not installed here ({exc}); "
                "`pip install -r benchmarks/requirements.txt`.", ""]
    folder = out.parent / IMAGES
    folder.mkdir(parents=True, exist_ok=True)
    lines = ["## Plots", ""]
    if "concurrency" in by_name:
        plot_concurrency(by_name["concurrency"], folder / "concurrency.png", plt)
        lines += [f"![Chunk rate against concurrent streams, per client]({IMAGES}/concurrency.png)", ""]
    # Without fresh engine results the plot drawn from the last ones stays, as their sections do.
    if plot_overhead(by_name, folder / "overhead.png", plt) or (folder / "overhead.png").exists():
        lines += [f"![Per-request and per-chunk cost of each client against its floor]({IMAGES}/overhead.png)", ""]
    return lines if len(lines) > 2 else []


# -- the report ------------------------------------------------------------------------------------------
def render(docs: List[Dict[str, Any]], out: pathlib.Path, notes: Sequence[str], previous: str = "") -> str:
    """The report; ``previous`` (the report it replaces) gives the sections of benchmarks not in ``docs``."""
    by_name = {d["name"]: d for d in docs}
    ordered = [by_name[n] for n in ORDER if n in by_name] + [d for d in docs if d["name"] not in ORDER]
    kept = Kept(previous, [d["title"] for d in ordered])
    names = bench_titles()
    lines = [
        "# Performance",
        "",
        "<!-- Generated by benchmarks/report.py from the results of `nox -s bench`; edits here are overwritten. -->",
        "",
        "What jarvis costs on top of the work it does, measured by the benchmarks under `benchmarks/` as ratios to "
        "a floor measured in the same run, with the official clients of the same servers beside jarvis's engines.",
        "",
        *method(ordered, notes),
        *budgets(ordered, kept, names),
        *plots(by_name, out),
    ]
    bodies = {d["name"]: section(d) for d in ordered}
    bodies.update({names.get(title, title): body for title, body in kept.sections.items()})
    for name in _by_order(list(bodies)):
        lines += bodies[name]
    missing = [n for n in ORDER if n not in bodies]
    if missing:
        lines += ["## Not in this report", "", "No result yet for: " + ", ".join(f"`bench_{n}.py`" for n in missing)
                  + ".", ""]
    return "\n".join(lines).rstrip() + "\n"


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--results", type=pathlib.Path, default=None, help="results directory (default: results_dir())")
    ap.add_argument("--out", type=pathlib.Path, default=ROOT / "docs" / "performance.md")
    ap.add_argument("--note", action="append", default=[], help="a line for the method section (repeatable)")
    args = ap.parse_args(argv)
    docs = load_results(args.results or results_dir())
    if not docs:
        print(f"no results in {args.results or results_dir()}; run the benchmarks first", file=sys.stderr)
        return 1
    args.out.parent.mkdir(parents=True, exist_ok=True)
    previous = args.out.read_text(encoding="utf-8") if args.out.exists() else ""
    args.out.write_text(render(docs, args.out, args.note, previous), encoding="utf-8")
    print(f"wrote {args.out} ({len(docs)} benchmarks)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
