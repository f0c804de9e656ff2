"""``jarvis tools``: the installed tools (key, side effects, whether a call needs confirmation, whether it
reaches the open world, the isolation of those that run code, what it does, where it comes from); ``--json``
for scripts.

Side effects, confirmation and open world come from each tool's :class:`~jarvis_core.tools.ToolPolicy`, so this command
imports the tools' modules (not their dependencies' heavy parts, which tools load when they run)."""

from __future__ import annotations

import argparse
import warnings
from typing import Any, Dict

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

    return run_listing(args, "tool", ("key", "side_effects", "confirm", "open_world", "isolation", "description",
                                      "distribution"),
                       "pip install jarvis-agents", complete=with_policy)


def with_policy(row: Dict[str, Any], reg: Any) -> None:
    """Set the row's ``side_effects``, ``confirm`` and ``open_world`` from the tool's :class:`~jarvis_core.tools.ToolPolicy`
    (its ``policy`` attribute; one source of truth). ``register(..., side_effects=, confirm=)`` extras are
    deprecated (a warning names the plugin) and used only by a target with no policy until it is built; a
    target that does not load shows ``?`` and one warning naming its plugin."""
    from jarvis_core.errors import JarvisDeprecationWarning, PluginError
    from jarvis_core.tools.policy import ToolPolicy

    stated = [name for name in ("side_effects", "confirm") if name in reg.extra]
    if stated:
        warnings.warn(
            f"{reg.describe()} states {' and '.join(stated)} as register() extras, which are deprecated since "
            "jarvis-core 0.2.0 and ignored from 1.0.0; give the tool class (or instance) a policy = "
            "jarvis_core.tools.ToolPolicy(...) instead", JarvisDeprecationWarning, stacklevel=2)
    try:
        policy = getattr(reg.load(), "policy", None)
    except PluginError as exc:
        warnings.warn(str(exc), UserWarning, stacklevel=2)
        row["side_effects"] = row["confirm"] = row["open_world"] = "?"
        return
    if isinstance(policy, ToolPolicy):
        row["side_effects"], row["confirm"], row["open_world"] = policy.side_effects, policy.confirm, policy.open_world
    else:
        row["open_world"] = None
        if not stated:
            row["side_effects"] = row["confirm"] = None
