"""SIGTERM and SIGHUP end a command the way Ctrl-C does.

Without a handler either signal kills Python at once: no ``finally`` block runs, so a managed llama.cpp
server started by the command would be left behind. While a command runs they raise
:class:`Terminated` (a ``KeyboardInterrupt``) in the main thread instead, so the same clean-up as for
Ctrl-C runs, and the command exits with ``128 + signal number`` (143 for SIGTERM, 129 for SIGHUP).
"""

from __future__ import annotations

import contextlib
import signal
import threading
from typing import Any, Dict, Iterator

__all__ = ["Terminated", "exit_code", "signals_as_interrupts"]

_HANDLED = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name))


class Terminated(KeyboardInterrupt):
    """The command was asked to stop by a signal other than SIGINT; ``signum`` says which."""

    def __init__(self, signum: int) -> None:
        self.signum = signum
        super().__init__(signal.Signals(signum).name)


def _raise(signum: int, _frame: Any) -> None:
    raise Terminated(signum)


@contextlib.contextmanager
def signals_as_interrupts() -> Iterator[None]:
    """Inside the block, SIGTERM and SIGHUP raise :class:`Terminated` (main thread only; elsewhere a no-op)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous: Dict[int, Any] = {}
    for signum in _HANDLED:
        previous[signum] = signal.signal(signum, _raise)
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def exit_code(exc: KeyboardInterrupt) -> int:
    """130 for Ctrl-C, ``128 + signum`` for a :class:`Terminated`."""
    return 128 + exc.signum if isinstance(exc, Terminated) else 128 + int(signal.SIGINT)
