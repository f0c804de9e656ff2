"""``ContainerRunner``: run a sandbox job in a hardened, throw-away docker or podman container.

Every container is started with ``--rm --network none --read-only --cap-drop ALL --security-opt
no-new-privileges``, a process, memory (no swap) and CPU limit, an unprivileged ``--user``, and a small
``/tmp`` tmpfs as the only writable place. The job (code or command, limits, secrets) is written to the
container's stdin as JSON; nothing secret is ever on the command line, where ``ps`` would show it. The
image's entry point (``image/entrypoint.py``, shipped with this package; build it with
:meth:`ContainerRunner.build_image`) runs the job and answers with one JSON result.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import threading
import uuid
from pathlib import Path
from typing import Any, Iterator, List, Mapping, Optional, Sequence, Tuple

from jarvis_agents.sandbox.errors import ContainerRuntimeError, ContainerRuntimeNotFoundError, SandboxLimitError
from jarvis_agents.sandbox.limits import SandboxLimits
from jarvis_agents.sandbox.mounts import Mount, MountPolicy
from jarvis_agents.sandbox.process import run_process
from jarvis_agents.sandbox.result import SandboxResult
from jarvis_agents.sandbox.session import ContainerSession

__all__ = ["DEFAULT_IMAGE", "IMAGE_DIR", "RUNTIMES", "ContainerRunner"]

DEFAULT_IMAGE = "jarvis-sandbox:latest"
IMAGE_DIR = Path(__file__).with_name("image")
RUNTIMES = ("docker", "podman")
_RUNTIME_FAILURE = {125, 126, 127}  # docker/podman: the runtime itself failed, the command could not run
_KILL_TIMEOUT_S = 15.0
_INSTALL_HINT = "install Docker (https://docs.docker.com/engine/install/) or Podman (https://podman.io/docs/installation)"


class ContainerRunner:
    """Run Python code or shell commands in a container; answers are :class:`SandboxResult` values.

    ``runtime`` is ``"docker"``, ``"podman"`` or a path; by default the first of them on ``PATH`` (looked
    up when a run starts). ``limits.memory_bytes`` and ``limits.max_processes`` become ``--memory`` and
    ``--pids-limit``; ``cpus`` is ``--cpus``; ``user`` is ``--user``. ``mount_policy`` checks every mount;
    ``max_concurrent`` containers run at once, further runs wait. The runtime gets ``startup_grace_s``
    beyond the job's timeout to start the container and answer; after that the container is killed.
    """

    def __init__(
        self,
        image: str = DEFAULT_IMAGE,
        *,
        runtime: Optional[str] = None,
        limits: Optional[SandboxLimits] = None,
        cpus: float = 1.0,
        user: str = "65534:65534",
        tmpfs_bytes: int = 64 * 1024 * 1024,
        mount_policy: Optional[MountPolicy] = None,
        max_concurrent: int = 4,
        startup_grace_s: float = 60.0,
    ) -> None:
        if cpus <= 0 or max_concurrent < 1 or tmpfs_bytes <= 0 or startup_grace_s < 0:
            raise SandboxLimitError("cpus, max_concurrent and tmpfs_bytes must be positive, startup_grace_s not negative")
        self.image = image
        self.runtime = runtime
        self.limits = limits or SandboxLimits()
        self.cpus = cpus
        self.user = user
        self.tmpfs_bytes = tmpfs_bytes
        self.mount_policy = mount_policy or MountPolicy()
        self.startup_grace_s = startup_grace_s
        self._slots = threading.BoundedSemaphore(max_concurrent)

    def __repr__(self) -> str:
        return f"ContainerRunner(image={self.image!r}, runtime={self.runtime!r}, limits={self.limits!r})"

    def runtime_path(self) -> str:
        """The runtime executable; :class:`ContainerRuntimeNotFoundError` naming docker and podman if none."""
        names = (self.runtime,) if self.runtime else RUNTIMES
        for name in names:
            found = shutil.which(name)
            if found:
                return found
        wanted = f"{self.runtime!r} is missing: it is not" if self.runtime else "neither 'docker' nor 'podman' is"
        raise ContainerRuntimeNotFoundError(f"no container runtime: {wanted} on PATH; {_INSTALL_HINT}")

    def command(self, runtime: str, name: str, mounts: Sequence[Mount] = ()) -> List[str]:
        """The full ``run`` command line (mounts already checked). It never holds a secret."""
        limits = self.limits
        argv = [
            runtime, "run", "--rm", "-i",
            "--name", name, "--label", "jarvis.sandbox=1",
            "--network", "none",
            "--read-only",
            "--cap-drop", "ALL",
            "--security-opt", "no-new-privileges",
            "--pids-limit", str(limits.max_processes),
            "--memory", str(limits.memory_bytes),
            "--memory-swap", str(limits.memory_bytes),
            "--cpus", f"{self.cpus:g}",
            "--user", self.user,
            "--tmpfs", f"/tmp:rw,nosuid,nodev,size={self.tmpfs_bytes}",
            "--workdir", "/tmp",
        ]
        for mount in mounts:
            argv += ["-v", mount.volume_arg()]
        argv.append(self.image)
        return argv

    def run(self, code: str, *, timeout_s: Optional[float] = None, **kwargs: Any) -> SandboxResult:
        """Run Python ``code`` in a container. Keywords as :meth:`run_job`."""
        return self.run_job({"kind": "python", "code": code}, timeout_s=timeout_s, **kwargs)

    def run_shell(self, command: str, *, timeout_s: Optional[float] = None, **kwargs: Any) -> SandboxResult:
        """Run ``command`` with ``/bin/sh -c`` in a container. Keywords as :meth:`run_job`."""
        return self.run_job({"kind": "shell", "command": command}, timeout_s=timeout_s, **kwargs)

    def run_job(
        self,
        job: Mapping[str, Any],
        *,
        timeout_s: Optional[float] = None,
        mounts: Sequence[Mount] = (),
        secrets: Optional[Mapping[str, str]] = None,
    ) -> SandboxResult:
        """Run one job (``kind`` plus ``code`` or ``command``); ``secrets`` reach the job's environment
        through stdin only. A failure of the job is ``ok=False``; a failure of the runtime or the image
        raises :class:`ContainerRuntimeError`."""
        limits = self.limits.with_timeout(timeout_s)
        runtime, name, argv, payload = self._prepare(job, limits, mounts, secrets)
        wall_s = limits.timeout_s + self.startup_grace_s
        with self._slots:
            outcome = run_process(
                argv,
                stdin_data=payload,
                env=os.environ,
                cwd=None,
                timeout_s=wall_s,
                # the answer carries two capped streams as JSON (escaping can grow them up to 6x)
                max_output_bytes=12 * limits.max_output_bytes + 65536,
                on_timeout=lambda: self._kill(runtime, name),
            )
        if outcome.timed_out:
            return SandboxResult(
                ok=False, exit_code=None, timed_out=True, duration_s=outcome.duration_s,
                error=f"the container did not answer within {wall_s:g} s; it was killed",
            )
        return _parse_answer(runtime, outcome.exit_code, outcome.stdout, outcome.stderr)

    @contextlib.contextmanager
    def session(
        self,
        job: Mapping[str, Any],
        *,
        timeout_s: Optional[float] = None,
        mounts: Sequence[Mount] = (),
        secrets: Optional[Mapping[str, str]] = None,
    ) -> Iterator[ContainerSession]:
        """Start a container for a conversational job (an ``agent`` job): the job is sent as the first line,
        and the caller exchanges JSON lines with it. The container is killed after ``timeout_s`` plus the
        startup grace, and when the block ends."""
        limits = self.limits.with_timeout(timeout_s)
        runtime, name, argv, payload = self._prepare(job, limits, mounts, secrets)
        with self._slots, ContainerSession(
            argv, timeout_s=limits.timeout_s + self.startup_grace_s, on_timeout=lambda: self._kill(runtime, name)
        ) as session:
            session.send(json.loads(payload))
            yield session

    def _prepare(
        self, job: Mapping[str, Any], limits: SandboxLimits, mounts: Sequence[Mount],
        secrets: Optional[Mapping[str, str]],
    ) -> Tuple[str, str, List[str], bytes]:
        checked = [self.mount_policy.check(m) for m in mounts]
        runtime = self.runtime_path()
        name = f"jarvis-sandbox-{uuid.uuid4().hex[:12]}"
        payload = {
            **job,
            "version": 1,
            "timeout_s": limits.timeout_s,
            "max_output_bytes": limits.max_output_bytes,
            "secrets": dict(secrets or {}),
        }
        return runtime, name, self.command(runtime, name, checked), json.dumps(payload).encode("utf-8") + b"\n"

    def build_image(
        self,
        *,
        dockerfile: str = "Dockerfile",
        build_args: Optional[Mapping[str, str]] = None,
        timeout_s: float = 900.0,
    ) -> None:
        """Build :attr:`image` from a Dockerfile shipped in :data:`IMAGE_DIR`: ``Dockerfile`` (Python and the
        entry point: code and shell jobs) or ``Dockerfile.agent`` (plus jarvis, for :class:`SandboxedAgent`;
        ``build_args={"JARVIS_PACKAGES": ...}`` says what to install)."""
        if "/" in dockerfile or not (IMAGE_DIR / dockerfile).is_file():
            raise SandboxLimitError(f"no Dockerfile {dockerfile!r} in {IMAGE_DIR}")
        runtime = self.runtime_path()
        argv = [runtime, "build", "-t", self.image, "-f", str(IMAGE_DIR / dockerfile)]
        for key, value in (build_args or {}).items():
            argv += ["--build-arg", f"{key}={value}"]
        try:
            done = subprocess.run(
                [*argv, str(IMAGE_DIR)], capture_output=True, text=True, timeout=timeout_s, check=False
            )
        except subprocess.TimeoutExpired:
            raise ContainerRuntimeError(f"building {self.image} took longer than {timeout_s:g} s") from None
        if done.returncode != 0:
            raise ContainerRuntimeError(f"building {self.image} failed: {_excerpt(done.stderr)}")

    def _kill(self, runtime: str, name: str) -> None:
        try:
            subprocess.run([runtime, "kill", name], capture_output=True, timeout=_KILL_TIMEOUT_S, check=False)
        except subprocess.TimeoutExpired:
            pass


def _parse_answer(runtime: str, exit_code: int, stdout: bytes, stderr: bytes) -> SandboxResult:
    tool = Path(runtime).name
    if exit_code in _RUNTIME_FAILURE:
        raise ContainerRuntimeError(f"{tool} could not run the sandbox container: {_excerpt(stderr)}")
    lines = stdout.decode("utf-8", "replace").strip().splitlines()
    try:
        return SandboxResult.from_dict(json.loads(lines[-1]) if lines else None)
    except (ValueError, TypeError):
        raise ContainerRuntimeError(
            f"the sandbox container (exit status {exit_code}) did not answer with a job result; is the image "
            f"built from the jarvis sandbox image (ContainerRunner.build_image())? stderr: {_excerpt(stderr)}"
        ) from None


def _excerpt(text: str | bytes, limit: int = 500) -> str:
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    text = text.strip()
    return text if len(text) <= limit else text[:limit] + "…"
