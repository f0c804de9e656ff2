"""What each wrapped runtime needs, whether this machine has it, and the one command that installs it.

:func:`checks` answers ``jarvis wrappers check``; :func:`setup_command` is what ``jarvis wrappers setup``
runs. The agents check the same things when a run starts (and raise
:class:`~jarvis_agents.wrapped.errors.RuntimeMissingError`); nothing here runs during an agent's run.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from typing import List, Mapping, Optional

import attrs

from jarvis_agents.sandbox.process import run_process
from jarvis_agents.wrapped import openhands_worker as worker
from jarvis_agents.wrapped.claude_code import CLAUDE_PACKAGE, KEY_VARIABLE, NODE_HINT, find_claude
from jarvis_agents.wrapped.errors import RuntimeMissingError
from jarvis_agents.wrapped.openhands import EXTRA, WORKER, docker_command
from jarvis_agents.wrapped.output import between_markers, last_json_object

__all__ = ["NAMES", "OPENHANDS_PACKAGES", "Check", "checks", "setup_command"]

#: The wrapped runtimes, by agent key.
NAMES = ("claude_code", "openhands")
#: What ``jarvis-agents[openhands]`` installs (pyproject.toml lists the same; a test keeps them equal).
OPENHANDS_PACKAGES = ("openhands-sdk>=1.0", "openhands-tools>=1.0", "openhands-workspace>=1.0")
_CHECK_TIMEOUT_S = 60.0


@attrs.frozen
class Check:
    """One thing ``agent`` needs: ``ok`` with where it was found, or not with how to get it."""

    agent: str
    need: str
    ok: bool
    detail: str
    how: str = ""


def _claude_checks(environ: Mapping[str, str]) -> List[Check]:
    search = environ.get("PATH", os.defpath)
    node = shutil.which("node", path=search)
    out = [Check("claude_code", "node", node is not None, node or "not on PATH", "" if node else NODE_HINT)]
    try:
        out.append(Check("claude_code", "claude", True, find_claude("claude", environ)))
    except RuntimeMissingError as exc:
        out.append(Check("claude_code", "claude", False, "cannot start", exc.install))
    has_key = bool(environ.get(KEY_VARIABLE))
    out.append(Check("claude_code", KEY_VARIABLE, has_key, "set" if has_key else "not set",
                     "" if has_key else f"export {KEY_VARIABLE}=... (https://console.anthropic.com/settings/keys)"))
    return out


def _sdk_check(python: str, runtime: str) -> Check:
    job = json.dumps({"check": True, "runtime": runtime}).encode()
    env = {"PATH": os.environ.get("PATH", os.defpath), "HOME": os.environ.get("HOME", "/")}
    try:
        outcome = run_process([python, str(WORKER)], stdin_data=job, env=env, cwd=None, timeout_s=_CHECK_TIMEOUT_S,
                              max_output_bytes=1 << 20)
    except OSError as exc:
        return Check("openhands", "openhands-sdk", False, f"cannot run {python}: {exc.strerror}", EXTRA)
    body, _ = between_markers(outcome.stdout.decode("utf-8", "replace"), worker.START, worker.END)
    found = last_json_object(body, lambda obj: "ok" in obj) if body is not None else None
    if found is not None and found.get("ok") is True:
        return Check("openhands", "openhands-sdk", True, f"importable by {python} (Python {found.get('python')})")
    if found is not None and found.get("kind") == "missing_module":
        version = found.get("python")
        return Check("openhands", "openhands-sdk", False, f"{found.get('module')} not importable by {python} "
                     f"(Python {version}; the SDK needs 3.12+)", EXTRA)
    return Check("openhands", "openhands-sdk", False, f"the check with {python} gave no answer", EXTRA)


def _openhands_checks(environ: Mapping[str, str], python: str, runtime: str) -> List[Check]:
    out = [_sdk_check(python, runtime)]
    if runtime == "docker":
        try:
            out.append(Check("openhands", "docker", True, docker_command(environ)))
        except RuntimeMissingError as exc:
            out.append(Check("openhands", "docker", False, "not on PATH", exc.install))
    has_key = bool(environ.get("LLM_API_KEY"))
    out.append(Check("openhands", "LLM_API_KEY", has_key, "set" if has_key else "not set",
                     "" if has_key else "export LLM_API_KEY=... (the model provider's key), or use a base_url server"))
    return out


def checks(
    names: Optional[List[str]] = None, *, environ: Optional[Mapping[str, str]] = None,
    python: Optional[str] = None, runtime: str = "docker",
) -> List[Check]:
    """Every need of the named runtimes (default: all), checked on this machine. ``python`` and ``runtime``
    are the ``openhands`` agent's options of the same names."""
    env = os.environ if environ is None else environ
    out: List[Check] = []
    for name in names or NAMES:
        if name == "claude_code":
            out += _claude_checks(env)
        else:
            out += _openhands_checks(env, python or sys.executable, runtime)
    return out


def setup_command(name: str, *, environ: Optional[Mapping[str, str]] = None,
                  python: Optional[str] = None) -> List[str]:
    """The command that installs runtime ``name``.

    :raises RuntimeMissingError: the installer itself is missing (``npm`` for ``claude_code``), or the
        interpreter is older than the OpenHands SDK allows.
    """
    env = os.environ if environ is None else environ
    if name == "claude_code":
        npm = shutil.which("npm", path=env.get("PATH", os.defpath))
        if npm is None:
            raise RuntimeMissingError(f"claude_code: installing the Claude Code CLI needs npm, which comes with "
                                      f"Node.js, and `npm` is not on PATH; {NODE_HINT}", missing="npm",
                                      install=NODE_HINT)
        return [npm, "install", "-g", CLAUDE_PACKAGE]
    interpreter = python or sys.executable
    if interpreter == sys.executable and sys.version_info < (3, 12):
        raise RuntimeMissingError(
            f"openhands: the OpenHands SDK needs Python 3.12+, and this is Python {sys.version.split()[0]}; run "
            "this with --python PATH (a 3.12+ interpreter, e.g. of a new venv), then give the agent the same "
            "python= option", missing="python>=3.12", install=EXTRA)
    return [interpreter, "-m", "pip", "install", *OPENHANDS_PACKAGES]
