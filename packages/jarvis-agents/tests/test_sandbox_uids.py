"""A uid of its own for every sandboxed run when jarvis runs as root, and the run's directory at /work in the
jail: against real jailed processes, real concurrent runs and a real jarvis process killed with SIGKILL."""

from __future__ import annotations

import json
import os
import pathlib
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest

import jarvis_agents.sandbox as sandbox_package
from jarvis_agents.sandbox import PythonRepl, PythonSandbox, SandboxLimits, SandboxUnavailableError
from jarvis_agents.sandbox.jail import jail_status
from jarvis_agents.sandbox.uids import DEFAULT_UID_RANGE, check_uid_range
from jarvis_agents.tools.code import CodeInterpreterTool, ShellExecTool
from jarvis_core.errors import ConfigError

as_root = pytest.mark.skipif(os.geteuid() != 0, reason="runs get uids of their own only when jarvis runs as root")
needs_jail = pytest.mark.skipif(not jail_status().available, reason=f"no jail here: {jail_status().reason}")
# A range of two ids no other test uses, so a test can fill it.
NARROW = (2_100_000, 2_100_001)


def _run_both(sandbox: PythonSandbox, first: str, second: str, stagger_s: float = 0.0) -> dict:
    results: dict = {}

    def run(name: str, code: str) -> None:
        results[name] = sandbox.run(code)

    threads = [threading.Thread(target=run, args=("a", first))]
    threads[0].start()
    time.sleep(stagger_s)
    threads.append(threading.Thread(target=run, args=("b", second)))
    threads[1].start()
    for thread in threads:
        thread.join()
    return results


@as_root
@needs_jail
def test_two_concurrent_jailed_runs_get_different_uids_and_see_nothing_of_each_other(run_dirs):
    """In the jail no place is shared (each run sees only its own /work, /dev/shm and a read-only root), so
    what is asserted: the two runs ran as two different ids of the range; each left its file 0644 in its
    directory made 0755, and the other found it nowhere it can look; on the host each directory belongs
    to its own run's id."""
    code = textwrap.dedent("""
        import glob, os, time
        open("mine-MARK.txt", "w").write("secret of MARK")
        os.chmod("mine-MARK.txt", 0o644)
        os.chmod(".", 0o755)
        time.sleep(2.5)
        found = []
        for top in os.listdir("/"):
            if top not in ("proc", "sys", "usr") and not os.path.islink("/" + top):
                for where, _, files in os.walk("/" + top):
                    found += [os.path.join(where, n) for n in files if n.startswith("mine-")]
        print(os.getuid(), os.getgid(), sorted(found))
    """)
    owners = []

    def watch() -> None:  # while both run: who owns their directories on the host
        end = time.monotonic() + 10
        while time.monotonic() < end and len(owners) < 2:
            owners[:] = sorted({(p.stat().st_uid, p.stat().st_gid) for p in run_dirs.glob("*/mine-*.txt")})
            time.sleep(0.05)

    watcher = threading.Thread(target=watch)
    watcher.start()
    results = _run_both(PythonSandbox(SandboxLimits(timeout_s=30)), code.replace("MARK", "a"), code.replace("MARK", "b"))
    watcher.join()
    seen = {}
    for name, result in results.items():
        assert result.ok, result
        uid, gid, found = result.stdout.split(" ", 2)
        seen[name] = int(uid)
        assert int(gid) == int(uid) and DEFAULT_UID_RANGE[0] <= int(uid) <= DEFAULT_UID_RANGE[1]
        assert found.strip() == f"['/work/mine-{name}.txt']", (name, found)
    assert seen["a"] != seen["b"]
    assert sorted(owners) == sorted((uid, uid) for uid in seen.values())


@as_root
def test_without_the_jail_another_runs_files_and_processes_are_out_of_reach(run_dirs):
    """The limits-only sandbox shares the host's filesystem (the temporary directory is a place both runs
    reach): run b finds run a's directory and cannot read a's file in it (0644, but the directory is 0700
    and a's), nor signal a's process; as one shared user it could do both."""
    victim = textwrap.dedent("""
        import ctypes, os, time
        ctypes.CDLL(None).prctl(15, b"jarvis-victim")  # PR_SET_NAME: the attacker finds it by that name
        open("victim.txt", "w").write("A-SECRET-DATA")
        os.chmod("victim.txt", 0o644)
        print(os.getpid(), flush=True)
        time.sleep(4)
        print(open("victim.txt").read())
    """)
    attacker = textwrap.dedent(f"""
        import glob, os, signal
        paths = [p for p in glob.glob({str(run_dirs)!r} + "/jarvis-sandbox-*") if p != os.getcwd()]
        read, killed = [], []
        for path in paths:
            try:
                read.append(open(path + "/victim.txt").read())
            except OSError as exc:
                read.append(type(exc).__name__)
        for pid in (int(p) for p in os.listdir("/proc") if p.isdigit()):
            try:
                victim = open(f"/proc/{{pid}}/comm").read().strip() == "jarvis-victim"
            except OSError:
                victim = False
            if victim:
                try:
                    os.kill(pid, signal.SIGKILL)
                    killed.append(pid)
                except OSError:
                    pass
        print(len(paths), read, killed)
    """)
    sandbox = PythonSandbox(SandboxLimits(timeout_s=30), isolation="rlimits")
    results = _run_both(sandbox, victim, attacker, stagger_s=1.5)
    assert results["a"].ok, results["a"]
    assert results["a"].stdout.split("\n")[1] == "A-SECRET-DATA"
    assert results["b"].ok, results["b"]
    assert results["b"].stdout.strip() == "1 ['PermissionError'] []"


BOMB = textwrap.dedent("""
    import os, signal
    children = 0
    try:
        for _ in range(200):
            if os.fork() == 0:
                signal.pause()
                os._exit(0)
            children += 1
    except OSError as exc:
        print(children, type(exc).__name__)
""")
FORK_TEN = textwrap.dedent("""
    import os
    pids = []
    try:
        for _ in range(10):
            pid = os.fork()
            if pid == 0:
                os._exit(0)
            pids.append(pid)
    except OSError as exc:
        print("refused", type(exc).__name__)
    for pid in pids:
        os.waitpid(pid, 0)
    print("forked", len(pids))
""")


@as_root
@needs_jail
async def test_a_fork_bomb_in_one_run_leaves_another_run_its_processes():
    """RLIMIT_NPROC counts per real uid across the host: with one shared user, a run that filled its
    allowance took the room of every run started before it. Run b starts first, run a forks until the
    limit stops it, then b forks ten children."""
    sandbox = PythonSandbox(SandboxLimits(max_processes=16))
    async with PythonRepl(sandbox, cell_timeout_s=30) as b, PythonRepl(sandbox, cell_timeout_s=30) as a:
        assert (await b.execute("import os")).ok
        bomb = await a.execute(BOMB)
        children, error = bomb.output.split()
        assert 0 < int(children) <= 16 and error == "BlockingIOError", bomb  # the limit holds in the bomb's run
        after = await b.execute(FORK_TEN)
        assert after.output.strip() == "forked 10", after


def _fill(sandbox: PythonSandbox) -> list:
    """A workspace for every id of NARROW, or none and the error."""
    held: list = []
    try:
        for _ in range(NARROW[1] - NARROW[0] + 1):
            held.append(sandbox.workspace())
    except BaseException:
        for workspace in held:
            workspace.remove()
        raise
    return held


HOLDER = textwrap.dedent("""
    import asyncio
    from jarvis_agents.sandbox import PythonRepl, PythonSandbox

    async def main():
        sandbox = PythonSandbox(uid_range=RANGE)
        repls = [PythonRepl(sandbox, cell_timeout_s=30) for _ in range(2)]
        for repl in repls:
            cell = await repl.execute("import os; print(os.getuid())")
            assert cell.ok, cell
        print(" ".join(repl.workspace.path for repl in repls), flush=True)
        await asyncio.sleep(120)

    asyncio.run(main())
""")


@as_root
@needs_jail
def test_ids_come_back_when_runs_end_and_when_jarvis_is_killed(tmp_path):
    sandbox = PythonSandbox(SandboxLimits(timeout_s=20), uid_range=NARROW)
    for _ in range(3):  # more runs than ids: each gives its id back
        assert sandbox.run("print(1)").ok
    held = _fill(sandbox)
    with pytest.raises(SandboxUnavailableError, match="all 2 sandbox uids 2100000-2100001 are taken"):
        sandbox.workspace()
    for workspace in held:
        workspace.remove()

    # Another jarvis process runs two jailed REPLs, which take both ids, and is killed with SIGKILL.
    script = tmp_path / "holder.py"
    script.write_text(f"RANGE = {NARROW!r}\n{HOLDER}")
    holder = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None
        dirs = holder.stdout.readline().split()
        if len(dirs) != 2:
            holder.wait(timeout=30)
            pytest.fail(f"the holder did not start its runs: {holder.stderr.read()[-2000:]}")  # type: ignore[union-attr]
        with pytest.raises(SandboxUnavailableError, match="are taken"):
            sandbox.workspace()
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
        holder.stdout.close()  # type: ignore[union-attr]
        holder.stderr.close()  # type: ignore[union-attr]
    # Its jails die with it (--die-with-parent) and the kernel dropped its locks: both ids can be had again.
    end = time.monotonic() + 10
    while True:
        try:
            held = _fill(sandbox)
            break
        except SandboxUnavailableError:
            if time.monotonic() > end:
                raise
            time.sleep(0.1)
    assert sorted(w.user[0] for w in held) == list(range(NARROW[0], NARROW[1] + 1))  # type: ignore[index]
    for workspace in held:
        workspace.remove()
    for path in dirs:  # what the killed jarvis left on disk is its own to clean; only its ids came back
        subprocess.run(["rm", "-rf", path], check=False)


def test_the_uid_range_is_checked():
    assert check_uid_range([2_000_000, 2_000_999]) == DEFAULT_UID_RANGE
    for bad in ([5, 10], [2_000_000], [3_000_000, 2_000_000], [60_000, 70_000], "2000000-2000999", [True, 2]):
        with pytest.raises(ConfigError, match="uid_range"):
            PythonSandbox(uid_range=bad)  # type: ignore[arg-type]


@needs_jail
def test_the_work_directory_is_work_inside_and_no_host_path_shows(run_dirs):
    """The code sees its directory as /work: its cwd, HOME and TMPDIR, and no file or directory name of
    the jail (every tree but /proc, /sys and /usr walked) holds a name of the host path above it."""
    needles = [run_dirs.name, "jarvis-sandbox-"]
    probe = textwrap.dedent(f"""
        import json, os
        needles = {needles!r}
        seen = {{"cwd": os.getcwd(), "env": dict(os.environ), "root": sorted(os.listdir("/")), "hits": [],
                "mounts": open("/proc/self/mountinfo").read()}}
        for top in seen["root"]:
            if top not in ("proc", "sys", "usr") and not os.path.islink("/" + top):
                for where, dirs, files in os.walk("/" + top):
                    seen["hits"] += [os.path.join(where, n) for n in [where, *dirs, *files]
                                     if any(s in n for s in needles)]
        print(json.dumps(seen))
    """)
    result = PythonSandbox(SandboxLimits(timeout_s=20)).run(probe)
    assert result.ok, result
    seen = json.loads(result.stdout)
    assert seen["cwd"] == "/work" and seen["env"]["HOME"] == "/work" and seen["env"]["TMPDIR"] == "/work"
    assert "tmp" not in seen["root"] and "work" in seen["root"]
    assert seen["hits"] == []
    assert not any(s in json.dumps(seen["env"]) for s in needles)
    # The mount table names bind mounts' sources (docs/sandbox.md): the run's directory, but not where jarvis
    # is installed (the bootstrap script is a copy, not a bind).
    assert str(pathlib.Path(sandbox_package.__file__).parent) not in seen["mounts"]


@needs_jail
async def test_what_the_code_and_tools_write_lands_in_the_runs_directory_on_the_host(run_dirs):
    async with PythonRepl(PythonSandbox(), cell_timeout_s=20) as repl:
        cell = await repl.execute("import os, tempfile\nopen('rel.txt', 'w').write('relative')\n"
                                  "open('/work/abs.txt', 'w').write('absolute')\n"
                                  "open(tempfile.mkstemp(prefix='tmp-')[1], 'w').write('temporary')\n"
                                  "print(os.getuid())")
        assert cell.ok, cell
        assert repl.workspace is not None
        host = pathlib.Path(repl.workspace.path)
        assert host.parent == run_dirs
        assert (host / "rel.txt").read_text() == "relative" and (host / "abs.txt").read_text() == "absolute"
        assert [p.read_text() for p in host.glob("tmp-*")] == ["temporary"]
        assert (host / "rel.txt").stat().st_uid == int(cell.output)

    found: dict = {}

    def watch(name: str) -> None:
        end = time.monotonic() + 15
        while time.monotonic() < end and name not in found:
            for path in run_dirs.glob(f"*/{name}"):
                found[name] = path.read_text()
            time.sleep(0.02)

    tools = {"code_interpreter": (CodeInterpreterTool(timeout=20),
                                  "import time\nopen('from-python.txt', 'w').write('python')\ntime.sleep(3)"),
             "shell_exec": (ShellExecTool(enabled=True, timeout=20),
                            "echo shell > \"$HOME/from-shell.txt\"; sleep 3")}
    for key, (tool, code) in tools.items():
        name = "from-python.txt" if key == "code_interpreter" else "from-shell.txt"
        watcher = threading.Thread(target=watch, args=(name,))
        watcher.start()
        tool.run(code)
        watcher.join()
        assert found.get(name, "").strip() in ("python", "shell"), (key, found)
    assert list(run_dirs.iterdir()) == []  # each tool run's directory is gone with the run
