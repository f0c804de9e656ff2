"""PythonSandbox against real child processes: isolation, limits, timeouts, and that nothing is left behind."""

from __future__ import annotations

import os
import signal
import threading
import time

import psutil
import pytest

from jarvis_agents.sandbox import PythonSandbox, SandboxLimitError, SandboxLimits, SandboxUnavailableError
from jarvis_agents.sandbox.uids import DEFAULT_UID_RANGE
from jarvis_core.errors import ConfigError

SECRET = "sk-test-7f3a9c1e-do-not-leak"


@pytest.fixture
def sandbox() -> PythonSandbox:
    return PythonSandbox(SandboxLimits(timeout_s=10))


@pytest.fixture
def unjailed() -> PythonSandbox:
    """The limits-only sandbox, whose process ids are the host's (the jail's own are in test_sandbox_jail)."""
    return PythonSandbox(SandboxLimits(timeout_s=10), isolation="rlimits")


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _group_members(pgid: int) -> list[int]:
    members = []
    for proc in psutil.process_iter():
        try:
            if os.getpgid(proc.pid) == pgid and proc.status() != psutil.STATUS_ZOMBIE:
                members.append(proc.pid)
        except (ProcessLookupError, psutil.NoSuchProcess):
            continue
    return members


def test_secret_pid_and_directory_are_not_the_parents(sandbox, monkeypatch, tmp_path, run_dirs):
    monkeypatch.setenv("JARVIS_TEST_SECRET", SECRET)
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.chdir(tmp_path)
    result = sandbox.run(
        "import os, json\n"
        "print(json.dumps({'pid': os.getpid(), 'cwd': os.getcwd(), 'env': dict(os.environ),"
        " 'files': os.listdir('.')}))"
    )
    assert result.ok, result
    import json

    seen = json.loads(result.stdout)
    assert seen["pid"] != os.getpid()
    assert seen["cwd"] == "/work"  # the jail shows the run's directory there, whatever its host path
    assert seen["files"] == []  # a fresh directory
    assert list(run_dirs.iterdir()) == []  # and removed afterwards
    assert SECRET not in result.stdout
    assert sorted(seen["env"]) == ["HOME", "LANG", "LC_ALL", "PATH", "TMPDIR"]
    assert seen["env"]["HOME"] == seen["cwd"]


def test_each_run_gets_its_own_directory(sandbox):
    first = sandbox.run("import os; open('left.txt', 'w').write('x'); print(os.path.exists('left.txt'))")
    second = sandbox.run("import os; print(os.path.exists('left.txt'))")
    assert first.ok and second.ok
    assert (first.stdout.strip(), second.stdout.strip()) == ("True", "False")


def test_infinite_loop_is_killed_within_timeout_plus_one_second_and_nothing_is_left(unjailed):
    sandbox = unjailed
    code = (
        "import os, subprocess\n"
        "child = subprocess.Popen(['sleep', '60'])\n"
        "print(os.getpid(), os.getpgid(0), child.pid, flush=True)\n"
        "while True: pass\n"
    )
    result = sandbox.run(code, timeout_s=1.5)
    assert not result.ok and result.timed_out
    assert result.duration_s < 1.5 + 1.0
    assert result.exit_code == -signal.SIGKILL
    assert "timed out" in result.error
    pid, pgid, sleeper = map(int, result.stdout.split())
    assert pgid == pid  # the child led its own process group
    assert not _alive(pid) and not _alive(sleeper)
    assert _group_members(pgid) == []


def test_background_process_of_a_successful_run_is_killed(unjailed):
    sandbox = unjailed
    result = sandbox.run("import subprocess; print(subprocess.Popen(['sleep', '60']).pid)")
    assert result.ok, result
    assert not _alive(int(result.stdout))


def test_ten_gigabyte_allocation_is_an_error_result(sandbox):
    result = sandbox.run("data = bytearray(10 * 1024**3)\nprint('allocated')")
    assert not result.ok and not result.timed_out
    assert "allocated" not in result.stdout
    assert "MemoryError" in result.stderr or result.exit_code == -signal.SIGKILL


def test_five_hundred_forks_are_stopped_by_the_process_limit(sandbox):
    code = "import os\nprint(os.getpid(), flush=True)\npids = [os.fork() for _ in range(500)]\nprint('forked all')"
    result = sandbox.run(code, timeout_s=20)
    assert not result.ok and not result.timed_out
    assert "forked all" not in result.stdout
    assert "Resource temporarily unavailable" in result.stderr or "BlockingIOError" in result.stderr
    assert _group_members(int(result.stdout.split()[0])) == []


def test_an_interpreter_that_cannot_start_is_a_typed_error(tmp_path):
    with pytest.raises(SandboxUnavailableError, match="cannot start"):
        PythonSandbox(python=str(tmp_path / "no-python")).run("pass")


@pytest.mark.parametrize(
    ("code", "exit_code"),
    [("exit(3)", 3), ("import sys; sys.exit(4)", 4), ("quit(5)", 5), ("raise SystemExit('bye')", 1)],
)
def test_system_exit_is_an_error_result(sandbox, code, exit_code):
    result = sandbox.run(code)
    assert not result.ok and result.exit_code == exit_code
    assert result.error == f"exit code {exit_code}"


def test_exit_zero_and_plain_code_are_ok(sandbox):
    assert sandbox.run("exit(0)").ok
    result = sandbox.run("print(sum(range(10)))")
    assert result.ok and result.stdout == "45\n" and result.exit_code == 0 and result.error == ""


def test_exception_traceback_starts_at_the_code(sandbox):
    result = sandbox.run("def f():\n    raise ValueError('boom')\nf()")
    assert not result.ok and result.exit_code == 1
    assert "ValueError: boom" in result.stderr
    assert "child_bootstrap" not in result.stderr
    assert 'File "<sandbox>", line 3' in result.stderr


def test_syntax_error_is_an_error_result(sandbox):
    result = sandbox.run("def (:")
    assert not result.ok and "SyntaxError" in result.stderr


def test_the_caller_lives_on_after_every_failure(sandbox):
    for code in ("exit(3)", "bytearray(10 * 1024**3)", "import os; os.kill(os.getpid(), 9)", "1/0"):
        assert not sandbox.run(code, timeout_s=5).ok
    assert sandbox.run("print('still here')").stdout == "still here\n"


def test_killed_by_a_signal_is_reported(sandbox):
    result = sandbox.run("import os, signal; os.kill(os.getpid(), signal.SIGKILL)")
    assert not result.ok and result.exit_code == -signal.SIGKILL and "SIGKILL" in result.error


def test_cpu_limit_stops_a_busy_loop_before_the_wall_clock():
    sandbox = PythonSandbox(SandboxLimits(timeout_s=30, cpu_seconds=1))
    result = sandbox.run("while True: pass")
    assert not result.ok and not result.timed_out
    assert result.exit_code in (-signal.SIGXCPU, -signal.SIGKILL)


def test_file_size_limit():
    sandbox = PythonSandbox(SandboxLimits(file_size_bytes=1024 * 1024))
    result = sandbox.run("open('big', 'wb').write(b'x' * (4 * 1024 * 1024))\nprint('wrote')")
    assert not result.ok and "wrote" not in result.stdout
    assert result.exit_code == -signal.SIGXFSZ or "File too large" in result.stderr


def test_output_is_capped_and_the_rest_dropped():
    sandbox = PythonSandbox(SandboxLimits(max_output_bytes=1000))
    result = sandbox.run("import sys\nprint('x' * 5_000_000)\nsys.stderr.write('e' * 5000)")
    assert result.ok and result.truncated
    assert result.stdout == "x" * 1000 and result.stderr == "e" * 1000


def test_endless_output_stays_capped_until_the_timeout():
    sandbox = PythonSandbox(SandboxLimits(max_output_bytes=4096, timeout_s=1))
    result = sandbox.run("while True: print('spam' * 1000)")
    assert result.timed_out and result.truncated and len(result.stdout) == 4096


def test_stdin_is_empty(sandbox):
    result = sandbox.run("input()")
    assert not result.ok and "EOFError" in result.stderr


def test_standard_library_is_importable(sandbox):
    result = sandbox.run("import decimal, subprocess, json, sqlite3; print(decimal.Decimal('1.10') + 1)")
    assert result.ok, result
    assert result.stdout == "2.10\n"


@pytest.mark.skipif(os.geteuid() != 0, reason="only root switches to the unprivileged user")
def test_root_switches_to_a_uid_of_the_run_from_the_range(sandbox):
    result = sandbox.run("import os; print(os.getuid(), os.getgid(), os.getgroups())")
    assert result.ok, result
    uid, gid, groups = result.stdout.split(maxsplit=2)
    first, last = DEFAULT_UID_RANGE
    assert first <= int(uid) <= last and int(gid) == int(uid) and groups.strip() == "[]"
    assert not sandbox.run("open('/root/.probe', 'w')").ok


def test_shell_command_runs_in_the_same_sandbox(sandbox, monkeypatch):
    monkeypatch.setenv("JARVIS_TEST_SECRET", SECRET)
    result = sandbox.run_shell("echo $$; pwd; env | sort")
    assert result.ok, result
    pid, cwd, *env = result.stdout.split("\n")
    assert int(pid) != os.getpid() and cwd == "/work"
    assert SECRET not in result.stdout
    assert sorted(line.split("=")[0] for line in env if line) == ["HOME", "LANG", "LC_ALL", "PATH", "PWD", "TMPDIR"]


def test_shell_timeout_kills_the_commands_children(unjailed):
    sandbox = unjailed
    result = sandbox.run_shell("sleep 60 & echo $!; wait", timeout_s=1)
    assert result.timed_out and result.duration_s < 2
    assert not _alive(int(result.stdout))


def test_shell_exit_status(sandbox):
    result = sandbox.run_shell("echo out; echo err >&2; exit 7")
    assert not result.ok and result.exit_code == 7
    assert result.stdout == "out\n" and result.stderr == "err\n"


def test_concurrent_runs_do_not_mix(sandbox):
    results = {}

    def run(n: int) -> None:
        results[n] = sandbox.run(f"import time; time.sleep(0.2); print({n})")

    threads = [threading.Thread(target=run, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert {n: r.stdout.strip() for n, r in results.items()} == {n: str(n) for n in range(4)}


@pytest.mark.parametrize(
    "kwargs", [{"timeout_s": 0}, {"timeout_s": -1}, {"memory_bytes": 0}, {"max_processes": True}, {"cpu_seconds": "1"}]
)
def test_bad_limits_are_config_errors(kwargs):
    with pytest.raises(SandboxLimitError) as info:
        SandboxLimits(**kwargs)
    assert isinstance(info.value, ConfigError)
    assert next(iter(kwargs)) in str(info.value)


def test_result_text_for_a_model(sandbox):
    text = sandbox.run("print('hi'); exit(2)").to_text()
    assert text == "hi\n[error: exit code 2]"
    assert sandbox.run("pass").to_text() == "[no output]"


def test_a_timeout_does_not_wait_for_the_cpu_limit():
    started = time.monotonic()
    result = PythonSandbox(SandboxLimits(timeout_s=0.5, cpu_seconds=60)).run("import time; time.sleep(30)")
    assert result.timed_out and time.monotonic() - started < 1.5
