"""Wrapped agent runtimes: ``claude_code`` (Anthropic's Claude Code CLI) and ``openhands`` (the OpenHands
SDK), each run as a child process with a timeout, only its own key in its environment, and its result read
tolerantly from its output. Nothing is installed while an agent runs; ``jarvis wrappers check`` says what is
missing and ``jarvis wrappers setup NAME`` installs it. Names load on first use; see ``docs/agents.md``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from jarvis_core.lazy import lazy_exports

if TYPE_CHECKING:
    from jarvis_agents.wrapped.claude_code import ClaudeCodeAgent
    from jarvis_agents.wrapped.errors import (
        RuntimeMissingError,
        WrappedRunError,
        WrappedRuntimeError,
        WrappedTimeoutError,
    )
    from jarvis_agents.wrapped.openhands import OpenHandsAgent

__all__ = [
    "ClaudeCodeAgent",
    "OpenHandsAgent",
    "RuntimeMissingError",
    "WrappedRunError",
    "WrappedRuntimeError",
    "WrappedTimeoutError",
]

_LAZY = {
    "ClaudeCodeAgent": "jarvis_agents.wrapped.claude_code",
    "OpenHandsAgent": "jarvis_agents.wrapped.openhands",
    "RuntimeMissingError": "jarvis_agents.wrapped.errors",
    "WrappedRunError": "jarvis_agents.wrapped.errors",
    "WrappedRuntimeError": "jarvis_agents.wrapped.errors",
    "WrappedTimeoutError": "jarvis_agents.wrapped.errors",
}

__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals())
