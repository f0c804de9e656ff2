"""Unexpected exceptions: what leaves the process of them.

A jarvis error's message is written to be shown (engines mask their keys before raising one). Any other
exception's text may quote anything: a connection string, a header, a key. So of an unexpected exception
only its type and where it was raised are shown and logged: in HTTP errors, SSE error events, stored runs
and log records at every level (the traceback at DEBUG lists frames only, never an exception's message).
"""

from __future__ import annotations

import logging
import traceback
from typing import Any, Optional

__all__ = ["agent_failure", "log_withheld", "withheld_message"]

log = logging.getLogger("jarvis_server")


def withheld_message(exc: BaseException) -> str:
    """What a client (or a stored run) is told of an unexpected exception: its type, never its text."""
    return f"internal server error ({type(exc).__name__}); see the server log"


def _where(exc: BaseException) -> str:
    frames = traceback.extract_tb(exc.__traceback__)
    if not frames:
        return "an unknown place"
    last = frames[-1]
    return f"{last.filename}:{last.lineno} in {last.name}"


def log_withheld(exc: BaseException, doing: str) -> None:
    """Log an unexpected exception raised while ``doing`` something: type and place at ERROR, the frames
    (file, line, function, source line) at DEBUG; the exception's message and its chain's never."""
    name = type(exc).__name__
    log.error("unexpected %s while %s, raised at %s (its message is not logged: it may hold secrets)",
              name, doing, _where(exc))
    if log.isEnabledFor(logging.DEBUG):
        log.debug("frames of that %s:\n%s", name, "".join(traceback.format_tb(exc.__traceback__)).rstrip())


def agent_failure(key: str, exc: Exception, registry: Optional[Any] = None) -> Exception:
    """What agent ``key``'s run raised, as the client and the log should see it: jarvis' own errors as they
    are; anything else as a :class:`~jarvis_core.errors.PluginError` naming the agent key, its plugin and
    distribution, and the part that raised it when that is another (an engine, a tool, a prompt provider; see
    :mod:`jarvis_core.plugins.blame`), with the exception's type, never its text; logged the same way with the
    place it was raised."""
    from jarvis_core.errors import JarvisError

    if isinstance(exc, JarvisError) or not key:
        return exc
    if registry is None:
        from jarvis_core.plugins.registry import get_registry

        registry = get_registry()
    reg = registry.items("agent").get(key)
    if reg is None:
        return exc
    from jarvis_core.plugins.blame import blamed_part, run_failure

    source = blamed_part(reg, exc, registry)
    log_withheld(exc, f"running {reg.describe()}" + (f" in {source.describe()}" if source is not None else ""))
    return run_failure(reg, exc, source, shown=f" ({type(exc).__name__}; see the server log)")
