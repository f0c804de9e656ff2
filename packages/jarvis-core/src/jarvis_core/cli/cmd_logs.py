"""``jarvis logs``: list, show and search the conversation log that ``jarvis ask`` and ``jarvis chat`` keep.

::

    jarvis logs                  # the latest answers (-n N; -n 0: all), newest first
    jarvis logs -c               # the latest conversation, oldest first (--cid ID: a given one)
    jarvis logs search paris     # full-text search of prompts and answers (also -q TEXT)
    jarvis logs show 12          # one answer in full: system prompt, reasoning, tool calls and results
    jarvis logs path             # where the log is

``--json`` prints the raw records (a list; ``show``: one object). Reading never creates the log.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, List

__all__ = ["add_parser", "run"]

_ACTIONS = ("list", "show", "search", "path")


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``logs`` to the ``jarvis`` parser."""
    p: argparse.ArgumentParser = subparsers.add_parser(
        "logs",
        help="list, show and search the conversation log (--json)",
        description="List, show and search the answers jarvis ask and jarvis chat logged. Actions: list "
        "(default), show ID, search TEXT, path.",
    )
    p.add_argument("action", nargs="?", default="list", choices=_ACTIONS, help="what to do (default: list)")
    p.add_argument("arg", nargs="*", metavar="ID|TEXT", help="the answer's id (show) or the words to find (search)")
    p.add_argument("-n", "--count", type=_count, default=3, metavar="N", help="how many answers (default 3; 0: all)")
    p.add_argument("-q", "--query", metavar="TEXT", help="only answers whose prompt or answer has every word")
    p.add_argument("-c", "--current", action="store_true", help="the latest conversation, oldest first")
    p.add_argument("--cid", metavar="ID", help="one conversation (id or unique prefix), oldest first")
    p.add_argument("--json", action="store_true", help="print the raw records as JSON")
    return p


def _count(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError("must be 0 (all) or more")
    return value


def run(args: argparse.Namespace) -> int:
    """List, show or search the log."""
    import json

    from jarvis_core.config import load_config
    from jarvis_core.convlog import ConversationLog, log_path
    from jarvis_core.errors import UsageError

    path = log_path(load_config())
    if args.action == "path":
        sys.stdout.write(f"{path}\n")
        return 0
    with ConversationLog(path) as log:
        if args.action == "show":
            if len(args.arg) != 1 or not args.arg[0].isdigit():
                raise UsageError("say which answer: jarvis logs show ID (the number 'jarvis logs' prints)",
                                 argument="ID")
            record = log.get(int(args.arg[0]))
            sys.stdout.write(json.dumps(record.to_dict(), ensure_ascii=False, indent=2) + "\n" if args.json
                             else _full(record))
            return 0
        query = " ".join(args.arg) if args.action == "search" else args.query
        if args.action == "search" and not query:
            raise UsageError("say what to look for: jarvis logs search WORDS", argument="TEXT")
        if args.arg and args.action == "list":
            raise UsageError(f"'jarvis logs list' takes no words (got {' '.join(args.arg)!r}); to search: "
                             "jarvis logs search WORDS", argument="ID|TEXT")
        cid = args.cid or (log.latest_conversation_id() if args.current else None)
        if args.current and cid is None:
            records: List[Any] = []
        else:
            records = log.responses(limit=args.count or None, conversation_id=cid, query=query)
        if cid:
            records.reverse()  # a conversation reads oldest first
    if args.json:
        sys.stdout.write(json.dumps([r.to_dict() for r in records], ensure_ascii=False, indent=2) + "\n")
    elif not records:
        sys.stderr.write(f"nothing logged{' matches' if query else ''} ({path})\n")
    else:
        sys.stdout.write("\n".join(_brief(r) for r in records))
    return 0


def _header(r: Any) -> str:
    from jarvis_core.cli.output import one_line

    where = "/".join(x for x in (r.engine, r.model) if x) or "?"
    parts = [f"#{r.id}", r.when, f"conversation {r.conversation_id}", where]
    if r.agent:
        parts.append(f"agent {r.agent}")
    if r.usage:
        parts.append(f"{r.usage['prompt_tokens']}+{r.usage['completion_tokens']} tokens")
    if r.duration_s is not None:
        parts.append(f"{r.duration_s:.2f}s")
    if r.tool_calls:
        parts.append(f"{len(r.tool_calls)} tool call(s)")
    return one_line("  ".join(parts))


def _brief(r: Any) -> str:
    from jarvis_core.cli.output import one_line

    answer = r.response if len(r.response) <= 500 else r.response[:500] + "…"
    return f"{_header(r)}\n> {one_line(r.prompt)[:300]}\n{answer.rstrip()}\n"


def _full(r: Any) -> str:
    lines = [_header(r)]
    if r.system:
        lines += ["", "## system", r.system]
    lines += ["", "## prompt", r.prompt]
    if r.reasoning:
        lines += ["", "## reasoning", r.reasoning]
    for call in r.tool_calls:
        lines += ["", f"## tool call {call.get('name')} ({call.get('id')})", str(call.get("arguments"))]
    for result in r.tool_results:
        status = "" if result.get("ok", True) else " (failed)"
        lines += ["", f"## tool result {result.get('name')}{status}", str(result.get("content"))]
    lines += ["", "## response", r.response]
    return "\n".join(lines).rstrip() + "\n"
