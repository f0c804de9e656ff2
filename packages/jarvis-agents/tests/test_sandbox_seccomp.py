"""The jail's seccomp filter against real jailed processes: what it refuses (EPERM, never a kill), what
ordinary code still does, network=True, and a missing binding refused unless seccomp = false."""

from __future__ import annotations

import json
import os
import platform
import sys
import textwrap

import pytest

from jarvis_agents.agents.rlm import RLMAgent
from jarvis_agents.sandbox import (
    JailUnavailableError,
    PythonRepl,
    PythonSandbox,
    SandboxLimits,
    SeccompUnavailableError,
)
from jarvis_agents.sandbox import syscalls as syscalls_module
from jarvis_agents.sandbox.jail import jail_status
from jarvis_agents.sandbox.python import Workspace
from jarvis_agents.tools.code import CodeInterpreterTool, ShellExecTool
from jarvis_core.errors import ConfigError
from jarvis_core.testing import FakeEngine

needs_jail = pytest.mark.skipif(not jail_status().available or bool(jail_status().seccomp),
                                reason=f"no jail with seccomp here: {jail_status().describe()}")
# Raw system call numbers for the calls the C library has no wrapper for.
NUMBERS = {"x86_64": {"clone": 56, "keyctl": 250, "io_uring_setup": 425},
           "aarch64": {"clone": 220, "keyctl": 219, "io_uring_setup": 425}}
needs_numbers = pytest.mark.skipif(platform.machine() not in NUMBERS, reason=f"no syscall numbers for {platform.machine()}")

# Each attempt prints its errno name ("ok" when the call went through). Without the filter, each of them
# goes through or fails otherwise (mount on a missing directory: ENOENT; TIOCSTI on /dev/null: ENOTTY).
PROBE = textwrap.dedent("""
    import ctypes, errno, fcntl, json, os, socket, termios
    NR = NUMBERS
    libc = ctypes.CDLL(None, use_errno=True)
    out = {}
    def attempt(name, fn):
        try:
            fn()
            out[name] = "ok"
        except OSError as exc:
            out[name] = errno.errorcode.get(exc.errno, str(exc.errno))
    def c(fn, *args):
        def call():
            if fn(*args) == -1:
                raise OSError(ctypes.get_errno(), "")
        return call
    def loopback():
        with socket.socket() as server:
            server.bind(("127.0.0.1", 0))
            server.listen()
            socket.create_connection(server.getsockname(), timeout=2).close()
    def clone_new_user():
        pid = libc.syscall(NR["clone"], 0x10000000 | 17, 0, 0, 0, 0)  # CLONE_NEWUSER | SIGCHLD
        if pid == 0:
            os._exit(0)
        if pid == -1:
            raise OSError(ctypes.get_errno(), "")
        os.waitpid(pid, 0)
    class IOVec(ctypes.Structure):
        _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]
    buf = ctypes.create_string_buffer(8)
    local, remote = IOVec(ctypes.addressof(buf), 8), IOVec(ctypes.addressof(buf), 8)
    attempt("socket_inet", lambda: socket.socket(socket.AF_INET).close())
    attempt("socket_inet6", lambda: socket.socket(socket.AF_INET6).close())
    attempt("loopback_in_the_jail", loopback)
    attempt("ptrace", c(libc.ptrace, 0, 0, None, None))  # PTRACE_TRACEME
    attempt("process_vm_readv", c(libc.process_vm_readv, os.getpid(), ctypes.byref(local), 1, ctypes.byref(remote), 1, 0))
    attempt("clone_new_user", clone_new_user)
    attempt("unshare", c(libc.unshare, 0x10000000))  # CLONE_NEWUSER
    attempt("mount", c(libc.mount, b"none", b"/no/such/dir", b"tmpfs", 0, None))
    attempt("keyctl", c(libc.syscall, NR["keyctl"], 0, -3, 0))  # KEYCTL_GET_KEYRING_ID, the session keyring
    attempt("tiocsti", lambda: fcntl.ioctl(0, termios.TIOCSTI, b"x"))
    attempt("personality", c(libc.personality, 0x0040000))  # ADDR_NO_RANDOMIZE
    attempt("io_uring_setup", c(libc.syscall, NR["io_uring_setup"], 1, ctypes.byref(ctypes.create_string_buffer(120))))
    print(json.dumps(out))
""").replace("NUMBERS", repr(NUMBERS.get(platform.machine(), {})))

ORDINARY = textwrap.dedent("""
    import json, multiprocessing, os, socket, sqlite3, subprocess, sys, threading
    with open("notes.txt", "w") as f:
        f.write("kept")
    os.mkdir("sub")
    os.rename("notes.txt", "sub/notes.txt")
    files = open("sub/notes.txt").read()
    child = subprocess.run([sys.executable, "-I", "-S", "-c", "print(6 * 7)"], capture_output=True, text=True).stdout.strip()
    found = []
    threads = [threading.Thread(target=found.append, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    db = sqlite3.connect("data.db")
    db.execute("create table t (x)")
    db.executemany("insert into t values (?)", [(1,), (2,)])
    total = db.execute("select sum(x) from t").fetchone()[0]
    with multiprocessing.Pool(2) as pool:
        squares = pool.map(abs, [-1, -2, -3])
    left, right = socket.socketpair()
    left.sendall(b"unix")
    pair = right.recv(4).decode()
    print(json.dumps({"files": files, "child": child, "threads": sorted(found), "sqlite": total,
                      "pool": squares, "socketpair": pair, "json": json.loads("[1]")}))
""")


def _attempts(result) -> dict:
    assert result.ok, result
    return json.loads(result.stdout.splitlines()[-1])


@needs_jail
@needs_numbers
def test_the_filter_refuses_each_listed_call_with_eperm():
    found = _attempts(PythonSandbox(SandboxLimits(timeout_s=30)).run(PROBE))
    assert found == dict.fromkeys(found, "EPERM") and len(found) == 12, found


@needs_jail
@needs_numbers
def test_with_network_sockets_of_the_internet_families_are_allowed_and_the_rest_still_refused():
    found = _attempts(PythonSandbox(SandboxLimits(timeout_s=30), network=True).run(PROBE))
    assert found.pop("socket_inet") == found.pop("socket_inet6") == found.pop("loopback_in_the_jail") == "ok"
    assert found == dict.fromkeys(found, "EPERM"), found
    other = PythonSandbox(SandboxLimits(timeout_s=30), network=True).run(
        "import socket\ntry:\n    socket.socket(socket.AF_ALG, socket.SOCK_SEQPACKET); print('ok')\n"
        "except PermissionError as exc:\n    print('refused', exc.errno)\n")
    assert other.stdout.strip() == "refused 1", other


@needs_jail
def test_ordinary_code_still_works_under_the_filter():
    result = PythonSandbox(SandboxLimits(timeout_s=60)).run(ORDINARY)
    assert _attempts(result) == {"files": "kept", "child": "42", "threads": [0, 1, 2, 3], "sqlite": 3,
                                 "pool": [1, 2, 3], "socketpair": "unix", "json": [1]}


@needs_jail
async def test_a_repl_cell_gets_permission_error_for_a_network_socket_and_lives_on():
    async with PythonRepl(PythonSandbox(), cell_timeout_s=20) as repl:
        refused = await repl.execute("import socket\nsocket.socket(socket.AF_INET, socket.SOCK_DGRAM)")
        after = await repl.execute("print('still here')")
    assert not refused.ok and "PermissionError: [Errno 1] Operation not permitted" in refused.error, refused
    assert after.ok and after.output == "still here\n" and not after.lost


@needs_jail
def test_a_refused_call_in_a_shell_command_is_an_error_message_not_a_kill():
    result = PythonSandbox(SandboxLimits(timeout_s=20)).run_shell("unshare -U true; echo status $?")
    assert result.ok and "Operation not permitted" in result.stderr and "status 1" in result.stdout, result


@needs_jail
def test_without_the_binding_a_jailed_run_is_refused_and_seccomp_false_is_a_knowing_choice(monkeypatch):
    monkeypatch.setitem(sys.modules, "pyseccomp", None)  # as if not installed
    monkeypatch.setattr(syscalls_module, "_PROGRAMS", {})
    assert jail_status().describe() == "bubblewrap, no seccomp (pyseccomp is not installed)"
    with pytest.raises(SeccompUnavailableError, match=r"pip install 'jarvis-agents\[jail\]'.*seccomp = false"):
        PythonSandbox().run("print(1)")
    with pytest.raises(SeccompUnavailableError):
        CodeInterpreterTool().run("print(1)")
    unfiltered = PythonSandbox(SandboxLimits(timeout_s=20), seccomp=False)
    assert unfiltered.run("print(6 * 7)").stdout.strip() == "42"
    assert CodeInterpreterTool(seccomp=False).run("print(6 * 7)").strip() == "42"


async def test_without_the_binding_a_repl_refuses_to_start(monkeypatch):
    if not jail_status().available:
        pytest.skip(jail_status().reason)
    monkeypatch.setitem(sys.modules, "pyseccomp", None)
    monkeypatch.setattr(syscalls_module, "_PROGRAMS", {})
    repl = PythonRepl(PythonSandbox())
    with pytest.raises(SeccompUnavailableError):
        await repl.execute("print(1)")
    assert not repl.running


def test_the_seccomp_setting_is_checked_and_reaches_the_sandbox(tmp_path):
    with pytest.raises(ConfigError, match="seccomp must be true or false"):
        CodeInterpreterTool(seccomp="off")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="seccomp must be true or false") as caught:
        ShellExecTool(enabled=True, seccomp=0)  # type: ignore[arg-type]
    assert caught.value.key == "tools.shell_exec.seccomp"
    assert not CodeInterpreterTool(seccomp=False).sandbox.seccomp and PythonSandbox().seccomp
    assert not RLMAgent(FakeEngine(), model="m", seccomp=False).sandbox.seccomp


@needs_jail
def test_a_launch_the_jail_refuses_leaves_no_filter_descriptor_open(monkeypatch, tmp_path):
    sandbox = PythonSandbox()
    monkeypatch.setenv("HOME", sys.base_prefix)  # the interpreter's prefix is now a home: never bound
    before = len(os.listdir("/proc/self/fd"))
    for _ in range(3):
        with pytest.raises(JailUnavailableError, match="home directory"):
            sandbox.launch(Workspace(str(tmp_path), "/work"), python=sys.executable)
    assert len(os.listdir("/proc/self/fd")) == before
