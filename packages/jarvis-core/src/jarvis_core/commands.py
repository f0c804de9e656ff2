"""What a ``jarvis`` subcommand contributed by a plugin (``jarvis_register_commands``) is, and the toolkit it
is written with: the same helpers the built-in commands use, so a plugin's command looks and behaves like
them. The command modules under ``jarvis_core.cli`` are private; this module is their public face.

- :class:`CommandModule`: the contract (``add_parser(subparsers)`` and ``run(args) -> int``).
- Tables for people, JSON for scripts: :func:`add_json_options` (``--json``, ``--indent N``),
  :func:`write_result` (the document as JSON when asked, else rendered), :func:`wants_json`,
  :func:`write_json`, :func:`format_table` and :func:`cell`.
- Talking on stderr: :func:`announce` (a choice made for the user) and :func:`one_line`.
- Arguments: :func:`finite_float` and :func:`positive_int` (argparse types), :func:`parse_tools`
  (``--tools a,b``).
- Agent runs: :func:`show_agent_event` (a tool call, its result, a notice, how a run ended, on stderr).

The registered target is usually a module; any object with the two callables will do. The core imports it
only when its command runs (or when ``jarvis --help`` lists every command's options). This module imports
only the standard library, so a command that uses it stays as cheap to start as ``jarvis plugins``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from typing import Any, Callable, List, Optional, Protocol, Sequence, TextIO, runtime_checkable

__all__ = [
    "CommandModule",
    "add_json_options",
    "announce",
    "cell",
    "finite_float",
    "format_table",
    "one_line",
    "parse_tools",
    "positive_int",
    "show_agent_event",
    "wants_json",
    "write_json",
    "write_result",
]

PROG = "jarvis"


@runtime_checkable
class CommandModule(Protocol):
    """A ``jarvis`` subcommand: ``jarvis <name> …``.

    ``add_parser(subparsers)`` adds the command's parser with ``subparsers.add_parser(name, help=...)`` and
    its arguments, and returns it. ``run(args)`` runs the command with the parsed arguments and returns the
    exit status (0 success, 1 failure, 2 usage error); raise a :class:`jarvis_core.errors.JarvisError` with a
    message that says what to do, and the CLI prints it as one ``jarvis: error:`` line.
    """

    def add_parser(self, subparsers: Any) -> argparse.ArgumentParser: ...

    def run(self, args: argparse.Namespace) -> int: ...


# -- tables and JSON ------------------------------------------------------------------------------
def add_json_options(parser: argparse.ArgumentParser) -> None:
    """``--json`` (the whole document instead of the table) and ``--indent N`` (its indentation; implies
    ``--json``, so scripts written for the JSON-only commands keep working)."""
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument("--indent", type=int, default=None, metavar="N",
                        help="JSON indentation (default 2; 0: one line); implies --json")


def wants_json(args: argparse.Namespace) -> bool:
    """Whether the command was asked for JSON (``--json`` or ``--indent``)."""
    return bool(getattr(args, "json", False)) or getattr(args, "indent", None) is not None


def write_json(doc: Any, args: argparse.Namespace) -> None:
    """Print ``doc`` as JSON on stdout, indented as ``--indent`` says (default 2; 0 or less: one line)."""
    indent = getattr(args, "indent", None)
    indent = 2 if indent is None else (indent if indent > 0 else None)
    sys.stdout.write(json.dumps(doc, indent=indent, default=repr, ensure_ascii=False) + "\n")


def write_result(doc: Any, args: argparse.Namespace, render: Callable[[Any], str]) -> None:
    """Print a command's result on stdout: ``doc`` as JSON when ``--json``/``--indent`` asked for it, else
    ``render(doc)`` (the table or summary for people)."""
    if wants_json(args):
        write_json(doc, args)
    else:
        sys.stdout.write(render(doc) + "\n")


def format_table(headers: Optional[Sequence[str]], rows: Sequence[Sequence[Any]]) -> str:
    """Left-aligned columns, a header line (none when ``headers`` is ``None``: label/value lines), two spaces
    between columns; the last column is not padded."""
    every = [headers, *rows] if headers is not None else list(rows)
    if not every:
        return ""
    widths = [max(len(str(r[i])) for r in every) for i in range(len(every[0]))]
    lines = []
    for row in every:
        cells = [str(c).ljust(w) for c, w in zip(row[:-1], widths[:-1], strict=True)] + [str(row[-1])]
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines)


def cell(value: Any) -> str:
    """A table cell: ``-`` for nothing, ``yes``/``no`` for booleans, lists joined with commas, text on one line."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (list, tuple)):
        return ",".join(map(str, value)) or "-"
    return one_line(str(value))


# -- stderr ---------------------------------------------------------------------------------------
def one_line(text: str) -> str:
    """Collapse a (possibly multi-line) message into one line."""
    parts = [p.strip() for p in str(text).splitlines() if p.strip()]
    return "; ".join(parts)


def announce(message: str, *, file: Optional[TextIO] = None) -> None:
    """Tell the user about a choice made for them (which engine, which model), on stderr."""
    out = file if file is not None else sys.stderr
    print(f"{PROG}: {one_line(message)}", file=out)
    out.flush()


# -- arguments ------------------------------------------------------------------------------------
def finite_float(text: str) -> float:
    """A number >= 0 that is not NaN nor infinite (``--temperature``)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"expected a finite number >= 0, got {text!r}")
    return value


def positive_int(text: str) -> int:
    """A whole number >= 1 (``--max-tokens``)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {text!r}")
    return value


def tools_file(value: Optional[str]) -> Optional[str]:
    """The path when ``--tools`` names a JSON file of tool schemas (an existing file, or a name ending in
    ``.json``), else None (registered tool keys)."""
    if not value:
        return None
    path = value.strip()
    return path if path.lower().endswith(".json") or os.path.isfile(path) else None


def parse_tools(value: Optional[str]) -> List[str]:
    """``--tools "a, b"`` → ``["a", "b"]``; ``[]`` when ``value`` is a tool-schema file (``jarvis ask
    --prompt-provider`` reads those)."""
    if tools_file(value):
        return []
    return [t.strip() for t in (value or "").split(",") if t.strip()]


# -- agent runs -----------------------------------------------------------------------------------
def show_agent_event(event: Any, file: Optional[TextIO] = None) -> None:
    """One stderr line for an agent event worth showing: a tool call, its result, a notice, how the run ended
    (other events print nothing). Pass it as ``on_event`` to ``Jarvis.ask_stream`` or an agent's run."""
    from jarvis_core.agents.events import Notice, RunFinished, ToolCallFinished, ToolCallsRequested

    err = file or sys.stderr
    if isinstance(event, ToolCallsRequested):
        for call in event.calls:
            err.write(f"[tool] {call.name} {one_line(call.arguments)[:300]}\n")
    elif isinstance(event, ToolCallFinished):
        r = event.result
        status = "->" if r.ok else "failed:"
        err.write(f"[tool] {r.name} {status} {one_line(r.content)[:300]} ({r.duration_s:.2f}s)\n")
    elif isinstance(event, Notice):
        err.write(f"[{event.kind}] {one_line(event.message)}\n")
    elif isinstance(event, RunFinished) and event.result.stop_reason != "final":
        why = event.result.metadata.get("error") or ""
        err.write(f"[agent] stopped: {event.result.stop_reason}{': ' + one_line(str(why)) if why else ''}\n")
    else:
        return
    err.flush()
