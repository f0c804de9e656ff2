"""The jarvis sandbox image's entry point: read one JSON job from stdin, run it, print one JSON result.

Standard library only, so the image needs nothing but Python. The container itself is the isolation (no
network, read-only root, no capabilities, resource limits, an unprivileged user: see ``ContainerRunner``);
this script adds a wall-clock timeout with a process-group kill, a fresh working directory under ``/tmp``,
and capped output (the job writes to files on the size-limited ``/tmp``; only the first
``max_output_bytes`` of each are read back).

Job (version 1), one line of JSON::

    {"version": 1, "kind": "python" | "shell", "code": "...", "command": "...",
     "timeout_s": 30, "max_output_bytes": 100000, "secrets": {"NAME": "value"}}

An ``agent`` job (``{"kind": "agent", "agent": {...}, "input": "...", "context": {...}}``) runs a jarvis
agent and needs jarvis-core and jarvis-agents installed in the image; its exchange with the host is
described in ``jarvis_agents.sandbox.agent_worker``.

``secrets`` become environment variables of the job's process only; they arrive on stdin so they never
appear on a command line. The answer is one JSON object with the keys of ``SandboxResult`` (``ok``,
``exit_code``, ``stdout``, ``stderr``, ``truncated``, ``timed_out``, ``duration_s``, ``error``). A job
that cannot be read is answered with ``ok: false`` and exit status 2.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from typing import Any, Dict, List

PROTOCOL_VERSION = 1
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_PATH = "/usr/local/bin:/usr/bin:/bin"


class JobError(ValueError):
    """The job on stdin is not a valid version-1 job."""


def _answer(result: Dict[str, Any], status: int) -> None:
    sys.stdout.write(json.dumps(result) + "\n")
    sys.stdout.flush()
    sys.exit(status)


def _failure(error: str) -> Dict[str, Any]:
    return {"ok": False, "exit_code": None, "stdout": "", "stderr": "", "truncated": False,
            "timed_out": False, "duration_s": 0.0, "error": error}


def parse_job(raw: bytes) -> Dict[str, Any]:
    """Check a job's shape; raise :class:`JobError` naming the first problem."""
    try:
        job = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise JobError(f"the job is not JSON: {exc}") from None
    if not isinstance(job, dict):
        raise JobError("the job must be a JSON object")
    if job.get("version") != PROTOCOL_VERSION:
        raise JobError(f"unsupported job version {job.get('version')!r}; this image speaks {PROTOCOL_VERSION}")
    kind = job.get("kind")
    field = {"python": "code", "shell": "command", "agent": "input"}.get(kind)  # type: ignore[arg-type]
    if field is None:
        raise JobError(f"unknown job kind {kind!r}; expected 'python', 'shell' or 'agent'")
    if kind == "agent" and not isinstance(job.get("agent"), dict):
        raise JobError("an agent job needs an 'agent' object")
    if not isinstance(job.get(field), str):
        raise JobError(f"a {kind} job needs a string {field!r}")
    for key in ("timeout_s", "max_output_bytes"):
        value = job.get(key)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
            raise JobError(f"{key} must be a positive number")
    secrets = job.get("secrets") or {}
    if not isinstance(secrets, dict) or not all(
        isinstance(k, str) and _NAME.match(k) and isinstance(v, str) for k, v in secrets.items()
    ):
        raise JobError("secrets must map variable names to strings")
    return job


def _argv(job: Dict[str, Any], workdir: str) -> List[str]:
    if job["kind"] == "shell":
        return ["/bin/sh", "-c", job["command"]]
    script = os.path.join(workdir, "main.py")
    with open(script, "w", encoding="utf-8") as fh:
        fh.write(job["code"])
    return [sys.executable, "-I", script]


def _read_capped(path: str, cap: int) -> tuple[str, bool]:
    with open(path, "rb") as fh:
        data = fh.read(cap + 1)
    return data[:cap].decode("utf-8", "replace"), len(data) > cap


def _wait_unreaped(pid: int, deadline: float) -> bool:
    """Wait for ``pid`` to exit without reaping it (so its group id stays reserved for the kill);
    False when the deadline passed first."""
    while os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is None:
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.02)
    return True


def run_job(job: Dict[str, Any]) -> Dict[str, Any]:
    """Run a checked job in a fresh directory and describe how it ended."""
    workdir = tempfile.mkdtemp(prefix="job-")
    env = {"PATH": _PATH, "LANG": "C.UTF-8", "HOME": workdir, "TMPDIR": workdir, **(job.get("secrets") or {})}
    out_path, err_path = os.path.join(workdir, ".stdout"), os.path.join(workdir, ".stderr")
    start = time.monotonic()
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        proc = subprocess.Popen(_argv(job, workdir), stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                cwd=workdir, env=env, start_new_session=True)
        timed_out = not _wait_unreaped(proc.pid, start + job["timeout_s"])
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # the job's own children too
        except (ProcessLookupError, PermissionError):
            pass
        proc.wait()
    cap = int(job["max_output_bytes"])
    stdout, cut_out = _read_capped(out_path, cap)
    stderr, cut_err = _read_capped(err_path, cap)
    shutil.rmtree(workdir, ignore_errors=True)
    code = proc.returncode
    ok = code == 0 and not timed_out
    if ok:
        error = ""
    elif timed_out:
        error = f"timed out after {job['timeout_s']:g} s; the process group was killed"
    elif code < 0:
        error = f"killed by signal {-code}"
    else:
        error = f"exit code {code}"
    return {"ok": ok, "exit_code": code, "stdout": stdout, "stderr": stderr, "truncated": cut_out or cut_err,
            "timed_out": timed_out, "duration_s": time.monotonic() - start, "error": error}


def _serve_agent(job: Dict[str, Any]) -> None:
    try:
        from jarvis_agents.sandbox.agent_worker import serve
    except ImportError:
        sys.stdout.write(json.dumps({"type": "error", "message": "this image has no jarvis-agents installed; "
                                     "build the agent image (Dockerfile.agent)"}) + "\n")
        sys.exit(2)
    os.environ.update(job.get("secrets") or {})  # the agent's tools read their keys from the environment
    sys.exit(serve(job))


def main() -> None:
    """Read the job (the first line of stdin), answer on stdout."""
    try:
        job = parse_job(sys.stdin.buffer.readline())
    except JobError as exc:
        _answer(_failure(f"bad job: {exc}"), 2)
    if job["kind"] == "agent":
        _serve_agent(job)
    _answer(run_job(job), 0)


if __name__ == "__main__":
    main()
