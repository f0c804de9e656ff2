"""The contract of a ``jarvis`` subcommand contributed by a plugin (``jarvis_register_commands``).

The registered target is usually a module; any object with these two callables will do. The core imports
it only when its command runs (or when ``jarvis --help`` lists every command's options).
"""

from __future__ import annotations

import argparse
from typing import Any, Protocol, runtime_checkable

__all__ = ["CommandModule"]


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
