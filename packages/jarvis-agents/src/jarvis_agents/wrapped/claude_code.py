"""``claude_code``: Anthropic's Claude Code CLI as a jarvis agent.

Each run starts the ``claude`` command once, non-interactively::

    claude -p --output-format json --model MODEL --max-turns N [--append-system-prompt TEXT]
           [--allowedTools A B …] [--disallowedTools C …] [--permission-mode MODE] [--resume SESSION]

with the prompt on stdin (never on the command line) and an environment holding only what the CLI needs
plus ``ANTHROPIC_API_KEY`` (:mod:`jarvis_agents.wrapped.child`). ``--output-format json`` makes the CLI
print one result object when it is done (``{"type": "result", "subtype": "success", "is_error": false,
"result": …, "num_turns": …, "usage": {…}, "total_cost_usd": …, "session_id": …}``); that object is the
end marker of a run and is looked for tolerantly (:func:`jarvis_agents.wrapped.output.last_json_object`).

**Continuity.** Claude Code keeps a conversation as a session. The agent remembers the ``session_id`` of
each result and resumes it on its next run (``--resume SESSION``, only the new message on stdin: the session
holds the history); ``session_id=`` (or ``[agents.claude_code] session_id``) resumes a known session from the
first run. ``AgentResult.metadata["session_id"]`` names the session of every run.

Nothing is installed here. The CLI is installed once, outside any run, with
``npm install -g @anthropic-ai/claude-code`` (``jarvis wrappers setup claude_code`` runs exactly that).
"""

from __future__ import annotations

import os
import shutil
from typing import Any, AsyncIterator, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from jarvis_agents.wrapped.base import WrappedAgent, split_transcript, str_tuple
from jarvis_agents.wrapped.child import child_environment, run_child
from jarvis_agents.wrapped.errors import RuntimeMissingError, WrappedRunError, WrappedTimeoutError
from jarvis_agents.wrapped.output import excerpt, last_json_object
from jarvis_core.agents.events import AgentEvent
from jarvis_core.agents.run import AgentRun
from jarvis_core.engine.redaction import Secret
from jarvis_core.errors import ConfigError
from jarvis_core.types import Usage

__all__ = ["CLAUDE_PACKAGE", "KEY_VARIABLE", "NODE_HINT", "ClaudeCodeAgent", "find_claude", "usage_of"]

CLAUDE_PACKAGE = "@anthropic-ai/claude-code"
SETUP_HINT = f"install it with `npm install -g {CLAUDE_PACKAGE}` (or `jarvis wrappers setup claude_code`)"
NODE_HINT = "install Node.js 18 or newer (https://nodejs.org/en/download, or your system's package manager)"
KEY_VARIABLE = "ANTHROPIC_API_KEY"
_USAGE_PROMPT_KEYS = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")


def _shebang_program(path: str) -> Optional[str]:
    """The interpreter a script's ``#!`` line runs (``node`` for ``#!/usr/bin/env node``), or ``None``."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(256)
    except OSError:
        return None
    if not head.startswith(b"#!"):
        return None
    words = head[2:].split(b"\n", 1)[0].decode("utf-8", "replace").split()
    if words and os.path.basename(words[0]) == "env":
        words = [w for w in words[1:] if not w.startswith("-")]
    return words[0] if words else None


def find_claude(binary: str, environ: Mapping[str, str]) -> str:
    """The ``claude`` executable to run, checked to be able to start.

    :raises RuntimeMissingError: ``binary`` is not on ``PATH`` (the message says how to install it, and that
        Node.js is needed for that when ``node`` is missing too), or it is a Node.js script and ``node`` is
        not on ``PATH``.
    """
    search = environ.get("PATH", os.defpath)
    node = shutil.which("node", path=search)
    found = shutil.which(binary, path=search)
    if found is None:
        also = "" if node else f"; that needs Node.js, and `node` is not on PATH either: {NODE_HINT}"
        raise RuntimeMissingError(f"claude_code: the Claude Code CLI ({binary!r}) is not on PATH; {SETUP_HINT}{also}",
                                  missing=binary, install=f"npm install -g {CLAUDE_PACKAGE}")
    program = _shebang_program(found)
    if program is not None and "node" in os.path.basename(program):
        available = shutil.which(program, path=search) if os.sep not in program else (
            program if os.access(program, os.X_OK) else None)
        if available is None:
            raise RuntimeMissingError(f"claude_code: {found} is a Node.js program and `{program}` is not on PATH; "
                                      f"{NODE_HINT}", missing="node", install=NODE_HINT)
    return found


def _count(value: Any) -> int:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0 else 0


def usage_of(result: Mapping[str, Any]) -> Usage:
    """The token usage of a result object: every input token (cache writes and reads included) is a prompt
    token, ``output_tokens`` the completion. Missing or malformed counts are 0."""
    raw = result.get("usage")
    if not isinstance(raw, Mapping):
        return Usage()
    return Usage(sum(_count(raw.get(k)) for k in _USAGE_PROMPT_KEYS), _count(raw.get("output_tokens")))


def _session_id_ok(value: Any) -> bool:
    return isinstance(value, str) and 0 < len(value) <= 128 and all(c.isalnum() or c in "-_" for c in value)


def _is_result(obj: Mapping[str, Any]) -> bool:
    return obj.get("type") == "result" and ("result" in obj or "subtype" in obj or "is_error" in obj)


class ClaudeCodeAgent(WrappedAgent):
    """Claude Code (the ``claude`` CLI) run once per jarvis run; ``model`` is a Claude model or alias
    (``sonnet``, ``opus``, ``claude-sonnet-4-5``). The jarvis ``engine`` is not used.

    :param binary: the CLI's name or path (default ``claude``, looked up on ``PATH`` when a run starts).
    :param allowed_tools: Claude Code tool rules allowed without asking (``Read``, ``Bash(git diff:*)``).
    :param disallowed_tools: Claude Code tool rules refused.
    :param permission_mode: Claude Code's ``--permission-mode`` (``default``, ``acceptEdits``, ``plan`` …).
    :param api_key: the Anthropic key; default ``ANTHROPIC_API_KEY`` from the environment when a run starts.
    :param workspace: / :param timeout_s: / :param max_output_bytes: as :class:`WrappedAgent`.
    """

    agent_id = "claude_code"
    default_max_turns = 30
    default_model = "sonnet"

    def __init__(
        self,
        engine: Any = None,
        *,
        model: str,
        binary: str = "claude",
        allowed_tools: Union[str, Sequence[str], None] = None,
        disallowed_tools: Union[str, Sequence[str], None] = None,
        permission_mode: Optional[str] = None,
        api_key: Optional[str] = None,
        session_id: Optional[str] = None,
        **options: Any,
    ) -> None:
        super().__init__(engine, model=model, **options)
        if session_id is not None and not _session_id_ok(session_id):
            raise ConfigError(f"session_id must be a Claude Code session id (letters, digits, '-', '_'), got "
                              f"{session_id!r}", key="agents.claude_code.session_id")
        #: The session the next run resumes (the last run's, or the one given); ``None``: a new session.
        self.session_id = session_id
        if not isinstance(binary, str) or not binary:
            raise ConfigError(f"binary must be a command name or path, got {binary!r}", key="agents.claude_code.binary")
        if permission_mode is not None and (not isinstance(permission_mode, str) or not permission_mode):
            raise ConfigError(f"permission_mode must be a Claude Code permission mode, got {permission_mode!r}",
                              key="agents.claude_code.permission_mode")
        self.binary = binary
        self.allowed_tools = str_tuple(allowed_tools, "allowed_tools")
        self.disallowed_tools = str_tuple(disallowed_tools, "disallowed_tools")
        self.permission_mode = permission_mode
        self._api_key = Secret(api_key) if api_key else None

    def command(self, executable: str, system: Optional[str], resume: Optional[str] = None) -> List[str]:
        """The command line of one run (it never holds the key or the prompt); ``resume`` continues a session."""
        argv = [executable, "-p", "--output-format", "json", "--model", self.model,
                "--max-turns", str(self.max_turns)]
        if system:
            argv += ["--append-system-prompt", system]
        if self.allowed_tools:
            argv += ["--allowedTools", *self.allowed_tools]
        if self.disallowed_tools:
            argv += ["--disallowedTools", *self.disallowed_tools]
        if self.permission_mode:
            argv += ["--permission-mode", self.permission_mode]
        if resume:
            argv += ["--resume", resume]
        return argv

    def prerequisites(self, environ: Mapping[str, str]) -> Tuple[str, Secret]:
        """The executable and the key, or a :class:`RuntimeMissingError` naming what is missing."""
        executable = find_claude(self.binary, environ)
        key = self._api_key or Secret(environ.get(KEY_VARIABLE, ""))
        if not key:
            raise RuntimeMissingError(
                f"claude_code: no Anthropic API key; set {KEY_VARIABLE} (https://console.anthropic.com/settings/keys) "
                "or pass api_key=", missing=KEY_VARIABLE, install=f"export {KEY_VARIABLE}=...")
        return executable, key

    async def loop(self, run: AgentRun) -> AsyncIterator[AgentEvent]:
        environ = self.environ()
        executable, key = self.prerequisites(environ)
        system, prompt = split_transcript(run.messages)
        resume = self.session_id
        if resume:
            prompt = run.input  # the session holds the conversation so far
        env = child_environment(environ, {KEY_VARIABLE: key.reveal()}, {"DISABLE_AUTOUPDATER": "1"})
        run.turns = 1
        outcome = await run_child(self.command(executable, system, resume), agent=self.agent_id,
                                  stdin_data=prompt.encode("utf-8"), env=env, cwd=self.working_directory(),
                                  timeout_s=self.timeout_s, max_output_bytes=self.max_output_bytes)
        secrets = (key,)
        stdout = outcome.stdout.decode("utf-8", "replace")
        stderr = outcome.stderr.decode("utf-8", "replace")
        if outcome.timed_out:
            raise WrappedTimeoutError(
                f"claude_code: the Claude Code CLI did not finish within {self.timeout_s:g} s and was stopped "
                "(its whole process group killed); raise timeout_s for longer tasks",
                agent=self.agent_id, timeout=self.timeout_s, excerpt=excerpt(stderr or stdout, secrets))
        result = last_json_object(stdout, _is_result)
        if result is None:
            raise self._no_result(outcome.exit_code, outcome.truncated, stdout, stderr, secrets)
        content = result.get("result") if isinstance(result.get("result"), str) else ""
        subtype = str(result.get("subtype") or "")
        turns = _count(result.get("num_turns"))
        run.turns = turns or 1
        session = result.get("session_id")
        if isinstance(session, str) and _session_id_ok(session):
            self.session_id = session  # the next run continues this conversation
        metadata: Dict[str, Any] = {"session_id": session, "subtype": subtype,
                                    "total_cost_usd": result.get("total_cost_usd"),
                                    "duration_ms": result.get("duration_ms"), "exit_code": outcome.exit_code}
        if subtype == "error_max_turns":
            async for event in self.answer(run, content or "", usage_of(result), "max_turns", **metadata):
                yield event
            return
        if result.get("is_error") is True or subtype.startswith("error"):
            shown = excerpt(content or stderr, secrets)
            raise WrappedRunError(f"claude_code: Claude Code reported an error ({subtype or 'is_error'}): {shown}",
                                  agent=self.agent_id, exit_code=outcome.exit_code, excerpt=shown)
        async for event in self.answer(run, content or "", usage_of(result), "final", **metadata):
            yield event

    def _no_result(self, exit_code: int, truncated: bool, stdout: str, stderr: str,
                   secrets: Sequence[Secret]) -> WrappedRunError:
        if exit_code != 0:
            shown = excerpt(stderr or stdout, secrets)
            return WrappedRunError(f"claude_code: the Claude Code CLI exited with status {exit_code} without a "
                                   f"result: {shown or '(no output)'}", agent=self.agent_id, exit_code=exit_code,
                                   excerpt=shown)
        shown = excerpt(stdout, secrets)
        cut = " (its output passed max_output_bytes and was cut)" if truncated else ""
        return WrappedRunError(f"claude_code: the Claude Code CLI printed no result object{cut}; its output "
                               f"ended with: {shown or '(nothing)'}", agent=self.agent_id, exit_code=exit_code,
                               excerpt=shown)

    def __repr__(self) -> str:
        return f"<ClaudeCodeAgent model={self.model!r} binary={self.binary!r}>"
