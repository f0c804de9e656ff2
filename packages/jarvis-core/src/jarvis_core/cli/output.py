"""How the ``jarvis`` command talks to the user on stderr: one line per error, warning or announcement.

Errors are printed as ``jarvis: error: <what happened and what to do>``; the traceback appears only with
``--debug`` (or ``JARVIS_DEBUG=1``). Warnings (a plugin that failed to load, a deprecated config key) are
printed as ``jarvis: warning: <message>`` instead of Python's two-line ``file:line: Category`` format.

This module imports nothing beyond the standard library: every command, ``jarvis plugins`` included, uses it.
"""

from __future__ import annotations

import sys
from typing import Any, Optional, TextIO

from jarvis_core.commands import PROG, announce, one_line

__all__ = ["announce", "one_line", "print_error", "show_retries", "show_warning"]



def _stderr(file: Optional[TextIO]) -> TextIO:
    return file if file is not None else sys.stderr



def print_error(exc: BaseException, *, debug: bool = False, file: Optional[TextIO] = None) -> None:
    """Print ``exc`` as one line; with ``debug`` print the traceback first.

    jarvis's own errors (:class:`~jarvis_core.errors.JarvisError`) carry a message that says what to do.
    Anything else is a bug, and the line says so.
    """
    out = _stderr(file)
    if debug:
        import traceback

        traceback.print_exception(type(exc), exc, exc.__traceback__, file=out)
    from jarvis_core.errors import JarvisError  # stdlib-only module; cheap

    message = one_line(str(exc)) or type(exc).__name__
    if isinstance(exc, JarvisError):
        line = f"{PROG}: error: {message}"
    elif isinstance(exc, OSError):
        line = f"{PROG}: error: {type(exc).__name__}: {message}"
    else:
        hint = "" if debug else "; rerun with --debug for the traceback"
        blamed = _plugin_failure(exc)
        if blamed is not None:
            line = f"{PROG}: error: {one_line(str(blamed))}{hint}"
        else:
            line = f"{PROG}: error: unexpected {type(exc).__name__}: {message} (a bug in jarvis or a plugin{hint})"
    print(line, file=out)
    out.flush()


def _plugin_failure(exc: BaseException) -> Any:
    """``exc`` as the error of the plugin whose code raised it, when one did (see :mod:`jarvis_core.plugins.blame`).
    No plugin code has run unless the registry was built, so a command that never built it does not here."""
    if "jarvis_core.plugins.registry" not in sys.modules:
        return None
    from jarvis_core.plugins.blame import part_failure
    from jarvis_core.plugins.registry import get_registry

    try:
        return part_failure(exc, get_registry())
    except Exception:  # reporting one failure must not raise another
        return None


def show_warning(
    message: Any,
    category: type,
    filename: str,
    lineno: int,
    file: Optional[TextIO] = None,
    line: Optional[str] = None,
) -> None:
    """A ``warnings.showwarning`` replacement that prints one line per warning."""
    out = _stderr(file)
    try:
        print(f"{PROG}: warning: {one_line(str(message))}", file=out)
        out.flush()
    except (OSError, ValueError):  # stderr closed: nothing sensible left to do
        pass


def show_retries(file: Optional[TextIO] = None) -> None:
    """``-v``: each retry (logger ``jarvis_core.retry``) as one ``jarvis: …`` line on stderr."""
    import logging

    logger = logging.getLogger("jarvis_core.retry")
    if any(getattr(h, "jarvis_retries", False) for h in logger.handlers):
        return

    class _Handler(logging.Handler):
        jarvis_retries = True

        def emit(self, record: logging.LogRecord) -> None:
            announce(record.getMessage(), file=file)

    logger.addHandler(_Handler(logging.INFO))
    logger.setLevel(logging.INFO)
