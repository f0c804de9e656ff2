"""What ``jarvis agents`` and ``jarvis tools`` print: the registrations of one kind, as a table or as JSON
(with the toolkit every command shares, :mod:`jarvis_core.commands`).

Only the standard library is imported here, and only the registry is read (no agent or tool module is
imported), so a listing stays as cheap as ``jarvis plugins``, except for what a plugin can know only by
asking (an MCP server's tools): the listing runs the kind's discovery (:meth:`Registry.discover`) first.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, Callable, Dict, List, Optional, Sequence

from jarvis_core.commands import add_json_options, cell, format_table, wants_json, write_json

__all__ = ["add_listing_parser", "collect", "run_listing"]


def add_listing_parser(subparsers: Any, name: str, summary: str, description: str) -> argparse.ArgumentParser:
    """The parser of a listing command (``--json``, ``--indent``)."""
    p: argparse.ArgumentParser = subparsers.add_parser(name, help=summary, description=description)
    add_json_options(p)
    return p


def collect(registry: Any, kind: str) -> List[Dict[str, Any]]:
    """Every registration of ``kind``, sorted by key: key, description, distribution, version, plugin, target
    and the extra fields the plugin registered. An extra registered as a callable (say ``isolation``, which
    needs a look at the machine) is called now, so registering it stays cheap."""
    rows = []
    for key, reg in sorted(registry.items(kind).items()):
        info = {k: v() if callable(v) else v for k, v in reg.to_json().items()}
        info["key"] = key  # an alias is listed under its own name
        rows.append({**info, "distribution": reg.distribution, "version": reg.version, "plugin": reg.plugin})
    return rows



def run_listing(args: argparse.Namespace, kind: str, columns: Sequence[str], empty_hint: str,
                complete: Optional[Callable[[Dict[str, Any], Any], None]] = None) -> int:
    """Print the ``kind`` registrations: a table of ``columns`` (keys of :func:`collect`'s rows), or JSON.
    ``complete(row, registration)`` fills in what the registry alone does not say."""
    from jarvis_core.plugins import get_registry

    registry = get_registry()
    registry.discover(kind)
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

