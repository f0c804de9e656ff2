"""``PythonSandbox``: model-written code runs in a separate, limited, throw-away process, never in ours.

Each run starts ``python -I -S`` (isolated mode: no ``PYTHON*`` variables, no user site, no ``site``
module, so no ``.pth`` file runs) on :mod:`~jarvis_agents.sandbox.child_bootstrap`, in a fresh temporary
working directory (in the jail it is mounted at ``/work``, so nothing of the host's layout shows), with an
environment of a fixed ``PATH``, a UTF-8 locale and ``HOME``/``TMPDIR`` pointing at that directory, and
nothing else: no API key and no ``JARVIS_*`` variable of the host reaches it. The bootstrap applies the CPU,
address-space, file-size, process-count and open-file limits, and when jarvis runs as root it first switches
to a uid and gid of the run's own, leased from ``[sandbox] uid_range`` (:mod:`~jarvis_agents.sandbox.uids`).

With ``isolation="jail"`` (the default) the child runs inside bubblewrap (:mod:`~jarvis_agents.sandbox.jail`):
its own PID, network, IPC and UTS namespaces, a mount view where only its work directory is writable
and the host's home, ``~/.jarvis``, other runs' directories and the project are absent, and a seccomp
filter (:mod:`~jarvis_agents.sandbox.syscalls`: no socket but ``AF_UNIX``, no namespaces, mounts or
ptrace; ``seccomp=False`` leaves it out knowingly). Where the jail
cannot be had, a run raises :class:`~jarvis_agents.sandbox.errors.JailUnavailableError` (never a silent
fallback); ``isolation="rlimits"`` accepts the limits-only sandbox knowingly: then the code can open
network connections, read whatever the sandbox user can read, and a ``setsid`` process outlives the run.
See ``docs/sandbox.md``.
"""

from __future__ import annotations

import functools
import marshal
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import attrs

from jarvis_agents.sandbox.errors import SandboxUnavailableError
from jarvis_agents.sandbox.jail import (
    BOOTSTRAP_IN_JAIL,
    WORKDIR_IN_JAIL,
    JailStatus,
    check_isolation,
    check_seccomp,
    jail_argv,
    jail_exit_code,
    jail_status,
    refuse_unjailed,
)
from jarvis_agents.sandbox.limits import SandboxLimits
from jarvis_agents.sandbox.process import memory_fd, run_process
from jarvis_agents.sandbox.result import SandboxResult, describe_exit
from jarvis_agents.sandbox.syscalls import filter_fd
from jarvis_agents.sandbox.uids import UidLease, check_uid_range, configured_uid_range, lease_uid, tasks_of_user

__all__ = ["SAFE_PATH", "Launch", "PythonSandbox", "Workspace"]

SAFE_PATH = "/usr/local/bin:/usr/bin:/bin"
_BOOTSTRAP = str(Path(__file__).with_name("child_bootstrap.py"))
_SHELL = "/bin/sh"
# Modules the bootstrap itself does not import, so the probe really reads the standard library.
_PROBE = "import decimal, subprocess, email.message"
_USABLE: Dict[Tuple[str, object, str, bool], str] = {}  # "" when usable, else why not
_INTERPRETERS: Dict[str, Tuple[str, Tuple[str, ...]]] = {}
_WHERE = "import os, sys; print(os.path.realpath(sys.executable)); print(sys.base_prefix); print(sys.base_exec_prefix)"
# The job holds only dicts, lists, str, int and None, which this format version encodes the same way for
# every CPython 3 (the child may be another interpreter than this one).
_MARSHAL_VERSION = 2


@attrs.frozen
class Launch:
    """How to start one child: ``argv`` and the descriptors it must inherit (``pass_fds``: the jail's seccomp
    program). :meth:`close` them once the child has started."""

    argv: List[str]
    fds: Tuple[int, ...] = ()

    def close(self) -> None:
        for fd in self.fds:
            try:
                os.close(fd)
            except OSError:  # closed already
                pass


@attrs.frozen
class Workspace:
    """One run's work directory: ``path`` on the host, ``inside`` where the code sees it (``/work`` in the
    jail, else ``path``), ``user`` the ``(uid, gid)`` the run switches to (``None``: no switch) and the
    ``lease`` of that id when it is the run's own. :meth:`remove` deletes the directory, then gives the id
    back: call it once no process of the run is left."""

    path: str
    inside: str
    user: Optional[Tuple[int, int]] = None
    lease: Optional[UidLease] = None

    def remove(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)
        if self.lease is not None:
            self.lease.release()


class PythonSandbox:
    """Run Python code (or a shell command) in a limited child process and return a :class:`SandboxResult`.

    ``limits`` are the defaults of every run (``run(..., timeout_s=)`` overrides the timeout only).
    ``user`` is the ``(uid, gid)`` every child switches to; by default, when jarvis runs as root, each run
    leases an id of its own from ``uid_range`` (``(first, last)``; default ``[sandbox] uid_range`` of the
    config, else 2,000,000-2,000,999) and gives it back when it ends; an unprivileged jarvis switches to no
    one (it cannot). ``python`` is the
    interpreter; by default the running one, unless the child switches user and that user cannot read the
    running interpreter's standard library (a Python installed under ``/root``, say): then the first
    ``python3`` on :data:`SAFE_PATH` that it can use, found once by a probe run. A failure of the code is
    a result with ``ok=False``; a platform without process groups or resource limits, or no usable
    interpreter, raises :class:`SandboxUnavailableError`.

    ``isolation`` is ``"jail"`` (default: bubblewrap namespaces; a run raises :class:`JailUnavailableError`
    where they cannot be had) or ``"rlimits"`` (the resource limits only, accepted knowingly). ``network``
    lets a jailed run keep the host's network (default: a network namespace of its own, no connections).
    ``seccomp`` (default true) puts the jail's seccomp filter on every jailed run; where its library is
    missing a run raises :class:`SeccompUnavailableError`; ``seccomp=False`` leaves the filter out knowingly.
    """

    def __init__(
        self,
        limits: Optional[SandboxLimits] = None,
        *,
        python: Optional[str] = None,
        user: Optional[Tuple[int, int]] = None,
        isolation: str = "jail",
        network: bool = False,
        seccomp: bool = True,
        uid_range: Optional[Tuple[int, int]] = None,
    ) -> None:
        if os.name != "posix" or not hasattr(os, "killpg"):
            raise SandboxUnavailableError(
                "the Python sandbox needs a POSIX system (process groups and resource limits); "
                "use ContainerRunner on this platform"
            )
        self.limits = limits or SandboxLimits()
        self.user = user
        #: Whether each run leases a uid of its own (root, no fixed ``user``).
        self.per_run_user = user is None and os.geteuid() == 0
        self._uid_range = None if uid_range is None else check_uid_range(uid_range)
        self.isolation = check_isolation(isolation, "sandbox.isolation")
        self.network = bool(network)
        self.seccomp = check_seccomp(seccomp, "sandbox.seccomp")
        self._python = python

    def __repr__(self) -> str:
        user = "per-run" if self.per_run_user else self.user
        return (f"PythonSandbox(limits={self.limits!r}, python={self._python!r}, user={user!r}, "
                f"isolation={self.isolation!r}, network={self.network!r}, seccomp={self.seccomp!r})")

    @property
    def jailed(self) -> bool:
        """Whether runs go into the bubblewrap jail (``isolation="jail"``)."""
        return self.isolation == "jail"

    @property
    def python(self) -> str:
        """The interpreter the children run (chosen on first use when not given)."""
        if self._python is None:
            self._python = self._pick_python()
        return self._python

    @property
    def uid_range(self) -> Tuple[int, int]:
        """The ids runs lease when jarvis runs as root (read from the config on first use when not given)."""
        if self._uid_range is None:
            self._uid_range = configured_uid_range()
        return self._uid_range

    def _pick_python(self) -> str:
        if self.user is None and not self.per_run_user and not self.jailed:
            return sys.executable
        if self.jailed and not jail_status().available:
            raise refuse_unjailed(jail_status())
        candidates = [sys.executable, shutil.which("python3", path=SAFE_PATH)]
        failures = []
        for candidate in dict.fromkeys(c for c in candidates if c):
            key = (candidate, "per-run" if self.per_run_user else self.user, self.isolation, self.seccomp)
            if key not in _USABLE:
                probe = self._run({"mode": "python", "code": _PROBE}, SandboxLimits(timeout_s=30), candidate)
                _USABLE[key] = "" if probe.ok else (probe.stderr.strip()[-500:] or probe.error)
            if not _USABLE[key]:
                return candidate
            failures.append(f"{candidate}: {_USABLE[key]}")
        if self.jailed:
            raise refuse_unjailed(JailStatus(False, reason="bwrap could not run the interpreter: " + "; ".join(failures)))
        raise SandboxUnavailableError(
            f"no Python interpreter whose standard library {self._who()} can read: tried "
            f"{', '.join(c for c in candidates if c)}; pass python= an interpreter installed outside a private home "
            "directory, or user= a user that can read it"
        )

    def run(self, code: str, *, timeout_s: Optional[float] = None) -> SandboxResult:
        """Run ``code`` as a ``__main__`` module; ``exit(n)``, exceptions and limits give ``ok=False``."""
        return self._run({"mode": "python", "code": code}, self.limits.with_timeout(timeout_s))

    def run_shell(self, command: str, *, timeout_s: Optional[float] = None) -> SandboxResult:
        """Run ``command`` with ``/bin/sh -c`` under the same limits, user, directory and environment."""
        return self._run({"mode": "exec", "argv": [_SHELL, "-c", command]}, self.limits.with_timeout(timeout_s))

    def _who(self) -> str:
        if self.per_run_user:
            first, last = self.uid_range
            return f"the sandbox uids {first}-{last}"
        return f"uid {self.user[0] if self.user else os.getuid()}"

    def workspace(self) -> Workspace:
        """A fresh ``jarvis-sandbox-*`` directory (mode 0700) owned by the run's user (its own uid, leased,
        when jarvis runs as root); the caller calls :meth:`Workspace.remove` when the run is over."""
        lease = lease_uid(self.uid_range) if self.per_run_user else None
        user = lease.user if lease is not None else self.user
        try:
            path = tempfile.mkdtemp(prefix="jarvis-sandbox-")
            try:
                if user is not None:
                    os.chown(path, *user)
            except BaseException:
                shutil.rmtree(path, ignore_errors=True)
                raise
        except BaseException:
            if lease is not None:
                lease.release()
            raise
        return Workspace(path, WORKDIR_IN_JAIL if self.jailed else path, user, lease)

    def command(self, python: Optional[str] = None) -> List[str]:
        """The child's command line without the jail: the interpreter in isolated mode on the bootstrap."""
        return [python or self.python, "-I", "-S", _BOOTSTRAP]

    def launch(self, workspace: Workspace, python: Optional[str] = None) -> Launch:
        """How to start a child in ``workspace``: :meth:`command`, inside the jail when ``isolation="jail"``
        (:class:`JailUnavailableError` when this machine cannot give it), with the seccomp filter unless
        ``seccomp=False`` (:class:`SeccompUnavailableError` when its library is missing)."""
        if not self.jailed:
            return Launch(self.command(python))
        status = jail_status()
        if not status.available or status.bwrap is None:
            raise refuse_unjailed(status)
        real, prefixes = _interpreter(python or self.python)
        fd = filter_fd(self.network) if self.seccomp else None
        launch = Launch([], () if fd is None else (fd,))
        try:
            boot = memory_fd("jarvis-bootstrap", _bootstrap_source())
            launch = attrs.evolve(launch, fds=(*launch.fds, boot))
            argv = jail_argv([real, "-I", "-S", BOOTSTRAP_IN_JAIL], bwrap=status.bwrap, workdir=workspace.path,
                             prefixes=prefixes, bootstrap_fd=boot, network=self.network, seccomp_fd=fd)
        except BaseException:
            launch.close()
            raise
        return attrs.evolve(launch, argv=argv)

    def job(self, job: Dict[str, Any], limits: SandboxLimits, workspace: Workspace) -> bytes:
        """``job`` with these limits, the user and the directory to run in, encoded for the bootstrap's stdin."""
        user = workspace.user
        job = {**job, "limits": self.rlimits(limits, workspace), "user": list(user) if user else None,
               "cwd": workspace.inside}
        return marshal.dumps(job, _MARSHAL_VERSION)

    def _run(self, job: Dict[str, Any], limits: SandboxLimits, python: Optional[str] = None) -> SandboxResult:
        workspace = self.workspace()
        try:
            launch = self.launch(workspace, python)
            try:
                outcome = run_process(
                    launch.argv,
                    stdin_data=self.job(job, limits, workspace),
                    env=child_environment(workspace.inside),
                    cwd=workspace.path,
                    timeout_s=limits.timeout_s,
                    max_output_bytes=limits.max_output_bytes,
                    pass_fds=launch.fds,
                )
            except OSError as exc:
                raise SandboxUnavailableError(f"cannot start the sandbox interpreter {launch.argv[0]}: {exc}") from None
            finally:
                launch.close()
        finally:
            workspace.remove()
        code = self.exit_code(outcome.exit_code)
        ok = code == 0 and not outcome.timed_out
        return SandboxResult(
            ok=ok,
            exit_code=code,
            stdout=outcome.stdout.decode("utf-8", "replace"),
            stderr=outcome.stderr.decode("utf-8", "replace"),
            truncated=outcome.truncated,
            timed_out=outcome.timed_out,
            duration_s=outcome.duration_s,
            error="" if ok else describe_exit(code, outcome.timed_out, limits.timeout_s),
        )

    def exit_code(self, code: int) -> int:
        """The child's exit status as ``Popen.returncode`` gives it (negative for a signal), jailed or not."""
        return jail_exit_code(code) if self.jailed and code is not None else code

    def rlimits(self, limits: SandboxLimits, workspace: Workspace) -> Dict[str, List[int]]:
        """The resource limits the bootstrap applies in ``workspace``, as ``{"RLIMIT_X": [soft, hard]}``."""
        cpu = limits.effective_cpu_seconds
        # RLIMIT_NPROC counts every task of the real user on the host, so the allowance sits on top of what
        # that user already runs (plus the child itself); a leased uid runs nothing yet (uids_in_use).
        if workspace.lease is not None:
            running = 0
        else:
            running = tasks_of_user(workspace.user[0] if workspace.user is not None else os.getuid())
        nproc = running + 1 + limits.max_processes
        return {
            "RLIMIT_CPU": [cpu, cpu + 1],
            "RLIMIT_AS": [limits.memory_bytes, limits.memory_bytes],
            "RLIMIT_FSIZE": [limits.file_size_bytes, limits.file_size_bytes],
            "RLIMIT_NPROC": [nproc, nproc],
            "RLIMIT_NOFILE": [limits.open_files, limits.open_files],
            "RLIMIT_CORE": [0, 0],
        }


def _interpreter(python: str) -> Tuple[str, Tuple[str, ...]]:
    """The real path of ``python`` and its installation prefixes (what the jail binds read-only)."""
    if python not in _INTERPRETERS:
        if python == sys.executable:
            found = [os.path.realpath(sys.executable), sys.base_prefix, sys.base_exec_prefix]
        else:
            try:
                out = subprocess.run([python, "-I", "-S", "-c", _WHERE], capture_output=True, text=True, timeout=30,
                                     check=True, env={"PATH": SAFE_PATH}).stdout.split("\n")
            except (OSError, subprocess.SubprocessError) as exc:
                raise SandboxUnavailableError(f"cannot start the sandbox interpreter {python}: {exc}") from None
            found = [line.strip() for line in out[:3]]
        _INTERPRETERS[python] = (found[0], tuple(found[1:]))
    return _INTERPRETERS[python]


@functools.lru_cache(maxsize=1)
def _bootstrap_source() -> bytes:
    return Path(_BOOTSTRAP).read_bytes()


def child_environment(workdir: str) -> Dict[str, str]:
    """The whole environment of a sandboxed child: nothing is inherited from the host."""
    return {
        "PATH": SAFE_PATH,
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "HOME": workdir,
        "TMPDIR": workdir,
    }
