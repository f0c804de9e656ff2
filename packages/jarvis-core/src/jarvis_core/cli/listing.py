"""Tables for people, JSON for scripts: the ``--json`` / ``--indent`` options and :func:`format_table` every
listing command shares, and what ``jarvis agents`` and ``jarvis tools`` print (the registrations of one kind).

Only the standard library is imported here, and only the registry is read (no agent or tool module is
imported), so a listing stays as cheap as ``jarvis plugins``.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, Callable, Dict, List, Optional, Sequence

from jarvis_core.cli.output import one_line

__all__ = ["add_json_options", "add_listing_parser", "cell", "collect", "format_table", "run_listing", "wants_json",
           "write_json"]


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


def add_listing_parser(subparsers: Any, name: str, summary: str, description: str) -> argparse.ArgumentParser:
    """The parser of a listing command (``--json``, ``--indent``)."""
    p: argparse.ArgumentParser = subparsers.add_parser(name, help=summary, description=description)
    add_json_options(p)
    return p


def collect(registry: Any, kind: str) -> List[Dict[str, Any]]:
    """Every registration of ``kind``, sorted by key: key, description, distribution, version, plugin, target
    and the extra fields the plugin registered."""
    rows = []
    for key, reg in sorted(registry.items(kind).items()):
        info = reg.to_json()
        info["key"] = key  # an alias is listed under its own name
        rows.append({**info, "distribution": reg.distribution, "version": reg.version, "plugin": reg.plugin})
    return rows


def format_table(headers: Optional[Sequence[str]], rows: Sequence[Sequence[str]]) -> str:
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


def run_listing(args: argparse.Namespace, kind: str, columns: Sequence[str], empty_hint: str,
                complete: Optional[Callable[[Dict[str, Any], Any], None]] = None) -> int:
    """Print the ``kind`` registrations: a table of ``columns`` (keys of :func:`collect`'s rows), or JSON.
    ``complete(row, registration)`` fills in what the registry alone does not say."""
    from jarvis_core.plugins import get_registry

    registry = get_registry()
    rows = collect(registry, kind)
    if complete is not None:
        for row in rows:
            complete(row, registry.get(kind, row["key"]))
    if wants_json(args):
        write_json(rows, args)
        return 0
    if not rows:
        sys.stdout.write(f"no {kind}s installed; {empty_hint}\n")
        return 0
    table = [[cell(r.get(c)) for c in columns] for r in rows]
    sys.stdout.write(format_table([c.upper().replace("_", " ") for c in columns], table) + "\n")
    return 0


def cell(value: Any) -> str:
    """A table cell: ``-`` for nothing, ``yes``/``no`` for booleans, lists joined with commas, text on one line."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (list, tuple)):
        return ",".join(map(str, value)) or "-"
    return one_line(str(value))
