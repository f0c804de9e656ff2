"""The first code a sandboxed child runs (``python -I -S child_bootstrap.py``); standard library only.

It reads one job from stdin (a ``marshal``-encoded dict of plain values: ``marshal`` is built into the
interpreter, where ``json`` would first import ``re``, ``enum`` and more, a good part of a run's start-up), points stdin at ``/dev/null``, applies the resource limits, drops to the
unprivileged user when it was started as root, and then either runs the job's Python code in a fresh
``__main__`` namespace or replaces itself with the job's command (``execve``). Doing this here rather
than in a ``preexec_fn`` keeps the parent safe to use from threads.

The job: ``{"mode": "python"|"exec", "code": str, "argv": [str], "args": [str], "limits": {"RLIMIT_X":
[soft, hard]}, "user": [uid, gid] | null, "cwd": str | null}``; ``cwd`` is entered after the user switch. ``args`` (python mode, optional) become ``sys.argv[1:]``: the
persistent REPL (:mod:`~jarvis_agents.sandbox.repl_child`) gets its channel descriptors that way.
"""

from __future__ import annotations

import builtins
import marshal
import os
import resource
import sys


def _apply_limits(limits: dict[str, list[int]]) -> None:
    for name, (soft, hard) in limits.items():
        which = getattr(resource, name, None)
        if which is None:  # not on this platform (documented)
            continue
        _, current_hard = resource.getrlimit(which)
        if current_hard != resource.RLIM_INFINITY:
            soft, hard = min(soft, current_hard), min(hard, current_hard)
        resource.setrlimit(which, (soft, hard))


def _drop_privileges(user: list[int]) -> None:
    uid, gid = user
    os.setgroups([])
    os.setgid(gid)
    os.setuid(uid)


def _run_python(code: str, args: list[str]) -> None:
    # site.py, which defines exit() and quit(), is not loaded (-S)
    builtins.exit = builtins.quit = sys.exit  # type: ignore[assignment]
    sys.argv = ["<sandbox>", *args]
    namespace: dict[str, object] = {"__name__": "__main__", "__builtins__": builtins}
    try:
        compiled = compile(code, "<sandbox>", "exec")
        exec(compiled, namespace)
    except SystemExit:
        raise
    except BaseException as exc:
        import traceback  # only on failure: it costs start-up time

        # Leave out this file's frame: the traceback starts at the job's own code.
        tb = exc.__traceback__.tb_next if exc.__traceback__ is not None else None
        traceback.print_exception(type(exc), exc, tb)
        sys.exit(1)


def main() -> None:
    job = marshal.loads(sys.stdin.buffer.read())
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    os.umask(0o077)
    _apply_limits(job.get("limits") or {})
    if job.get("user"):
        _drop_privileges(job["user"])
    if job.get("cwd"):
        os.chdir(job["cwd"])
    os.environ.pop("PWD", None)  # bwrap sets it; the job's environment is exactly the one it was given
    if job["mode"] == "exec":
        argv = job["argv"]
        os.execve(argv[0], argv, os.environ)
    _run_python(job["code"], list(job.get("args") or ()))


if __name__ == "__main__":
    main()
