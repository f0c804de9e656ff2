#!/usr/bin/env python
"""Parser throughput: every registered tool and reasoning parser on ~1 MB and ~4 MB outputs.

    python benchmarks/bench_parsers.py [--only NAME ...] [--mb 1]

For each parser it parses a format-typical output (prose with near-miss markers, then a call or a reasoning
block carrying most of the bytes) whole and fed in 8-byte pieces, at 1 MB and 4 MB, and prints MB/s plus
the 4MB/1MB time ratio (≈4 means linear; ≈16 would mean quadratic). The floor, measured in the same run,
is the bare cost of cutting the same text into 8-byte pieces and searching it once with ``str.find``; the
``x floor`` column is the parser's streamed time divided by that floor. Nothing here is asserted: budgets
are read, not tested (docs/contract.md §10: a 1 MB output parses in well under a second).
"""

from __future__ import annotations

import argparse
import gc
import json
import time
from typing import Callable, Dict

from results import table, write_result

from jarvis_core.parsers import get_reasoning_parser, get_tool_parser, reasoning_parser_names, tool_parser_names

MB = 1 << 20
PIECE = 8
ALIASES = {"qwen3_coder", "llama4_json", "glm47"}
PROSE = "The weather in Paris <tool is mild; {braces} and [brackets] and </thi appear in text. "


def _prose(n: int) -> str:
    return (PROSE * (n // len(PROSE) + 1))[:n]


def _big(n: int) -> str:
    return ("lorem ipsum dolor sit amet " * (n // 27 + 1))[:n]


def _ds(words: str) -> str:
    return "<" + "\uff5c" + words.replace("_", "\u2581") + "\uff5c" + ">"


def tool_sample(name: str, n: int) -> str:
    """~n characters of ``name``'s format: half prose (where the format allows it), half a call's arguments."""
    half = n // 2
    arg = json.dumps({"text": _big(half)})
    samples: Dict[str, Callable[[], str]] = {
        "hermes": lambda: _prose(half) + f'<tool_call>\n{{"name": "f", "arguments": {arg}}}\n</tool_call>',
        "granite4": lambda: _prose(half) + f'<tool_call>{{"name": "f", "arguments": {arg}}}</tool_call>',
        "qwen3_xml": lambda: _prose(half) + "<tool_call>\n<function=f>\n<parameter=text>\n" + _big(half)
        + "\n</parameter>\n</function>\n</tool_call>",
        "llama3_json": lambda: f'{{"name": "f", "parameters": {json.dumps({"text": _big(n)})}}}',
        "granite": lambda: f'<|tool_call|>[{{"name": "f", "arguments": {json.dumps({"text": _big(n)})}}}]',
        "pythonic": lambda: f"[f(text={_big(n)!r})]",
        "llama4_pythonic": lambda: f"<|python_start|>[f(text={_big(n)!r})]<|python_end|>",
        "mistral": lambda: _prose(half) + f"[TOOL_CALLS]f[ARGS]{arg}",
        "deepseek_v3": lambda: _prose(half) + _ds("tool_calls_begin") + _ds("tool_call_begin") + "function"
        + _ds("tool_sep") + f"f\n```json\n{arg}\n```" + _ds("tool_call_end") + _ds("tool_calls_end"),
        "kimi_k2": lambda: _prose(half) + "<|tool_calls_section_begin|><|tool_call_begin|>functions.f:0"
        "<|tool_call_argument_begin|>" + arg + "<|tool_call_end|><|tool_calls_section_end|>",
        "glm45": lambda: _prose(half) + f"<tool_call>f\n<arg_key>text</arg_key>\n<arg_value>{_big(half)}</arg_value>\n</tool_call>",
        "openai": lambda: f"<|channel|>analysis<|message|>{_big(half)}<|end|><|start|>assistant<|channel|>final"
        f"<|message|>{_prose(half)}<|return|>",
    }
    samples["deepseek_v31"] = samples["deepseek_v3"]
    return samples.get(name, samples["hermes"])()


def reasoning_sample(name: str, n: int) -> str:
    half = n // 2
    if name == "mistral":
        return f"[THINK]{_big(half)}[/THINK]{_prose(half)}"
    if name == "granite":
        return f"Here is my thought process:{_big(half)}Here is my response:{_prose(half)}"
    if name == "seed_oss":
        return f"<seed:think>{_big(half)}</seed:think>{_prose(half)}"
    if name == "openai_gptoss":
        return tool_sample("openai", n)
    return f"<think>{_big(half)}</think>{_prose(half)}"


def _time(fn: Callable[[], object], repeat: int = 3) -> float:
    best = float("inf")
    if repeat > 1:
        fn()  # warm-up: the allocator maps its large blocks once, not inside the timed runs
    for _ in range(repeat):
        gc.collect()
        gc.disable()
        try:
            t0 = time.perf_counter()
            fn()
            best = min(best, time.perf_counter() - t0)
        finally:
            gc.enable()
    return best


def _whole(make, text):
    return lambda: make().parse(text)


def _pieces(make, text):
    def run():
        parser = make()
        feed = parser.feed
        for i in range(0, len(text), PIECE):
            feed(text[i : i + PIECE])
        parser.finish()

    return run


def _floor(text):
    def run():
        for i in range(0, len(text), PIECE):
            text[i : i + PIECE]
        text.find("<tool_call>")

    return run


def bench(label: str, make, sample, mb: float) -> list:
    small, large = sample(int(mb * MB)), sample(int(4 * mb * MB))
    size_s, size_l = len(small.encode()) / MB, len(large.encode()) / MB
    w1, p1 = _time(_whole(make, small), 5), _time(_pieces(make, small))
    w4, p4 = _time(_whole(make, large), 5), _time(_pieces(make, large), 1)
    floor = _time(_floor(small))
    row = [label, f"{size_s / w1:.1f}", f"{size_s / p1:.1f}", f"{size_l / w4:.1f}", f"{size_l / p4:.1f}",
           f"{w4 / w1 * size_s / size_l * 4:.2f}", f"{p4 / p1 * size_s / size_l * 4:.2f}", f"{p1 / floor:.1f}"]
    print(f"{row[0]:34s} " + " ".join(f"{c:>{w}s}" for c, w in zip(row[1:], (9, 9, 9, 9, 7, 7, 8), strict=True)))
    return row


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", nargs="*", default=None, help="parser names to run (default: all)")
    ap.add_argument("--mb", type=float, default=1.0, help="size of the small output in MB (default 1)")
    args = ap.parse_args(argv)
    print(f"sizes {args.mb:g} MB and {4 * args.mb:g} MB; pieces of {PIECE} bytes; whole: best of 5; streamed: best of 3 (4 MB: 1 run)")
    print(f"{'parser':34s} {'MB/s 1MB':>9s} {'8B 1MB':>9s} {'MB/s 4MB':>9s} {'8B 4MB':>9s}"
          f" {'4/1 w':>7s} {'4/1 8B':>7s} {'x floor':>8s}")
    rows = []
    for name in tool_parser_names():
        if name in ALIASES or (args.only and name not in args.only):
            continue
        rows += [bench(f"tool:{name}", lambda n=name: get_tool_parser(n), lambda size, n=name: tool_sample(n, size), args.mb)]
    for name in reasoning_parser_names():
        if name in ALIASES or (args.only and name not in args.only):
            continue
        rows += [bench(f"reasoning:{name}", lambda n=name: get_reasoning_parser(n),
                       lambda size, n=name: reasoning_sample(n, size), args.mb)]
    print("4/1 columns: time(4 MB)/time(1 MB), normalized to exactly 4x the bytes; 4.0 = linear.")
    big = 4 * args.mb
    write_result(
        "parsers", "Parser throughput",
        summary=(f"Every registered tool and reasoning parser on a format-typical output of {args.mb:g} MB and {big:g} MB, "
                 "whole and fed in 8-byte pieces (whole: best of 5; pieces: best of 3, the larger size once). The "
                 "floor is cutting the same text into 8-byte pieces and one `str.find`; no budget is asserted "
                 "(a 1 MB output parses in well under a second)."),
        tables=[table("MB/s, the time ratio of the two sizes normalised to 4x the bytes (4.00 = linear), and the "
                      "streamed time over the floor",
                      ["parser", f"MB/s {args.mb:g} MB", f"8 B pieces {args.mb:g} MB", f"MB/s {big:g} MB",
                       f"8 B pieces {big:g} MB", "4/1 whole", "4/1 pieces", "x floor"], rows)],
        data={"rows": rows},
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
