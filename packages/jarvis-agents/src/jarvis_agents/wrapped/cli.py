"""``jarvis wrappers``: check and set up the wrapped agent runtimes (``claude_code``, ``openhands``).

::

    jarvis wrappers check [NAME ...] [--python PATH] [--runtime docker|local] [--json | --indent N]
    jarvis wrappers setup NAME [--python PATH] [--dry-run]

``check`` lists what each runtime needs (a command, a Python package, a key), whether it is there, and how
to get it; it exits 1 when something is missing. ``setup`` runs the one install command (``npm install -g
@anthropic-ai/claude-code``; ``python -m pip install openhands-sdk …``) in the foreground, printing it first.
Agents never install anything while they run.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from typing import Any, Dict, List

from jarvis_core.commands import add_json_options

__all__ = ["add_parser", "run"]

_NAMES = ("claude_code", "openhands")


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``wrappers`` (``check``, ``setup``) to the ``jarvis`` parser."""
    p: argparse.ArgumentParser = subparsers.add_parser(
        "wrappers", help="check and set up the wrapped agent runtimes (claude_code, openhands)",
        description="The agents claude_code and openhands run external programs. 'check' says what they need and "
        "what is missing; 'setup' installs a runtime (agents never install anything while they run).")
    actions = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    c = actions.add_parser("check", help="list what each runtime needs and what is missing (exit 1 if anything is)")
    c.add_argument("names", nargs="*", metavar="NAME", help="claude_code, openhands (default both)")
    c.add_argument("--python", metavar="PATH", help="openhands: the interpreter with the OpenHands packages")
    c.add_argument("--runtime", choices=("docker", "local"), default="docker", help="openhands: where its tools run")
    add_json_options(c)
    s = actions.add_parser("setup", help="install a runtime (prints the command, then runs it)")
    s.add_argument("name", choices=_NAMES, metavar="NAME", help="claude_code or openhands")
    s.add_argument("--python", metavar="PATH", help="openhands: install into this interpreter (3.12+)")
    s.add_argument("--dry-run", action="store_true", help="print the command without running it")
    return p


def run(args: argparse.Namespace) -> int:
    """Run ``jarvis wrappers ACTION``."""
    from jarvis_agents.wrapped import checks
    from jarvis_core.commands import write_result
    from jarvis_core.errors import UsageError

    if args.action == "setup":
        argv = checks.setup_command(args.name, python=args.python)
        print("$ " + " ".join(argv), file=sys.stderr)
        if args.dry_run:
            return 0
        return subprocess.call(argv)
    unknown = [name for name in args.names if name not in _NAMES]
    if unknown:
        raise UsageError(f"no wrapped runtime {unknown[0]!r}; choose from {', '.join(_NAMES)}", argument="NAME")
    found = checks.checks(list(args.names) or None, python=args.python, runtime=args.runtime)
    doc = [{"agent": c.agent, "need": c.need, "ok": c.ok, "detail": c.detail, "how": c.how} for c in found]
    write_result(doc, args, _render_checks)
    return 0 if all(c.ok for c in found) else 1


def _render_checks(doc: List[Dict[str, Any]]) -> str:
    from jarvis_core.commands import format_table

    rows = [[c["agent"], c["need"], "ok" if c["ok"] else "MISSING", c["detail"] if c["ok"] else f"{c['detail']}; {c['how']}"]
            for c in doc]
    return format_table(["AGENT", "NEEDS", "STATUS", "DETAIL / HOW TO GET IT"], rows)
