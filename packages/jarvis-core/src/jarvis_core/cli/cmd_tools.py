"""``jarvis tools``: the installed tools (key, side effects, whether a call needs confirmation, the isolation
of those that run code, what it does, where it comes from); ``--json`` for scripts."""

from __future__ import annotations

import argparse
from typing import Any

__all__ = ["add_parser", "run"]

SUMMARY = "list the installed tools (table; --json)"


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``tools`` to the ``jarvis`` parser."""
    from jarvis_core.cli.listing import add_listing_parser

    return add_listing_parser(subparsers, "tools", SUMMARY,
                              "List the tools plugins registered: hand them to an agent with "
                              "'jarvis ask --agent NAME --tools A,B'. Options go in [tools.<key>] of the config.")


def run(args: argparse.Namespace) -> int:
    """Print the tools."""
    from jarvis_core.cli.listing import run_listing

    return run_listing(args, "tool", ("key", "side_effects", "confirm", "isolation", "description", "distribution"),
                       "pip install jarvis-agents")
