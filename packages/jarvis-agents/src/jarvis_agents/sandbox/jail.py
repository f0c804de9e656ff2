"""The jail around every sandboxed child on Linux: bubblewrap (``bwrap``) namespaces, not a home-made one.

:func:`jail_argv` wraps a child's command line in ``bwrap`` with:

- a new PID namespace with a fresh ``/proc`` (the host's processes are invisible, so the code cannot read
  their ``environ`` or ``mem`` or signal them) and ``--die-with-parent``: when the run ends, its first
  process dies and the kernel kills everything else in the namespace, ``setsid`` and double-forked
  processes included;
- a new network namespace (its own loopback and nothing else) unless the run allows network;
- new IPC and UTS namespaces, a cgroup namespace where the kernel has one, ``--new-session`` (no terminal
  to push input into), ``no_new_privs`` (bwrap always sets it: setuid programs do not elevate);
- a seccomp filter (:mod:`~jarvis_agents.sandbox.syscalls`, given as ``seccomp_fd``) that refuses sockets
  other than ``AF_UNIX`` (unless the run allows network), namespaces, mounts, ptrace, kernel modules and more;
- a mount view of its own: ``/usr`` and the ``/bin``, ``/sbin``, ``/lib*`` links or directories, the few
  ``/etc`` files the dynamic loader reads and the interpreter's own prefix, all read-only; a minimal
  ``/dev`` with a small ``/dev/shm`` of its own (POSIX semaphores: ``multiprocessing``); the run's work
  directory at :data:`WORKDIR_IN_JAIL` (never at its host path, so no name of the host's directories shows),
  the only writable place; everything else (the host's home, ``~/.jarvis``, ``/root``, other runs'
  directories, the project) is absent. The root itself is read-only.
- users: when jarvis runs as root, bwrap keeps only ``CAP_SETUID``/``CAP_SETGID`` and the bootstrap
  switches to the run's own uid (:mod:`~jarvis_agents.sandbox.uids`) before any job code runs; otherwise a
  new user namespace (the same uid, no capabilities, no further user namespaces).

:func:`jail_status` says whether this machine can have the jail (cheaply: ``bwrap`` on ``PATH`` and user
namespaces allowed, or root); the first real run is the proof (a failure names bwrap's own message).
"""

from __future__ import annotations

import logging
import os
import pwd
import shutil
import sys
from typing import Iterable, List, Optional, Sequence, Set

import attrs

from jarvis_agents.sandbox.errors import JailUnavailableError
from jarvis_agents.sandbox.syscalls import seccomp_problem

__all__ = ["BOOTSTRAP_IN_JAIL", "INSTALL_HINT", "ISOLATIONS", "SHM_BYTES", "WORKDIR_IN_JAIL", "JailStatus",
           "check_isolation",
           "check_seccomp", "jail_argv", "jail_exit_code", "jail_status", "refuse_unjailed"]

#: What :class:`~jarvis_agents.sandbox.PythonSandbox` accepts as ``isolation``.
ISOLATIONS = ("jail", "rlimits")
INSTALL_HINT = ("install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap; Fedora: dnf install bubblewrap; "
                "Arch: pacman -S bubblewrap) and allow user namespaces, or accept the rlimit-only sandbox "
                "knowingly with isolation = \"rlimits\" (see docs/sandbox.md)")
#: Where the bootstrap script appears inside the jail.
BOOTSTRAP_IN_JAIL = "/run/jarvis/child_bootstrap.py"
#: Where the run's work directory appears inside the jail (its cwd, ``HOME`` and ``TMPDIR``).
WORKDIR_IN_JAIL = "/work"
#: The size of the jail's own ``/dev/shm`` (a tmpfs: memory that ``RLIMIT_AS`` does not count).
SHM_BYTES = 64 * 2**20
_SYSTEM_DIRS = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
_ETC_FILES = ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/alternatives", "/etc/localtime")
_ETC_NETWORK = ("/etc/resolv.conf", "/etc/hosts", "/etc/nsswitch.conf", "/etc/ssl", "/etc/ca-certificates")
_log = logging.getLogger("jarvis_agents.sandbox")
_warned = False


@attrs.frozen
class JailStatus:
    """Whether the jail can be had here: ``available``, the ``bwrap`` path, and ``reason`` when not."""

    available: bool
    bwrap: Optional[str] = None
    reason: str = ""
    #: Why the seccomp filter cannot be built here (``""`` when it can).
    seccomp: str = ""

    def describe(self) -> str:
        """One line for people: ``bubblewrap + seccomp``, ``bubblewrap, no seccomp (<why>)`` or
        ``none (<reason>)``."""
        if not self.available:
            return f"none ({self.reason})"
        return f"bubblewrap, no seccomp ({self.seccomp})" if self.seccomp else "bubblewrap + seccomp"


def check_isolation(isolation: object, key: str) -> str:
    """``isolation`` when it is one of :data:`ISOLATIONS`, else a :class:`~jarvis_core.errors.ConfigError`."""
    from jarvis_core.errors import ConfigError

    if isolation not in ISOLATIONS:
        raise ConfigError(f"isolation must be one of {', '.join(ISOLATIONS)}, got {isolation!r}", key=key)
    return str(isolation)


def check_seccomp(seccomp: object, key: str) -> bool:
    """``seccomp`` when it is a bool, else a :class:`~jarvis_core.errors.ConfigError`."""
    from jarvis_core.errors import ConfigError

    if not isinstance(seccomp, bool):
        raise ConfigError(f"seccomp must be true or false, got {seccomp!r}", key=key)
    return seccomp


def jail_exit_code(code: int) -> int:
    """bwrap's exit status as ``Popen.returncode`` would give it unjailed: bwrap reports a command killed by
    signal N as 128 + N (the shell's convention, so an ``exit(137)`` reads as SIGKILL too)."""
    return -(code - 128) if 128 < code <= 128 + 64 else code


def jail_status() -> JailStatus:
    """The jail this machine allows, from cheap checks (no process is started)."""
    if not sys.platform.startswith("linux"):
        return JailStatus(False, reason=f"no bubblewrap jail on {sys.platform} (Linux namespaces only)")
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return JailStatus(False, reason="bwrap is not installed")
    blocked = "" if os.geteuid() == 0 else _userns_blocked()
    if blocked:
        return JailStatus(False, bwrap, f"user namespaces are not allowed for unprivileged users ({blocked})")
    return JailStatus(True, bwrap, seccomp=seccomp_problem())


def _userns_blocked() -> str:
    checks = (("/proc/sys/user/max_user_namespaces", "0"), ("/proc/sys/kernel/unprivileged_userns_clone", "0"),
              ("/proc/sys/kernel/apparmor_restrict_unprivileged_userns", "1"))
    for path, bad in checks:
        try:
            with open(path, encoding="ascii") as f:
                if f.read().strip() == bad:
                    return f"{path} is {bad}"
        except OSError:
            continue
    return ""


def refuse_unjailed(status: JailStatus) -> JailUnavailableError:
    """The error a run that asked for the jail gets; the first time, the same text is logged as a warning."""
    global _warned
    message = f"the sandbox jail is not available: {status.reason}; {INSTALL_HINT}"
    if not _warned:
        _warned = True
        _log.warning("%s", message)
    return JailUnavailableError(message)


def _homes() -> List[str]:
    homes = {os.path.expanduser("~"), "/root"}
    try:
        homes.add(pwd.getpwuid(os.getuid()).pw_dir)
    except KeyError:
        pass
    return [os.path.realpath(h) for h in homes if h and h != "/"]


def _check_prefix(prefix: str) -> str:
    """A directory the jail may bind read-only for the interpreter: never a home itself or a parent of one."""
    real = os.path.realpath(prefix)
    # A home first: that refusal holds wherever the prefix is, and says the more important thing.
    for home in _homes():
        if real == home or home.startswith(real.rstrip("/") + "/") or real == "/":
            raise JailUnavailableError(
                f"the interpreter's prefix {real} is a home directory or holds one, which the jail never shows; "
                "pass python= an interpreter installed in a prefix of its own (for example /usr/bin/python3 or "
                "a pyenv/uv version directory)")
    if real == WORKDIR_IN_JAIL or real.startswith(WORKDIR_IN_JAIL + "/"):
        raise JailUnavailableError(
            f"the interpreter's prefix {real} lies under {WORKDIR_IN_JAIL}, where the jail shows the run's work "
            "directory; pass python= an interpreter installed elsewhere (for example /usr/bin/python3)")
    return real


def _system_mounts() -> List[str]:
    args = ["--ro-bind", "/usr", "/usr"]
    for path in _SYSTEM_DIRS:
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    return args


def _parents(path: str, made: Set[str]) -> List[str]:
    """``--dir`` for each missing parent of a mount point, world-traversable (bwrap would make them 0700,
    which the unprivileged user could not pass)."""
    args: List[str] = []
    parts = path.strip("/").split("/")[:-1]
    for i in range(1, len(parts) + 1):
        parent = "/" + "/".join(parts[:i])
        if parent not in made:
            made.add(parent)
            args += ["--perms", "0755", "--dir", parent]
    return args


def jail_argv(
    command: Sequence[str],
    *,
    bwrap: str,
    workdir: str,
    prefixes: Iterable[str],
    bootstrap_fd: int,
    network: bool = False,
    seccomp_fd: Optional[int] = None,
) -> List[str]:
    """``command`` run inside bubblewrap, the work directory its only writable place (see the module docs).

    ``prefixes`` are the interpreter's installation directories (bound read-only unless under ``/usr``);
    ``bootstrap_fd`` is a descriptor the child inherits holding the bootstrap script, copied to
    :data:`BOOTSTRAP_IN_JAIL` (a copy, not a bind of the host file, so not even ``/proc/self/mountinfo``
    names where jarvis is installed); ``workdir`` (a host path) is bound at :data:`WORKDIR_IN_JAIL`.
    ``seccomp_fd`` is a descriptor the child inherits
    holding the filter's BPF program (:func:`~jarvis_agents.sandbox.syscalls.filter_fd`); ``None`` runs the
    jail without one. The command starts in ``/``: the work directory belongs to the sandbox user, so the
    bootstrap enters it after switching to that user.
    """
    args = [bwrap, "--die-with-parent", "--new-session", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
            "--unshare-cgroup-try", "--hostname", "jarvis-sandbox"]
    if not network:
        args.append("--unshare-net")
    if seccomp_fd is not None:
        args += ["--seccomp", str(seccomp_fd)]
    if os.geteuid() == 0:
        # No user namespace: the bootstrap itself switches to the unprivileged user, which needs these two.
        args += ["--cap-drop", "ALL", "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
    else:
        args += ["--unshare-user", "--disable-userns", "--cap-drop", "ALL"]
    made: Set[str] = {"/etc"}
    args += [*_system_mounts(), "--perms", "0755", "--dir", "/etc"]
    for path in (*_ETC_FILES, *(_ETC_NETWORK if network else ())):
        args += ["--ro-bind-try", path, path]
    for prefix in dict.fromkeys(_check_prefix(p) for p in prefixes):
        if prefix != "/usr" and not prefix.startswith("/usr/"):
            args += [*_parents(prefix, made), "--ro-bind", prefix, prefix]
    args += [*_parents(BOOTSTRAP_IN_JAIL, made), "--perms", "0444", "--ro-bind-data", str(bootstrap_fd), BOOTSTRAP_IN_JAIL,
             "--proc", "/proc", "--dev", "/dev",
             "--perms", "1777", "--size", str(SHM_BYTES), "--tmpfs", "/dev/shm",
             "--bind", workdir, WORKDIR_IN_JAIL, "--chdir", "/", "--remount-ro", "/", "--", *command]
    return args
