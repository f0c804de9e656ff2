"""``openhands``: the OpenHands Software Agent SDK as a jarvis agent.

Each run starts a Python process (:mod:`jarvis_agents.wrapped.openhands_worker`, a standalone script) in
the interpreter that has the SDK, sends it the job as JSON on stdin and reads one result between markers
from its stdout (tolerantly: :func:`jarvis_agents.wrapped.output.between_markers`). A child process, not
a thread, because the SDK's run cannot be stopped from outside: the child can be killed at the timeout, and
the SDK's console output and logging stay out of this process.

Where OpenHands' tools (terminal, file editor) act: ``runtime="docker"`` (the default) runs them in the
OpenHands agent-server container (``openhands-workspace`` and the ``docker`` command are needed; Podman works
through its docker-compatible command); ``runtime="local"`` runs them directly on this host, in
``workspace``, without any isolation.

Nothing is installed here: ``pip install 'jarvis-agents[openhands]'`` (or ``jarvis wrappers setup
openhands``) installs the SDK once. It needs Python 3.12+; from an older jarvis interpreter, point
``python=`` at one that has it.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any, AsyncIterator, Dict, Mapping, Optional, Sequence

from jarvis_agents.wrapped import openhands_worker as worker
from jarvis_agents.wrapped.base import WrappedAgent, split_transcript
from jarvis_agents.wrapped.child import child_environment, run_child
from jarvis_agents.wrapped.errors import RuntimeMissingError, WrappedRunError, WrappedTimeoutError
from jarvis_agents.wrapped.output import between_markers, excerpt, last_json_object
from jarvis_core.agents.events import AgentEvent
from jarvis_core.agents.run import AgentRun
from jarvis_core.engine.redaction import Secret
from jarvis_core.errors import ConfigError
from jarvis_core.types import Usage

__all__ = ["EXTRA", "RUNTIMES", "WORKER", "OpenHandsAgent", "docker_command"]

WORKER = Path(__file__).with_name("openhands_worker.py")
EXTRA = "pip install 'jarvis-agents[openhands]'"
RUNTIMES = ("docker", "local")
_DOCKER_HINT = ("install Docker (https://docs.docker.com/engine/install/) or Podman with its docker-compatible "
                "command (podman-docker, https://podman.io/docs/installation), or pass runtime='local' to run "
                "OpenHands' tools on this host without isolation")
_TERM_GRACE_S = 20.0  # time for the worker to stop its container after SIGTERM


def docker_command(environ: Mapping[str, str]) -> str:
    """The ``docker`` command the docker runtime will use.

    :raises RuntimeMissingError: there is none on ``PATH`` (the message names Docker and Podman).
    """
    found = shutil.which("docker", path=environ.get("PATH", os.defpath))
    if found is None:
        podman = shutil.which("podman", path=environ.get("PATH", os.defpath))
        seen = "; podman is installed, but OpenHands calls `docker`: add podman-docker" if podman else ""
        raise RuntimeMissingError(f"openhands: runtime 'docker' needs the `docker` command, and it is not on PATH"
                                  f"{seen}; {_DOCKER_HINT}", missing="docker", install=_DOCKER_HINT)
    return found


def _usage(raw: Any) -> Usage:
    if not isinstance(raw, Mapping):
        return Usage()
    counts = [raw.get("prompt_tokens"), raw.get("completion_tokens")]
    prompt, completion = (int(v) if isinstance(v, int) and not isinstance(v, bool) and v > 0 else 0 for v in counts)
    return Usage(prompt, completion)


class OpenHandsAgent(WrappedAgent):
    """An OpenHands conversation per jarvis run. ``model`` is a LiteLLM model id (``anthropic/claude-sonnet-4-5``,
    ``openai/NAME`` with ``base_url`` for an OpenAI-compatible server); the jarvis ``engine`` is not used.

    :param runtime: ``docker`` (default: tools in the agent-server container) or ``local`` (on this host).
    :param image: the agent-server image for ``docker``.
    :param python: the interpreter with the OpenHands packages (default: this one).
    :param base_url: the model server's address, for a local or self-hosted model.
    :param key_variable: the environment variable holding the model's key (default ``LLM_API_KEY``); it is the
        only key the child sees. Not needed with ``base_url``.
    :param api_key: the key itself, instead of the variable.
    :param workspace: / :param timeout_s: / :param max_output_bytes: as :class:`WrappedAgent` (``max_turns``
        is OpenHands' iteration limit per run).
    """

    agent_id = "openhands"
    default_max_turns = 100

    def __init__(
        self,
        engine: Any = None,
        *,
        model: str,
        runtime: str = "docker",
        image: Optional[str] = None,
        python: Optional[str] = None,
        base_url: Optional[str] = None,
        key_variable: str = "LLM_API_KEY",
        api_key: Optional[str] = None,
        timeout_s: float = 1800.0,
        **options: Any,
    ) -> None:
        super().__init__(engine, model=model, timeout_s=timeout_s, **options)
        if runtime not in RUNTIMES:
            raise ConfigError(f"runtime must be one of {', '.join(RUNTIMES)}, got {runtime!r}",
                              key="agents.openhands.runtime")
        if not isinstance(key_variable, str) or not key_variable:
            raise ConfigError(f"key_variable must name an environment variable, got {key_variable!r}",
                              key="agents.openhands.key_variable")
        self.runtime = runtime
        self.image = image
        self.python = python or sys.executable
        self.base_url = base_url
        self.key_variable = key_variable
        self._api_key = Secret(api_key) if api_key else None

    def prerequisites(self, environ: Mapping[str, str]) -> Optional[Secret]:
        """Check what can be checked before starting: the interpreter, docker, the key (``None`` when a
        ``base_url`` server needs none). The SDK itself is checked by the worker, in its interpreter."""
        search = environ.get("PATH", os.defpath)
        if shutil.which(self.python, path=search) is None:
            raise RuntimeMissingError(f"openhands: the Python interpreter {self.python!r} is not there; pass "
                                      "python= the interpreter that has the OpenHands packages",
                                      missing=self.python, install=EXTRA)
        if self.runtime == "docker":
            docker_command(environ)
        key = self._api_key or Secret(environ.get(self.key_variable, ""))
        if not key and not self.base_url:
            raise RuntimeMissingError(f"openhands: no model key; set {self.key_variable} (the key of the provider "
                                      f"of {self.model!r}), pass api_key=, or pass base_url= for a server that "
                                      "needs none", missing=self.key_variable, install=f"export {self.key_variable}=...")
        return key or None

    def job(self, run: AgentRun) -> Dict[str, Any]:
        """What the worker gets on stdin (never the key: that is in its environment)."""
        system, prompt = split_transcript(run.messages)
        if system:
            prompt = f"{system}\n\n{prompt}"
        return {"prompt": prompt, "model": self.model, "base_url": self.base_url, "runtime": self.runtime,
                "image": self.image, "workspace": self.working_directory(), "max_iterations": self.max_turns,
                "key_variable": self.key_variable}

    async def loop(self, run: AgentRun) -> AsyncIterator[AgentEvent]:
        environ = self.environ()
        key = self.prerequisites(environ)
        secrets = {self.key_variable: key.reveal()} if key else {}
        env = child_environment(environ, secrets, {"PYTHONUNBUFFERED": "1", "PYTHONIOENCODING": "utf-8"})
        run.turns = 1
        outcome = await run_child([self.python, str(WORKER)], agent=self.agent_id,
                                  stdin_data=json.dumps(self.job(run)).encode("utf-8"), env=env,
                                  cwd=self.working_directory(), timeout_s=self.timeout_s,
                                  max_output_bytes=self.max_output_bytes, term_grace_s=_TERM_GRACE_S)
        masked = (key,) if key else ()
        stdout = outcome.stdout.decode("utf-8", "replace")
        stderr = outcome.stderr.decode("utf-8", "replace")
        if outcome.timed_out:
            raise WrappedTimeoutError(f"openhands: the OpenHands run did not finish within {self.timeout_s:g} s and "
                                      "was stopped; raise timeout_s for longer tasks", agent=self.agent_id,
                                      timeout=self.timeout_s, excerpt=excerpt(stderr, masked))
        result = self._result(stdout, stderr, outcome.exit_code, masked)
        content = result.get("content") if isinstance(result.get("content"), str) else ""
        metadata = {"status": result.get("status"), "cost": result.get("cost"), "runtime": self.runtime}
        async for event in self.answer(run, content or "", _usage(result.get("usage")), "final", **metadata):
            yield event

    def _result(self, stdout: str, stderr: str, exit_code: int, masked: Sequence[Secret]) -> Dict[str, Any]:
        body, why = between_markers(stdout, worker.START, worker.END)
        found = last_json_object(body, lambda obj: "ok" in obj) if body is not None else None
        if found is None:
            shown = excerpt(stderr or stdout, masked)
            problem = why or "no result object between the markers"
            raise WrappedRunError(f"openhands: the worker (exit status {exit_code}) gave no result: {problem}; "
                                  f"it printed: {shown or '(nothing)'}", agent=self.agent_id, exit_code=exit_code,
                                  excerpt=shown)
        if found.get("ok") is True:
            return found
        if found.get("kind") == "missing_module":
            raise self._missing_module(found)
        shown = excerpt(f"{found.get('type', 'error')}: {found.get('message', '')}", masked)
        raise WrappedRunError(f"openhands: the OpenHands run failed: {shown}", agent=self.agent_id,
                              exit_code=exit_code, excerpt=shown)

    def _missing_module(self, found: Mapping[str, Any]) -> RuntimeMissingError:
        module = str(found.get("module") or "openhands.sdk")
        version = str(found.get("python") or "")
        old = ""
        if version and tuple(int(p) for p in version.split(".")[:2] if p.isdigit()) < (3, 12):
            old = (f"; the OpenHands SDK needs Python 3.12+ and {self.python} is Python {version}: install it "
                   "into a 3.12+ environment and pass python= its interpreter")
        package = "openhands-workspace" if module.startswith("openhands.workspace") else (
            "openhands-tools" if module.startswith("openhands.tools") else "openhands-sdk")
        need = " (needed by runtime 'docker'; runtime='local' does without)" if package == "openhands-workspace" else ""
        return RuntimeMissingError(f"openhands: the Python package {package} is not installed for {self.python} "
                                   f"(import of {module!r} failed){need}; {EXTRA}{old}",
                                   missing=package, install=EXTRA)

    def __repr__(self) -> str:
        return f"<OpenHandsAgent model={self.model!r} runtime={self.runtime!r}>"
