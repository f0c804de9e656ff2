"""The bubblewrap jail against real processes: what model-written code may not reach (the host's secrets,
processes and network, other runs), as root and as a real unprivileged host, and its absence refused."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import pathlib
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from typing import Iterator

import attrs
import psutil
import pytest

import jarvis_agents
import jarvis_agents.plugin
import jarvis_core
from jarvis_agents.sandbox import JailUnavailableError, PythonRepl, PythonSandbox, SandboxLimits
from jarvis_agents.sandbox import jail as jail_module
from jarvis_agents.sandbox.jail import jail_status
from jarvis_agents.tools.code import CodeInterpreterTool
from jarvis_core.cli.main import main
from jarvis_core.errors import ConfigError
from jarvis_core.testing import installed_registry

SECRET = "sk-planted-jail-4e1d9b"
needs_jail = pytest.mark.skipif(not jail_status().available, reason=f"no jail here: {jail_status().reason}")

# Run in the sandbox with HOSTPID and HOMEDIR replaced; prints one JSON object of what each attempt got.
PROBE = textwrap.dedent("""
    import json, os, signal
    host, home, out = HOSTPID, HOMEDIR, {}
    def attempt(name, fn):
        try:
            out[name] = repr(fn())[:300]
        except Exception as exc:
            out[name] = "refused: " + type(exc).__name__
    def read(path):
        with open(path, "rb") as f:
            return f.read()
    attempt("host_environ", lambda: read(f"/proc/{host}/environ"))
    attempt("parent_environ", lambda: read(f"/proc/{os.getppid()}/environ"))
    attempt("config", lambda: read(home + "/.jarvis/config.toml"))
    attempt("ssh_key", lambda: read(home + "/.ssh/id_rsa"))
    attempt("host_mem", lambda: open(f"/proc/{host}/mem", "rb").close())
    attempt("signal_host", lambda: os.kill(host, 0))
    attempt("processes", lambda: sorted(int(p) for p in os.listdir("/proc") if p.isdigit()))
    print(json.dumps(out), flush=True)
    os.kill(os.getppid(), signal.SIGTERM)
""")


def _probe(host_pid: int, home: str) -> str:
    return PROBE.replace("HOSTPID", str(host_pid)).replace("HOMEDIR", repr(home))


@pytest.fixture
def planted_home() -> Iterator[pathlib.Path]:
    """A home with a jarvis config and an ssh key holding SECRET, world-readable as many homes are (so only
    the jail keeps the sandbox user out), in a directory the unprivileged user may enter."""
    base = pathlib.Path(tempfile.mkdtemp(prefix="jail-home-", dir="/tmp"))
    home = base / "home"
    for sub in (".jarvis", ".ssh"):
        (home / sub).mkdir(parents=True)
    (home / ".jarvis" / "config.toml").write_text(f'[engines.cloud]\napi_key = "{SECRET}"\n')
    (home / ".ssh" / "id_rsa").write_text(f"-----BEGIN KEY-----\n{SECRET}\n")
    for path in (base, home, home / ".jarvis", home / ".ssh"):
        path.chmod(0o755)
    for path in (home / ".jarvis" / "config.toml", home / ".ssh" / "id_rsa"):
        path.chmod(0o644)
    try:
        yield home
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _check_confined(found: dict, host_alive: bool) -> None:
    assert SECRET not in json.dumps(found)
    for name in ("host_environ", "config", "ssh_key", "host_mem", "signal_host"):
        assert found[name].startswith("refused"), (name, found[name])
    assert os.getpid() not in json.loads(found["processes"].replace("'", '"'))
    assert host_alive


@needs_jail
def test_a_sandboxed_run_reaches_no_host_secret_file_process_or_signal(planted_home, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.setenv("HOME", str(planted_home))
    result = PythonSandbox(SandboxLimits(timeout_s=20)).run(_probe(os.getpid(), str(planted_home)))
    found = json.loads(result.stdout.splitlines()[0])
    _check_confined(found, host_alive=True)
    assert SECRET not in result.stderr


@needs_jail
async def test_a_repl_cell_reaches_no_host_secret_file_process_or_signal(planted_home, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    async with PythonRepl(PythonSandbox(), cell_timeout_s=20) as repl:
        cell = await repl.execute(_probe(os.getpid(), str(planted_home)))
    found = json.loads(cell.output.splitlines()[0])
    _check_confined(found, host_alive=True)


HOST_SCRIPT = textwrap.dedent("""
    import json, os, sys
    sys.path[:0] = PATHS
    from jarvis_agents.sandbox import PythonSandbox, SandboxLimits
    probe = PROBE.replace("HOSTPID", str(os.getpid())).replace("HOMEDIR", repr(os.environ["HOME"]))
    result = PythonSandbox(SandboxLimits(timeout_s=20)).run(probe)
    who = PythonSandbox(SandboxLimits(timeout_s=20)).run("import os; print(os.getuid(), os.getcwd())").stdout
    print(json.dumps({"ok": result.ok, "stdout": result.stdout, "stderr": result.stderr, "uid": os.getuid(),
                      "who": who}))
""")


def _unprivileged_python() -> str:
    version = f"python{sys.version_info[0]}.{sys.version_info[1]}"
    found = shutil.which(version, path="/usr/local/bin:/usr/bin:/bin")
    if os.geteuid() != 0 or shutil.which("setpriv") is None or found is None:
        pytest.skip(f"needs root, setpriv and a system {version} to start a host as nobody")
    return found


@needs_jail
def test_an_unprivileged_host_keeps_its_secrets_and_lives(planted_home):
    """jarvis itself runs as nobody (uid 65534), as an unprivileged install does: the sandbox user is then
    the host's own, so only the jail keeps the code from the host's environ, memory, files and signals."""
    python = _unprivileged_python()
    paths = [str(pathlib.Path(m.__file__).resolve().parents[1]) for m in (jarvis_agents, jarvis_core, attrs)]
    pyseccomp = pytest.importorskip("pyseccomp")  # the jail's seccomp filter
    paths.append(str(pathlib.Path(pyseccomp.__file__).resolve().parent))
    workdir = planted_home.parent
    script = workdir / "host.py"
    script.write_text(f"PATHS = {paths!r}\nPROBE = {PROBE!r}\n{HOST_SCRIPT}")
    script.chmod(0o644)
    shutil.chown(planted_home, 65534, 65534)
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(planted_home), "OPENAI_API_KEY": SECRET,
           "TMPDIR": str(planted_home)}
    proc = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", python, "-I", str(script)],
                          capture_output=True, text=True, env=env, cwd=str(workdir), timeout=120)
    if "ModuleNotFoundError" in proc.stderr or "PermissionError" in proc.stderr:
        pytest.skip(f"the unprivileged user cannot import jarvis from {paths}: {proc.stderr[-300:]}")
    assert proc.returncode == 0, proc.stderr  # the host was not killed
    report = json.loads(proc.stdout)
    assert report["uid"] == 65534
    assert report["who"].split() == ["65534", "/work"]  # no uid lease: the host's own uid, mapped in the jail
    found = json.loads(report["stdout"].splitlines()[0])
    assert SECRET not in report["stdout"] + report["stderr"]
    for name in ("host_environ", "config", "ssh_key", "host_mem", "signal_host"):
        assert found[name].startswith("refused"), (name, found[name])


@needs_jail
def test_two_concurrent_runs_cannot_read_or_kill_each_other():
    sandbox = PythonSandbox(SandboxLimits(timeout_s=30))
    victim_code = textwrap.dedent("""
        import time
        open("secret.txt", "w").write("A-SECRET-DATA")
        time.sleep(4)
        print(open("secret.txt").read())
    """)
    attacker_code = textwrap.dedent("""
        import glob, os, signal, time
        time.sleep(1.5)
        read = [open(p).read() for p in glob.glob("/tmp/jarvis-sandbox-*/secret.txt")]
        killed = []
        for pid in (int(p) for p in os.listdir("/proc") if p.isdigit()):
            if pid not in (os.getpid(), 1):
                try:
                    os.kill(pid, signal.SIGKILL)
                    killed.append(pid)
                except OSError:
                    pass
        print(read, killed)
    """)
    results = {}
    threads = [threading.Thread(target=lambda n=n, c=c: results.__setitem__(n, sandbox.run(c)))
               for n, c in (("victim", victim_code), ("attacker", attacker_code))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results["victim"].ok, results["victim"]
    assert results["victim"].stdout.strip() == "A-SECRET-DATA"
    assert results["attacker"].ok, results["attacker"]
    assert results["attacker"].stdout.strip() == "[] []"


@needs_jail
def test_no_connection_reaches_a_host_listener_on_loopback():
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        result = PythonSandbox(SandboxLimits(timeout_s=20)).run(
            "import socket\n"
            f"try:\n    socket.create_connection(('127.0.0.1', {port}), timeout=3); print('connected')\n"
            "except OSError as exc:\n    print('refused', type(exc).__name__)\n")
    assert result.stdout.startswith("refused"), result


@needs_jail
def test_network_allowed_by_the_run_policy_reaches_the_listener():
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        result = PythonSandbox(SandboxLimits(timeout_s=20), network=True).run(
            f"import socket\nsocket.create_connection(('127.0.0.1', {port}), timeout=3)\nprint('connected')\n")
    assert result.stdout.strip() == "connected", result


@needs_jail
def test_only_the_work_directory_is_writable():
    result = PythonSandbox(SandboxLimits(timeout_s=20)).run(textwrap.dedent("""
        import os
        open("here.txt", "w").write("ok")
        for path in ("/tmp/x", "/x", "/usr/x", "/etc/x"):
            try:
                open(path, "w")
                print("wrote", path)
            except OSError as exc:
                print("refused", path)
        print(sorted(os.listdir("/")), os.getcwd(), os.listdir("."))
    """))
    lines = result.stdout.splitlines()
    assert all(line.startswith("refused") for line in lines[:4]), result
    assert "home" not in lines[4] and lines[4].endswith(" /work ['here.txt']"), result
    # the host path of the run's directory shows nowhere: test_sandbox_uids


def test_without_the_jail_a_run_is_refused_loudly_and_rlimits_is_a_knowing_choice(monkeypatch, tmp_path, caplog):
    monkeypatch.setenv("PATH", str(tmp_path))  # no bwrap anywhere
    monkeypatch.setattr(jail_module, "_warned", False)
    with caplog.at_level(logging.WARNING, logger="jarvis_agents.sandbox"):
        with pytest.raises(JailUnavailableError, match="apt-get install bubblewrap"):
            PythonSandbox().run("print(1)")
        with pytest.raises(JailUnavailableError, match='isolation = "rlimits"'):
            CodeInterpreterTool().run("print(1)")
    assert sum("bwrap is not installed" in r.getMessage() for r in caplog.records) == 1  # said once
    assert PythonSandbox(isolation="rlimits").run("print(6 * 7)").stdout.strip() == "42"
    assert CodeInterpreterTool(isolation="rlimits").run("print(6 * 7)").strip() == "42"


async def test_without_the_jail_a_repl_refuses_to_start(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    repl = PythonRepl(PythonSandbox())
    with pytest.raises(JailUnavailableError):
        await repl.execute("print(1)")
    assert not repl.running


def test_isolation_setting_is_checked():
    with pytest.raises(ConfigError, match="isolation must be one of jail, rlimits"):
        CodeInterpreterTool(isolation="none")
    with pytest.raises(ConfigError):
        PythonSandbox(isolation="off")


def test_an_interpreter_prefix_that_is_a_home_is_never_bound(monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path))
    with pytest.raises(JailUnavailableError, match="home directory"):
        jail_module.jail_argv(["python"], bwrap="/usr/bin/bwrap", workdir="/tmp/w", prefixes=[str(tmp_path)],
                              bootstrap_fd=3)


def test_an_interpreter_prefix_where_the_jail_shows_the_work_directory_is_refused(monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path))
    inside = jail_module.WORKDIR_IN_JAIL + "/python3.11"
    with pytest.raises(JailUnavailableError, match=f"lies under {jail_module.WORKDIR_IN_JAIL}"):
        jail_module.jail_argv(["python"], bwrap="/usr/bin/bwrap", workdir="/tmp/w", prefixes=[inside],
                              bootstrap_fd=3)


def _sleepers(seconds: str) -> list:
    """Live host processes running ``sleep <seconds>`` (a value no other test uses)."""
    found = []
    for proc in psutil.process_iter(["cmdline", "status"]):
        if proc.info["cmdline"] == ["sleep", seconds] and proc.info["status"] != psutil.STATUS_ZOMBIE:
            found.append(proc.pid)
    return found


def _gone(seconds: str, within_s: float = 5.0) -> bool:
    end = time.monotonic() + within_s
    while _sleepers(seconds):
        if time.monotonic() > end:
            return False
        time.sleep(0.05)
    return True


@needs_jail
def test_setsid_and_double_forked_processes_die_with_the_run():
    code = textwrap.dedent("""
        import os, subprocess
        subprocess.Popen(["sleep", "71.5"], start_new_session=True)
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                os.execv("/bin/sleep", ["sleep", "71.5"])
            os._exit(0)
        print("left behind")
    """)
    result = PythonSandbox(SandboxLimits(timeout_s=20)).run(code)
    assert result.ok and result.stdout.strip() == "left behind", result
    assert _gone("71.5")


@needs_jail
def test_a_timed_out_run_leaves_no_process_behind():
    code = "import subprocess\nsubprocess.Popen(['sleep', '72.5'], start_new_session=True)\nwhile True: pass\n"
    result = PythonSandbox(SandboxLimits(timeout_s=1.5)).run(code)
    assert result.timed_out and result.exit_code == -signal.SIGKILL
    assert _gone("72.5")


@pytest.mark.parametrize("isolation", ["jail", "rlimits"])
async def test_closing_a_repl_whose_cell_left_a_detached_process_never_blocks_the_loop(isolation):
    if isolation == "jail" and not jail_status().available:
        pytest.skip(jail_status().reason)
    repl = PythonRepl(PythonSandbox(isolation=isolation), cell_timeout_s=20)
    cell = await repl.execute("import subprocess\n"
                              "subprocess.Popen(['sleep', '73.5'], start_new_session=True)\nprint('started')")
    assert cell.ok and cell.output.strip() == "started", cell
    assert repl.workspace is not None
    workdir = repl.workspace.path
    gaps: list = []
    stop = asyncio.Event()

    async def heartbeat() -> None:
        last = time.monotonic()
        while not stop.is_set():
            await asyncio.sleep(0.01)
            now = time.monotonic()
            gaps.append(now - last)
            last = now

    beat = asyncio.create_task(heartbeat())
    await asyncio.sleep(0.1)
    started = time.monotonic()
    repl.close()
    took = time.monotonic() - started
    await asyncio.sleep(0.3)
    stop.set()
    await beat
    assert took < 0.5 and max(gaps) < 0.5, (took, max(gaps))
    await repl.aclose()  # waits for the reaping, off the loop
    assert workdir is not None and not os.path.exists(workdir)
    if isolation == "jail":
        assert _gone("73.5")  # the PID namespace took it
    else:
        for pid in _sleepers("73.5"):  # outside the jail a setsid process outlives the run (documented)
            os.kill(pid, signal.SIGKILL)


def test_the_listings_show_the_isolation_in_force(capsys, monkeypatch, tmp_path):
    with installed_registry(jarvis_agents.plugin):
        assert main(["agents"]) == 0
        rows = {line.split()[0]: line for line in capsys.readouterr().out.splitlines()[1:]}
    expected = "bubblewrap" if jail_status().available else "none ("
    assert expected in rows["codeact"] and expected in rows["rlm"] and expected not in rows["simple"]
    monkeypatch.setenv("PATH", str(tmp_path))
    with installed_registry(jarvis_agents.plugin):
        assert main(["tools", "--json"]) == 0
        tools = {t["key"]: t for t in json.loads(capsys.readouterr().out)}
    assert tools["code_interpreter"]["isolation"] == "none (bwrap is not installed)"
