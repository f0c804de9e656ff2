"""Starting a wrapped runtime's process: its environment and an async run with a timeout.

The child's environment is built, not inherited: the variables a CLI or Python needs to find its programs,
its home, its locale, a proxy or a private certificate authority (:data:`PASSED_THROUGH`), plus exactly the
one key the runtime uses. Nothing else of the parent's environment (other providers' keys, ``JARVIS_*``)
reaches it, and no key is ever on the command line, where ``ps`` shows it to every user.

:func:`run_child` runs the process with :func:`jarvis_agents.sandbox.process.run_process` (own session,
capped output, the whole process group killed at the timeout) in a worker thread; a cancelled run kills
the group at once instead of waiting for the timeout.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from typing import Dict, List, Mapping, Optional, Sequence

from jarvis_agents.sandbox.process import ProcessOutcome, kill_group, leader_exited, run_process
from jarvis_agents.wrapped.errors import WrappedRunError

__all__ = ["PASSED_THROUGH", "child_environment", "run_child"]

#: The parent's variables a wrapped runtime may see (when set). None of them is a model provider's key.
PASSED_THROUGH = (
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "TMPDIR", "TZ", "LANG", "LC_ALL", "LC_CTYPE",
    "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME", "XDG_RUNTIME_DIR",
    "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "no_proxy", "all_proxy",
    "SSL_CERT_FILE", "SSL_CERT_DIR", "NODE_EXTRA_CA_CERTS", "REQUESTS_CA_BUNDLE",
    "DOCKER_HOST", "DOCKER_CONTEXT", "DOCKER_CONFIG",
)
_POLL_S = 0.05


def child_environment(
    environ: Mapping[str, str], secrets: Mapping[str, str], extra: Optional[Mapping[str, str]] = None
) -> Dict[str, str]:
    """The whole environment of a wrapped runtime: :data:`PASSED_THROUGH` from ``environ``, then ``extra``
    (fixed settings such as ``NO_COLOR``), then ``secrets`` (the key, under the name the runtime reads)."""
    env = {name: environ[name] for name in PASSED_THROUGH if name in environ}
    env.setdefault("PATH", os.defpath)
    env["NO_COLOR"] = "1"
    env.update(extra or {})
    env.update(secrets)
    return env


async def run_child(
    argv: Sequence[str],
    *,
    agent: str,
    stdin_data: bytes,
    env: Mapping[str, str],
    cwd: Optional[str],
    timeout_s: float,
    max_output_bytes: int,
    term_grace_s: float = 0.0,
) -> ProcessOutcome:
    """Run ``argv`` to its end (or its timeout) without blocking the event loop.

    ``term_grace_s`` > 0: at the timeout the child first gets ``SIGTERM`` and that long to clean up (stop a
    container it started) before the group is killed. Cancelling the awaiting task kills the group.

    :raises WrappedRunError: the program could not be started at all.
    """
    started: List[int] = []

    def on_timeout() -> None:
        if not started or term_grace_s <= 0:
            return
        try:
            os.kill(started[0], signal.SIGTERM)
        except ProcessLookupError:
            return
        end = time.monotonic() + term_grace_s
        while time.monotonic() < end and not leader_exited(started[0]):
            time.sleep(_POLL_S)

    def target() -> ProcessOutcome:
        return run_process(argv, stdin_data=stdin_data, env=env, cwd=cwd, timeout_s=timeout_s,
                           max_output_bytes=max_output_bytes, on_timeout=on_timeout, on_start=started.append)

    task = asyncio.ensure_future(asyncio.to_thread(target))
    try:
        return await asyncio.shield(task)
    except asyncio.CancelledError:
        # The leader is not reaped before run_process has killed the group itself, so while it has not
        # exited its pid is still this group's and cannot belong to anyone else.
        if started and not leader_exited(started[0]):
            kill_group(started[0])
        await asyncio.gather(task, return_exceptions=True)
        raise
    except OSError as exc:
        raise WrappedRunError(f"{agent}: could not start {argv[0]!r}: {exc.strerror or exc}", agent=agent) from None
