"""Errors of the wrapped runtimes (``claude_code``, ``openhands``); every one is a
:class:`jarvis_core.errors.JarvisError`.

Two kinds: something the runtime needs is not there (:class:`RuntimeMissingError`, a configuration problem
the user fixes once: a binary, a Python package, a key, docker), or the runtime ran and failed
(:class:`WrappedRunError`: a nonzero exit, output without a result, a timeout). Messages carry only
secret-free excerpts of what the runtime printed: every key the run used is masked first.
"""

from __future__ import annotations

from typing import Optional

from jarvis_core.errors import ConfigError, JarvisError

__all__ = ["RuntimeMissingError", "WrappedRunError", "WrappedRuntimeError", "WrappedTimeoutError"]


class WrappedRuntimeError(JarvisError):
    """Base of the wrapped runtimes' own errors."""


class RuntimeMissingError(WrappedRuntimeError, ConfigError):
    """A wrapped runtime cannot start because something it needs is missing.

    :param missing: what is missing: a command (``node``, ``claude``, ``docker``), a Python package
        (``openhands-sdk``) or an environment variable (``ANTHROPIC_API_KEY``).
    :param install: how to get it (a command or where to look), also part of the message.
    """

    def __init__(self, message: str, *, missing: str = "", install: str = "") -> None:
        self.missing = missing
        self.install = install
        super().__init__(message)


class WrappedRunError(WrappedRuntimeError):
    """The wrapped runtime ran and failed, or printed no result that can be read.

    :param agent: the agent key (``claude_code``, ``openhands``).
    :param exit_code: the process's exit status (negative: killed by that signal), when it had ended.
    :param excerpt: the end of what it printed, whitespace collapsed and secrets masked (at most 300 characters).
    """

    def __init__(self, message: str, *, agent: str = "", exit_code: Optional[int] = None, excerpt: str = "") -> None:
        self.agent = agent
        self.exit_code = exit_code
        self.excerpt = excerpt
        super().__init__(message)


class WrappedTimeoutError(WrappedRunError):
    """The runtime did not finish within its timeout; its whole process group was killed.

    :param timeout: the seconds allowed; the other attributes as :class:`WrappedRunError`.
    """

    def __init__(self, message: str, *, agent: str = "", timeout: float = 0.0, excerpt: str = "") -> None:
        self.timeout = timeout
        super().__init__(message, agent=agent, excerpt=excerpt)
