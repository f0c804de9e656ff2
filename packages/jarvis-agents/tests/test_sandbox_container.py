"""ContainerRunner with a fake ``docker``/``podman`` on PATH that records its arguments and, for ``run``,
executes the real image entry point on the same stdin, so the whole job protocol runs end to end."""

from __future__ import annotations

import itertools
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from jarvis_agents.sandbox import (
    ContainerRunner,
    ContainerRuntimeError,
    ContainerRuntimeNotFoundError,
    Mount,
    MountPolicy,
    MountRefusedError,
    SandboxLimitError,
    SandboxLimits,
)
from jarvis_agents.sandbox.container import IMAGE_DIR

SECRET = "ghp_fake0secret0value0for0tests"
ENTRYPOINT = IMAGE_DIR / "entrypoint.py"

FAKE_RUNTIME = Path(__file__).parent / "data" / "sandbox" / "fake_runtime.py"


def install_fake_runtime(directory: Path, name: str, monkeypatch: pytest.MonkeyPatch, log: Path) -> Path:
    """Put the recording fake runtime on PATH as ``name`` (with /usr/bin and /bin for the shell)."""
    directory.mkdir(exist_ok=True)
    path = directory / name
    path.write_text(f"#!{sys.executable}\n" + FAKE_RUNTIME.read_text())
    path.chmod(0o755)
    monkeypatch.setenv("PATH", f"{directory}{os.pathsep}/usr/bin{os.pathsep}/bin")
    monkeypatch.setenv("FAKE_RUNTIME_LOG", str(log))
    monkeypatch.setenv("FAKE_RUNTIME_ENTRYPOINT", str(ENTRYPOINT))
    return path


@pytest.fixture
def fake_docker(tmp_path, monkeypatch):
    log = tmp_path / "runtime.log"
    install_fake_runtime(tmp_path / "bin", "docker", monkeypatch, log)

    def calls() -> list[list[str]]:
        return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []

    return calls


def _pairs(argv: list[str]) -> set[tuple[str, str]]:
    return set(itertools.pairwise(argv))


def test_every_hardening_flag_is_present_and_no_secret_is_in_argv(fake_docker, tmp_path):
    limits = SandboxLimits(timeout_s=20, memory_bytes=256 * 1024 * 1024, max_processes=50)
    runner = ContainerRunner(limits=limits, cpus=0.5, user="1234:1234")
    result = runner.run(
        f"import os; print(os.environ['API_TOKEN'] == {SECRET!r}, os.environ.get('JARVIS_HOME'))",
        secrets={"API_TOKEN": SECRET},
    )
    assert result.ok, result
    assert result.stdout == "True None\n"  # the secret arrived, through stdin
    (argv,) = fake_docker()
    assert Path(argv[0]).name == "docker" and argv[1] == "run"
    for flag in ("--rm", "--read-only", "-i"):
        assert flag in argv
    pairs = _pairs(argv)
    for pair in [
        ("--network", "none"),
        ("--cap-drop", "ALL"),
        ("--security-opt", "no-new-privileges"),
        ("--pids-limit", "50"),
        ("--memory", str(256 * 1024 * 1024)),
        ("--memory-swap", str(256 * 1024 * 1024)),
        ("--cpus", "0.5"),
        ("--user", "1234:1234"),
    ]:
        assert pair in pairs, pair
    assert argv[-1] == "jarvis-sandbox:latest"
    assert not any(SECRET in arg for arg in argv)
    assert not any(arg in ("-e", "--env", "--env-file") for arg in argv)


def test_shell_job_and_failure_results_come_back(fake_docker):
    runner = ContainerRunner(limits=SandboxLimits(timeout_s=20))
    result = runner.run_shell("echo hi; exit 3")
    assert not result.ok and result.exit_code == 3 and result.stdout == "hi\n" and result.error == "exit code 3"


def test_job_timeout_inside_the_container(fake_docker):
    result = ContainerRunner(limits=SandboxLimits(timeout_s=20)).run("while True: pass", timeout_s=1)
    assert result.timed_out and not result.ok and result.exit_code == -9


def test_checked_mounts_are_read_only_volumes(fake_docker, tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    (data / "notes.txt").write_text("x")
    runner = ContainerRunner(mount_policy=MountPolicy(allowed_roots=(str(tmp_path),)))
    runner.run("pass", mounts=[Mount(str(data), "/data")])
    (argv,) = fake_docker()
    assert ("-v", f"{data.resolve()}:/data:ro") in _pairs(argv)


def test_a_refused_mount_never_reaches_the_runtime(fake_docker, tmp_path):
    (tmp_path / ".ssh").mkdir()
    runner = ContainerRunner(mount_policy=MountPolicy(allowed_roots=(str(tmp_path),)))
    with pytest.raises(MountRefusedError, match=r"\.ssh"):
        runner.run("pass", mounts=[Mount(str(tmp_path / ".ssh"), "/keys")])
    assert fake_docker() == []


def test_without_docker_or_podman_the_error_names_both(tmp_path, monkeypatch):
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    with pytest.raises(ContainerRuntimeNotFoundError) as info:
        ContainerRunner().run("print(1)")
    message = str(info.value)
    assert "docker" in message and "podman" in message and "install" in message


def test_asking_for_podman_without_it_says_podman_is_missing(tmp_path, monkeypatch):
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    with pytest.raises(ContainerRuntimeNotFoundError) as info:
        ContainerRunner(runtime="podman").run("print(1)")
    assert str(info.value).startswith("no container runtime: 'podman' is missing: it is not on PATH; ")


def test_podman_is_used_when_docker_is_missing(tmp_path, monkeypatch):
    install_fake_runtime(tmp_path / "bin", "podman", monkeypatch, tmp_path / "log")
    runner = ContainerRunner()
    assert Path(runner.runtime_path()).name == "podman"
    assert runner.run("print(2)").stdout == "2\n"


def test_runtime_failure_is_a_typed_error(fake_docker, monkeypatch):
    monkeypatch.setenv("FAKE_RUNTIME_MODE", "no-daemon")
    with pytest.raises(ContainerRuntimeError, match="Cannot connect to the Docker daemon"):
        ContainerRunner().run("pass")


def test_an_image_that_does_not_answer_a_result_is_a_typed_error(fake_docker, monkeypatch):
    monkeypatch.setenv("FAKE_RUNTIME_MODE", "garbage")
    with pytest.raises(ContainerRuntimeError, match="did not answer with a job result"):
        ContainerRunner().run("pass")


def test_a_container_that_hangs_is_killed_by_name(fake_docker, monkeypatch):
    monkeypatch.setenv("FAKE_RUNTIME_MODE", "hang")
    result = ContainerRunner(limits=SandboxLimits(timeout_s=0.5), startup_grace_s=0.5).run("pass")
    assert result.timed_out and not result.ok
    run_argv, kill_argv = fake_docker()
    name = run_argv[run_argv.index("--name") + 1]
    assert kill_argv[1:] == ["kill", name]


def test_build_image_uses_the_shipped_directory(fake_docker):
    ContainerRunner(image="jarvis-sandbox:test").build_image()
    ContainerRunner(image="jarvis-agent:test").build_image(
        dockerfile="Dockerfile.agent", build_args={"JARVIS_PACKAGES": "jarvis-core==0.1.0 jarvis-agents==0.1.0"}
    )
    plain, agent = fake_docker()
    assert plain[1:] == ["build", "-t", "jarvis-sandbox:test", "-f", str(IMAGE_DIR / "Dockerfile"), str(IMAGE_DIR)]
    assert agent[1:] == ["build", "-t", "jarvis-agent:test", "-f", str(IMAGE_DIR / "Dockerfile.agent"),
                         "--build-arg", "JARVIS_PACKAGES=jarvis-core==0.1.0 jarvis-agents==0.1.0", str(IMAGE_DIR)]
    with pytest.raises(SandboxLimitError, match="no Dockerfile"):
        ContainerRunner().build_image(dockerfile="../../etc/passwd")


def test_secrets_are_not_in_the_repr():
    assert SECRET not in repr(ContainerRunner())


def _docker_daemon_up() -> bool:
    docker = shutil.which("docker")
    if docker is None:
        return False
    return subprocess.run([docker, "info"], capture_output=True, timeout=20, check=False).returncode == 0


@pytest.mark.live
@pytest.mark.skipif(not _docker_daemon_up(), reason="no reachable docker daemon")
def test_real_docker_runs_a_job_without_network():
    runner = ContainerRunner(image="jarvis-sandbox:test")
    runner.build_image()
    code = textwrap.dedent(
        """
        import os, socket
        try:
            socket.create_connection(("1.1.1.1", 53), timeout=2)
            print("network")
        except OSError:
            print("no network")
        print(os.getuid())
        """
    )
    result = runner.run(code, secrets={"TOKEN": SECRET})
    assert result.ok, result
    assert result.stdout.split() == ["no", "network", "65534"]
