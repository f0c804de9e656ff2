"""The container image's entry point, run directly as a process (as the image runs it), and the Dockerfile
that ships it: the ENTRYPOINT names the file the image copies, and that file exists."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import psutil
import pytest

from jarvis_agents.sandbox import SandboxResult
from jarvis_agents.sandbox.container import IMAGE_DIR

ENTRYPOINT = IMAGE_DIR / "entrypoint.py"


def _run(job: object, raw: bytes | None = None) -> tuple[int, dict]:
    data = raw if raw is not None else json.dumps(job).encode()
    done = subprocess.run(
        [sys.executable, "-I", str(ENTRYPOINT)], input=data, capture_output=True, timeout=60, check=False
    )
    lines = done.stdout.decode().splitlines()
    assert len(lines) == 1, done  # exactly one JSON answer, nothing else on stdout
    return done.returncode, json.loads(lines[0])


def _job(**fields: object) -> dict:
    return {"version": 1, "timeout_s": 10, "max_output_bytes": 10_000, **fields}


def test_python_job_with_secret_in_its_environment_only():
    status, answer = _run(
        _job(kind="python", code="import os; print(os.environ['TOKEN'], os.getcwd())", secrets={"TOKEN": "t0k"})
    )
    assert status == 0
    result = SandboxResult.from_dict(answer)
    assert result.ok and result.exit_code == 0
    token, cwd = result.stdout.split()
    assert token == "t0k" and "/job-" in cwd


def test_shell_job_exit_status_and_streams():
    _, answer = _run(_job(kind="shell", command="echo out; echo err >&2; exit 5"))
    result = SandboxResult.from_dict(answer)
    assert not result.ok and result.exit_code == 5 and result.error == "exit code 5"
    assert (result.stdout, result.stderr) == ("out\n", "err\n")


def test_timeout_kills_the_jobs_process_group():
    _, answer = _run(_job(kind="shell", command="sleep 60 & echo $!; while :; do :; done", timeout_s=1))
    result = SandboxResult.from_dict(answer)
    assert result.timed_out and not result.ok and result.exit_code == -9
    sleeper = int(result.stdout)
    assert not psutil.pid_exists(sleeper) or psutil.Process(sleeper).status() == psutil.STATUS_ZOMBIE


def test_output_is_capped():
    _, answer = _run(_job(kind="python", code="print('y' * 100000)", max_output_bytes=100))
    result = SandboxResult.from_dict(answer)
    assert result.ok and result.truncated and result.stdout == "y" * 100


@pytest.mark.parametrize(
    ("job", "message"),
    [
        ({"version": 2, "kind": "python", "code": "", "timeout_s": 1, "max_output_bytes": 1}, "version"),
        (_job(kind="perl", code="1"), "kind"),
        (_job(kind="python"), "'code'"),
        (_job(kind="shell", command="true", timeout_s=-1), "timeout_s"),
        (_job(kind="python", code="", secrets={"BAD NAME": "x"}), "secrets"),
        ([1, 2], "object"),
    ],
)
def test_bad_jobs_are_answered_with_an_error_and_status_2(job, message):
    status, answer = _run(job)
    assert status == 2
    result = SandboxResult.from_dict(answer)
    assert not result.ok and result.error.startswith("bad job:") and message in result.error


def test_not_json_is_answered_too():
    status, answer = _run(None, raw=b"\xff not json")
    assert status == 2 and "not JSON" in answer["error"]


@pytest.mark.parametrize("name", ["Dockerfile", "Dockerfile.agent"])
def test_dockerfile_entrypoint_is_the_shipped_file(name):
    dockerfile = (IMAGE_DIR / name).read_text()
    copies = dict(re.findall(r"^COPY\s+(\S+)\s+(\S+)\s*$", dockerfile, re.M))
    (entry,) = re.findall(r"^ENTRYPOINT\s+(\[.*\])\s*$", dockerfile, re.M)
    script = json.loads(entry)[-1]
    assert script in copies.values()
    source = next(src for src, dst in copies.items() if dst == script)
    assert (IMAGE_DIR / source).is_file()
    (user,) = re.findall(r"^USER\s+(\S+)\s*$", dockerfile, re.M)
    assert not user.startswith(("0", "root"))


def test_result_from_dict_refuses_wrong_types():
    good = SandboxResult(ok=True, exit_code=0).to_dict()
    assert SandboxResult.from_dict(good) == SandboxResult(ok=True, exit_code=0)
    for key, bad in [("ok", "yes"), ("exit_code", True), ("stdout", None), ("duration_s", "1")]:
        with pytest.raises(ValueError, match=key):
            SandboxResult.from_dict({**good, key: bad})
