"""The child side of ``process`` isolation: read a pickled (tool, arguments), run it, write the outcome.

Run as ``python -m jarvis_core.tools._child``. The parent started it in a new session, so on timeout it
kills the whole process group (this process and anything the tool started).
"""

from __future__ import annotations

import asyncio
import os
import pickle
import sys
from typing import Any, Tuple


def _run(tool: Any, arguments: dict[str, Any]) -> Tuple[str, str, str]:
    from jarvis_core.tools.base import has_sync_run
    from jarvis_core.tools.output import to_text

    try:
        if has_sync_run(tool):
            value = tool.run(**arguments)
        else:
            value = asyncio.run(tool.arun(**arguments))
        return "ok", "", to_text(value)
    except BaseException as exc:  # the child reports everything, SystemExit included
        return "error", type(exc).__name__, str(exc)


def main() -> None:
    """Entry point: the result is written to the original stdout; the tool's own prints go to stderr."""
    out = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    try:
        sys.path[:] = pickle.load(sys.stdin.buffer)  # the parent's path: what it can import, the child can
        tool, arguments = pickle.load(sys.stdin.buffer)
        outcome = _run(tool, arguments)
    except BaseException as exc:
        outcome = ("error", type(exc).__name__, f"the tool could not be loaded in the child process: {exc}")
    pickle.dump(outcome, out)
    out.flush()


if __name__ == "__main__":
    main()
