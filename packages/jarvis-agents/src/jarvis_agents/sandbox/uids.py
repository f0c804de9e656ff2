"""A uid and gid of its own for every sandboxed run when jarvis runs as root.

Runs that shared one user (``nobody``) were kept apart only by their namespaces: whatever the kernel keys by
uid was common to all of them (``RLIMIT_NPROC`` counts every task of a real uid on the whole host, a file
left world-writable, SysV IPC outside an IPC namespace). So each run leases an id from a range
(``[sandbox] uid_range``, default :data:`DEFAULT_UID_RANGE`, far above the ids of real users) and runs as
``uid = gid = id``; no passwd entry is needed.

A lease is a lock file per id in :data:`LEASE_DIR` (root's, mode 0700) held with ``flock``: the kernel drops
the lock when its holder closes the file or dies, ``SIGKILL`` included, so a crashed jarvis leaks no id. The
file holds the owner's pid (for people reading the directory; the lock is the truth). Two jarvis processes,
and two threads of one, never hold the same id: ``flock`` locks of separate opens exclude each other. An id
under which some process still runs (a run of the limits-only sandbox leaves ``setsid`` processes behind)
is skipped until that process ends, so a new run never shares its uid with anything.
"""

from __future__ import annotations

import errno
import fcntl
import os
import random
import stat
import threading
from typing import Iterator, List, Optional, Set, Tuple

import attrs

from jarvis_agents.sandbox.errors import SandboxUnavailableError
from jarvis_core.errors import ConfigError

__all__ = ["DEFAULT_UID_RANGE", "LEASE_DIR", "SandboxSettings", "UidLease", "check_uid_range", "configured_uid_range",
           "lease_uid", "tasks_of_user", "uids_in_use"]

#: 1000 ids far above those of real users (and below the 2**31 some tools mishandle).
DEFAULT_UID_RANGE: Tuple[int, int] = (2_000_000, 2_000_999)
#: Where the lock files live (a tmpfs on Linux: emptied at boot, as the leases are).
LEASE_DIR = "/run/jarvis-sandbox-uids"
_LOWEST = 1000  # system accounts live below
_HIGHEST = 2**32 - 2  # (uid_t)-1 means "no change" to setuid


def _check_range(_: object, attribute: attrs.Attribute[List[int]], value: List[int]) -> None:
    if (len(value) != 2 or any(isinstance(v, bool) or not isinstance(v, int) for v in value)
            or not _LOWEST <= value[0] <= value[1] <= _HIGHEST or value[0] <= 65534 <= value[1]):
        raise ValueError(f"{attribute.name} must be two ids [first, last], {_LOWEST} <= first <= last <= {_HIGHEST}, "
                         f"not holding 65534 (nobody), got {value!r}")


@attrs.frozen
class SandboxSettings:
    """The ``[sandbox]`` config table: ``uid_range = [first, last]``, the ids (inclusive) that runs get
    when jarvis runs as root. Give every jarvis installation on a host the same range, or ranges that do
    not overlap with any real user."""

    uid_range: List[int] = attrs.field(factory=lambda: list(DEFAULT_UID_RANGE), validator=_check_range)


def configured_uid_range() -> Tuple[int, int]:
    """``[sandbox] uid_range`` from the config file, else :data:`DEFAULT_UID_RANGE`."""
    from jarvis_core.config import load_config

    section = load_config().plugin_sections.get("sandbox")
    if isinstance(section, SandboxSettings):
        return section.uid_range[0], section.uid_range[1]
    return DEFAULT_UID_RANGE


def check_uid_range(uid_range: object) -> Tuple[int, int]:
    """``uid_range`` as ``(first, last)``, or a :class:`ConfigError` saying what a range must be."""
    try:
        value = list(uid_range)  # type: ignore[call-overload]
        _check_range(None, attrs.fields(SandboxSettings).uid_range, value)
    except (TypeError, ValueError) as exc:
        raise ConfigError(str(exc) if isinstance(exc, ValueError) else f"uid_range must be [first, last], got "
                          f"{uid_range!r}", key="sandbox.uid_range") from None
    return value[0], value[1]


class UidLease:
    """An id held for one run (``uid``, ``gid``: the same number) until :meth:`release` (idempotent)."""

    def __init__(self, uid: int, fd: int) -> None:
        self.uid = uid
        self._fd: Optional[int] = fd
        self._lock = threading.Lock()

    @property
    def user(self) -> Tuple[int, int]:
        """``(uid, gid)``."""
        return self.uid, self.uid

    def __repr__(self) -> str:
        return f"<UidLease {self.uid}{'' if self._fd is not None else ' released'}>"

    def release(self) -> None:
        """Give the id back (the next run may have it once no process of this one is left)."""
        with self._lock:
            fd, self._fd = self._fd, None
        if fd is not None:
            try:
                os.ftruncate(fd, 0)
            finally:
                os.close(fd)  # drops the flock


def _lease_dir(path: str) -> str:
    try:
        os.makedirs(path, mode=0o700, exist_ok=True)
        info = os.lstat(path)
    except OSError as exc:
        raise SandboxUnavailableError(f"cannot make the sandbox uid lease directory {path}: {exc}") from None
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid() or info.st_mode & 0o022:
        raise SandboxUnavailableError(f"the sandbox uid lease directory {path} must be a directory of uid "
                                      f"{os.geteuid()} that no one else may write; remove it to let jarvis make it")
    return path


def _process_owners() -> Iterator[Tuple[str, int]]:
    """``(pid, uid)`` of every process (Linux: one ``stat`` per ``/proc/<pid>``, many times cheaper than
    asking psutil for every process's details)."""
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                yield entry.name, entry.stat(follow_symlinks=False).st_uid
            except OSError:  # the process ended meanwhile
                continue


def uids_in_use() -> Set[int]:
    """The owners of every process on this machine."""
    if os.path.isdir("/proc/self/task"):
        return {uid for _, uid in _process_owners()}
    import psutil

    return {p.info["uids"].real for p in psutil.process_iter(["uids"]) if p.info.get("uids") is not None}


def tasks_of_user(uid: int) -> int:
    """How many tasks (threads included, as the kernel counts for ``RLIMIT_NPROC``) ``uid`` runs now."""
    count = 0
    if os.path.isdir("/proc/self/task"):
        for pid, owner in _process_owners():
            if owner == uid:
                try:
                    count += len(os.listdir(f"/proc/{pid}/task"))
                except OSError:
                    continue
        return count
    import psutil

    for proc in psutil.process_iter(["uids", "num_threads"]):
        uids, threads = proc.info.get("uids"), proc.info.get("num_threads")
        if uids is not None and uids.real == uid:
            count += threads or 1
    return count


def lease_uid(uid_range: Tuple[int, int], lease_dir: str = LEASE_DIR) -> UidLease:
    """Lease a free id of ``uid_range`` (``(first, last)``, inclusive); :class:`SandboxUnavailableError`
    when every one is held by a running sandbox or still owns a process."""
    first, last = uid_range
    directory = _lease_dir(lease_dir)
    busy = uids_in_use()
    count = last - first + 1
    start = random.randrange(count)  # spread concurrent jarvis processes over the range
    for step in range(count):
        uid = first + (start + step) % count
        if uid in busy:
            continue
        try:
            fd = os.open(os.path.join(directory, str(uid)), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC,
                         0o600)
        except OSError as exc:
            raise SandboxUnavailableError(f"cannot open the sandbox uid lease {directory}/{uid}: {exc}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
                continue
            raise SandboxUnavailableError(f"cannot lock the sandbox uid lease {directory}/{uid}: {exc}") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
        return UidLease(uid, fd)
    raise SandboxUnavailableError(
        f"all {count} sandbox uids {first}-{last} are taken by running sandboxes or their processes; "
        "wait for runs to end, or widen [sandbox] uid_range")
