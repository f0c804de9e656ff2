"""``jarvis agents``: the installed agents (key, what it does, the isolation its code runs in for agents that run
code, where it comes from); ``--json`` for scripts."""

from __future__ import annotations

import argparse
from typing import Any

__all__ = ["add_parser", "run"]

SUMMARY = "list the installed agents (table; --json)"


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``agents`` to the ``jarvis`` parser."""
    from jarvis_core.cli.listing import add_listing_parser

    return add_listing_parser(subparsers, "agents", SUMMARY,
                              "List the agents plugins registered: use one with 'jarvis ask --agent NAME'.")


def run(args: argparse.Namespace) -> int:
    """Print the agents."""
    from jarvis_core.cli.listing import run_listing

    return run_listing(args, "agent", ("key", "description", "isolation", "distribution", "version"),
                       "pip install jarvis-agents")
