"""What ``jarvis agents`` and ``jarvis tools`` print: the registrations of one kind, as a table or JSON.

Only the registry is read (no agent or tool module is imported), so listing stays as cheap as ``jarvis
plugins``.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, Dict, List, Sequence

__all__ = ["add_listing_parser", "collect", "format_table", "run_listing"]


def add_listing_parser(subparsers: Any, name: str, summary: str, description: str) -> argparse.ArgumentParser:
    """The parser of a listing command (``--json``)."""
    p = subparsers.add_parser(name, help=summary, description=description)
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
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


def format_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Left-aligned columns, a header line, two spaces between columns; the last column is not padded."""
    widths = [max(len(str(r[i])) for r in [headers, *rows]) for i in range(len(headers))]
    lines = []
    for row in [headers, *rows]:
        cells = [str(c).ljust(w) for c, w in zip(row[:-1], widths[:-1], strict=True)] + [str(row[-1])]
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines)


def run_listing(args: argparse.Namespace, kind: str, columns: Sequence[str], empty_hint: str) -> int:
    """Print the ``kind`` registrations: a table of ``columns`` (keys of :func:`collect`'s rows), or JSON."""
    from jarvis_core.plugins import get_registry

    rows = collect(get_registry(), kind)
    if args.json:
        sys.stdout.write(json.dumps(rows, indent=2, default=repr) + "\n")
        return 0
    if not rows:
        sys.stdout.write(f"no {kind}s installed; {empty_hint}\n")
        return 0
    table = [[_cell(r.get(c)) for c in columns] for r in rows]
    sys.stdout.write(format_table([c.upper().replace("_", " ") for c in columns], table) + "\n")
    return 0


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (list, tuple)):
        return ",".join(map(str, value)) or "-"
    return str(value)
