#!/usr/bin/env python
"""Regenerate jarvis-core's built-in family rules from LocalAI's tables.

    python scripts/gen_backend_defaults.py            # write the data file
    python scripts/gen_backend_defaults.py --check    # exit 1 if the data file is stale

Inputs default to the copies in packages/jarvis-core/tests/data/ (the tests check the shipped file against
them); pass --parser/--inference to use newer LocalAI tables.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORE = ROOT / "packages" / "jarvis-core"
DATA = CORE / "tests" / "data"
OUTPUT = CORE / "src" / "jarvis_core" / "defaults" / "_generated_families.json"


def _load_builder():
    try:
        from jarvis_core.defaults.generate import build_rules
    except ImportError:  # run from a checkout without jarvis-core installed
        sys.path.insert(0, str(CORE / "src"))
        from jarvis_core.defaults.generate import build_rules
    return build_rules


def render(parser_path: Path, inference_path: Path) -> str:
    """The exact text of the data file for these inputs."""
    build_rules = _load_builder()
    doc = build_rules(json.loads(parser_path.read_text("utf-8")), json.loads(inference_path.read_text("utf-8")))
    return json.dumps(doc, indent=1, ensure_ascii=False) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--parser", type=Path, default=DATA / "localai_parser_defaults.json")
    ap.add_argument("--inference", type=Path, default=DATA / "localai_inference_defaults.json")
    ap.add_argument("--output", type=Path, default=OUTPUT)
    ap.add_argument("--check", action="store_true", help="do not write; exit 1 if the output is stale")
    args = ap.parse_args(argv)
    try:
        text = render(args.parser, args.inference)
    except (OSError, ValueError) as exc:
        print(f"gen_backend_defaults: {exc}", file=sys.stderr)
        return 2
    current = args.output.read_text("utf-8") if args.output.exists() else None
    if args.check:
        if current != text:
            print(f"{args.output} is stale: run python scripts/gen_backend_defaults.py", file=sys.stderr)
            return 1
        print(f"{args.output} is up to date")
        return 0
    args.output.write_text(text, "utf-8")
    print(f"wrote {args.output} ({text.count(chr(10))} lines)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
