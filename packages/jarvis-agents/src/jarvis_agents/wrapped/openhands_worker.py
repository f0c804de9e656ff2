"""Runs one OpenHands conversation; started by :class:`jarvis_agents.wrapped.openhands.OpenHandsAgent` as
``PYTHON openhands_worker.py`` with the job as JSON on stdin.

This file is a standalone script: it imports only the standard library and the OpenHands packages, so it
runs in any interpreter that has them (OpenHands needs Python 3.12+; jarvis runs on 3.10+). The SDK, its
console visualizer and docker's logs write to stdout; everything written to file descriptor 1 is sent to
stderr while the conversation runs, and the one result is written to the real stdout between
:data:`START` and :data:`END` as a JSON object::

    {"ok": true, "content": "...", "usage": {"prompt_tokens": n, "completion_tokens": n}, "cost": x, "status": "..."}
    {"ok": false, "kind": "missing_module", "module": "openhands.sdk", "python": "3.11.7"}
    {"ok": false, "kind": "error", "type": "RuntimeError", "message": "..."}

A job with ``"check": true`` only imports the packages its runtime needs and answers ``{"ok": true, "kind":
"check", "python": "3.12.4"}`` (``jarvis wrappers check`` uses it).

``SIGTERM`` ends the conversation through Python's normal unwinding, so a docker workspace stops its
container before the process exits.
"""

import importlib
import json
import os
import platform
import signal
import sys
from types import FrameType, ModuleType
from typing import Any, Dict, Optional, Tuple

START = "---JARVIS-OPENHANDS-RESULT-START---"
END = "---JARVIS-OPENHANDS-RESULT-END---"
DEFAULT_IMAGE = "ghcr.io/openhands/agent-server:latest-python"


class _Terminated(Exception):
    pass


def _on_term(signum: int, frame: Optional[FrameType]) -> None:
    raise _Terminated()


def _emit(fd: int, payload: Dict[str, Any]) -> None:
    data = (START + "\n" + json.dumps(payload) + "\n" + END + "\n").encode("utf-8")
    while data:
        data = data[os.write(fd, data):]


def _import(name: str) -> ModuleType:
    return importlib.import_module(name)


def _final_response(sdk_conversation_utils: Optional[ModuleType], conversation: Any) -> str:
    events = list(conversation.state.events)
    if sdk_conversation_utils is not None:
        return str(sdk_conversation_utils.get_agent_final_response(events) or "")
    for event in reversed(events):  # an SDK without the helper: the agent's last text message
        if getattr(event, "source", None) == "agent" and hasattr(event, "llm_message"):
            content = getattr(event.llm_message, "content", None) or []
            return "".join(getattr(part, "text", "") for part in content)
    return ""


def _usage(conversation: Any) -> Tuple[Dict[str, int], float]:
    stats = getattr(conversation, "conversation_stats", None)
    metrics = stats.get_combined_metrics() if stats is not None else None
    tokens = getattr(metrics, "accumulated_token_usage", None)
    usage = {"prompt_tokens": int(getattr(tokens, "prompt_tokens", 0) or 0),
             "completion_tokens": int(getattr(tokens, "completion_tokens", 0) or 0)}
    return usage, float(getattr(metrics, "accumulated_cost", 0.0) or 0.0)


def _platform() -> str:
    machine = platform.machine().lower()
    return "linux/arm64" if "arm" in machine or "aarch64" in machine else "linux/amd64"


def run(job: Dict[str, Any]) -> Dict[str, Any]:
    modules = ["openhands.sdk", "openhands.tools.preset.default"]
    if job["runtime"] == "docker":
        modules.append("openhands.workspace")
    loaded: Dict[str, ModuleType] = {}
    for name in modules:
        try:
            loaded[name] = _import(name)
        except ImportError as exc:
            return {"ok": False, "kind": "missing_module", "module": getattr(exc, "name", None) or name,
                    "wanted": name, "python": platform.python_version()}
    if job.get("check"):
        return {"ok": True, "kind": "check", "python": platform.python_version()}
    try:
        utils = _import("openhands.sdk.conversation.response_utils")
    except ImportError:
        utils = None
    sdk = loaded["openhands.sdk"]
    key = os.environ.get(job["key_variable"]) if job.get("key_variable") else None
    llm_options: Dict[str, Any] = {"model": job["model"]}
    if key:
        llm_options["api_key"] = key
    if job.get("base_url"):
        llm_options["base_url"] = job["base_url"]
    llm = sdk.LLM(**llm_options)
    agent = loaded["openhands.tools.preset.default"].get_default_agent(llm=llm, cli_mode=True)
    options = {"max_iteration_per_run": job["max_iterations"], "visualizer": None}
    if job["runtime"] == "docker":
        workspace = loaded["openhands.workspace"].DockerWorkspace(
            server_image=job.get("image") or DEFAULT_IMAGE, mount_dir=job["workspace"], platform=_platform())
        with workspace:
            conversation = sdk.Conversation(agent=agent, workspace=workspace, **options)
            return _converse(conversation, job, utils)
    conversation = sdk.Conversation(agent=agent, workspace=job["workspace"], **options)
    return _converse(conversation, job, utils)


def _converse(conversation: Any, job: Dict[str, Any], utils: Optional[ModuleType]) -> Dict[str, Any]:
    try:
        conversation.send_message(job["prompt"])
        conversation.run()
        usage, cost = _usage(conversation)
        status = getattr(conversation.state, "execution_status", "")
        return {"ok": True, "content": _final_response(utils, conversation), "usage": usage, "cost": cost,
                "status": str(getattr(status, "value", status))}
    finally:
        close = getattr(conversation, "close", None)
        if close is not None:
            close()


def main() -> int:
    # Run as a script, this file's directory is sys.path[0]; it holds modules (openhands.py among them)
    # that must not shadow the SDK's packages.
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    result_fd = os.dup(1)
    os.dup2(2, 1)  # anything the SDK prints goes to stderr; stdout carries only the result
    sys.stdout = sys.stderr
    signal.signal(signal.SIGTERM, _on_term)
    try:
        job: Dict[str, Any] = json.loads(sys.stdin.read())
        payload = run(job)
    except _Terminated:
        payload = {"ok": False, "kind": "terminated", "type": "SIGTERM", "message": "stopped by the parent"}
    except Exception as exc:  # every failure is reported to the parent, which raises a typed error
        payload = {"ok": False, "kind": "error", "type": type(exc).__name__, "message": str(exc)[:4000]}
    _emit(result_fd, payload)
    return 0


if __name__ == "__main__":
    sys.exit(main())
