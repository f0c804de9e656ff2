"""The jail's seccomp filter: system calls model-written code has no use for, refused with ``EPERM``.

The filter is built with libseccomp (through :mod:`pyseccomp`, its ctypes binding) and handed to bwrap as a
compiled BPF program on a descriptor (``bwrap --seccomp FD``), the way Flatpak does. Like Flatpak's, it
allows by default and refuses a list; a refused call fails with ``EPERM`` (Python sees ``PermissionError``),
it never kills the process. Refused:

- sockets of any family but ``AF_UNIX`` (``socket``, ``socketpair``), so there is no network at all, not
  even over the jail's own loopback; with ``network=True``, any family but ``AF_UNIX``, ``AF_INET``,
  ``AF_INET6`` and ``AF_NETLINK`` (firejail's ``protocol unix,inet,inet6,netlink``);
- reaching other processes' memory (:data:`REFUSED`), loading code into the kernel, the kernel keyring,
  mounts and namespaces (``clone`` with a ``CLONE_NEW*`` flag too), io_uring (its operations, a socket
  included, would pass by the filter), the machine's own settings;
- ``personality`` with anything but the default (0) or the query (``0xffffffff``);
- ``ioctl`` ``TIOCSTI`` and ``TIOCLINUX`` (pushing input into a terminal);
- ``clone3`` fails with ``ENOSYS`` instead (its flags sit in memory the filter cannot read): the C library
  then falls back to ``clone``, whose flags it can (what Docker's and Flatpak's filters do);
- system calls of another ABI (i386 or x32 on x86-64) fail with ``EPERM``.
"""

from __future__ import annotations

import errno
import platform
import socket
import tempfile
import termios
import threading
from typing import Any, Dict, FrozenSet, Tuple

from jarvis_agents.sandbox.errors import SeccompUnavailableError
from jarvis_agents.sandbox.process import memory_fd

__all__ = ["LOCAL_FAMILIES", "NETWORK_FAMILIES", "REFUSED", "SECCOMP_HINT", "filter_fd", "filter_program",
           "seccomp_problem"]

SECCOMP_HINT = ("install the filter's library: pip install 'jarvis-agents[jail]' (pyseccomp, over the system's "
                "libseccomp: apt-get install libseccomp2, dnf install libseccomp, pacman -S libseccomp), or run the "
                "jail without it knowingly with seccomp = false (see docs/sandbox.md)")
#: The socket families a jailed run may create: its own processes talk over pipes and Unix sockets.
LOCAL_FAMILIES: FrozenSet[int] = frozenset({socket.AF_UNIX})
#: With ``network=True``: also IPv4, IPv6 and netlink (``getaddrinfo`` lists the interfaces over it).
NETWORK_FAMILIES: FrozenSet[int] = frozenset({socket.AF_UNIX, socket.AF_INET, socket.AF_INET6, socket.AF_NETLINK})
#: Refused outright (``EPERM``), by what they would reach. Names this libseccomp does not know are skipped.
REFUSED: Dict[str, Tuple[str, ...]] = {
    "other processes": ("ptrace", "process_vm_readv", "process_vm_writev", "process_madvise", "pidfd_getfd", "kcmp"),
    "the kernel": ("kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module", "create_module",
                   "query_module", "get_kernel_syms", "bpf", "perf_event_open", "userfaultfd"),
    "the kernel keyring": ("keyctl", "add_key", "request_key"),
    "mounts and namespaces": ("mount", "umount", "umount2", "pivot_root", "unshare", "setns", "fsopen", "fsconfig",
                              "fsmount", "fspick", "move_mount", "open_tree", "mount_setattr"),
    "io_uring": ("io_uring_setup", "io_uring_enter", "io_uring_register"),
    "the machine": ("reboot", "swapon", "swapoff", "acct", "syslog", "quotactl", "iopl", "ioperm", "settimeofday",
                    "clock_settime", "stime", "open_by_handle_at", "lookup_dcookie", "uselib", "vm86", "vm86old",
                    "nfsservctl"),
}
_NAMESPACE_FLAGS = (0x00020000, 0x02000000, 0x04000000, 0x08000000, 0x10000000, 0x20000000, 0x40000000)  # CLONE_NEW*
_TERMINAL_IOCTLS = (termios.TIOCSTI, getattr(termios, "TIOCLINUX", 0x541C))
_PERSONALITY_QUERY = 0xFFFFFFFF
_LOW32 = 0xFFFFFFFF
_UNKNOWN = -1  # libseccomp's __NR_SCMP_ERROR
_PROGRAMS: Dict[bool, bytes] = {}
_LOCK = threading.Lock()


def seccomp_problem() -> str:
    """Why no filter can be built here (``""`` when one can): the binding or libseccomp is missing."""
    try:
        import pyseccomp  # noqa: F401
    except ImportError:
        return "pyseccomp is not installed"
    except (OSError, RuntimeError) as exc:  # it loads libseccomp when imported
        return f"libseccomp cannot be loaded ({exc})"
    return ""


def filter_program(network: bool) -> bytes:
    """The compiled BPF program (built once per ``network``); :class:`SeccompUnavailableError` without the
    library."""
    with _LOCK:
        if network not in _PROGRAMS:
            _PROGRAMS[network] = _build(network)
        return _PROGRAMS[network]


def filter_fd(network: bool) -> int:
    """A new descriptor holding :func:`filter_program` from its start, for ``bwrap --seccomp``; the caller
    closes it once bwrap has started (bwrap reads its own inherited copy)."""
    return memory_fd("jarvis-seccomp", filter_program(network))


def _build(network: bool) -> bytes:
    problem = seccomp_problem()
    if problem:
        raise SeccompUnavailableError(f"the sandbox jail's seccomp filter cannot be built: {problem}; {SECCOMP_HINT}")
    import pyseccomp as sc

    refuse = sc.ERRNO(errno.EPERM)
    rules = sc.SyscallFilter(sc.ALLOW)
    rules.set_attr(sc.Attr.ACT_BADARCH, refuse)
    for names in REFUSED.values():
        for name in names:
            _add(sc, rules, refuse, name)
    for name in ("socket", "socketpair"):
        _refuse_families(sc, rules, refuse, name, NETWORK_FAMILIES if network else LOCAL_FAMILIES)
    flags_arg = 1 if platform.machine().startswith("s390") else 0  # s390's clone takes the stack first
    for flag in _NAMESPACE_FLAGS:
        rules.add_rule(refuse, "clone", sc.Arg(flags_arg, sc.MASKED_EQ, flag, flag))
    _add(sc, rules, sc.ERRNO(errno.ENOSYS), "clone3")
    for request in _TERMINAL_IOCTLS:
        rules.add_rule(refuse, "ioctl", sc.Arg(1, sc.MASKED_EQ, _LOW32, request))
    # The persona is 32 bits; one comparison per rule, so "neither 0 nor 0xffffffff" is: bit 31 clear and
    # another bit set, or bit 31 set and another bit clear.
    top = 1 << 31
    for bit in range(31):
        rules.add_rule(refuse, "personality", sc.Arg(0, sc.MASKED_EQ, top | 1 << bit, 1 << bit))
        rules.add_rule(refuse, "personality", sc.Arg(0, sc.MASKED_EQ, top | 1 << bit, top))
    with tempfile.TemporaryFile() as out:
        rules.export_bpf(out)
        out.seek(0)
        return out.read()


def _add(sc: Any, rules: Any, action: int, name: str) -> None:
    if sc.resolve_syscall(sc.system_arch(), name) != _UNKNOWN:  # a name this libseccomp does not know: skipped
        rules.add_rule(action, name)


def _refuse_families(sc: Any, rules: Any, action: int, name: str, allowed: FrozenSet[int]) -> None:
    """Refuse ``name`` for every first argument not in ``allowed`` (one comparison per rule: each value below
    the highest allowed one, then everything above it, which also covers values with high bits set)."""
    highest = max(allowed)
    for family in range(highest):
        if family not in allowed:
            rules.add_rule(action, name, sc.Arg(0, sc.EQ, family))
    rules.add_rule(action, name, sc.Arg(0, sc.GT, highest))
