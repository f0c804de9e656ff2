"""Errors of the sandbox: every one is a :class:`jarvis_core.errors.JarvisError`.

A failure of the *code* that runs in a sandbox (an exception, a limit, a timeout) is never an error: it is a
:class:`~jarvis_agents.sandbox.result.SandboxResult` with ``ok=False``. These errors are for the host's side:
a platform without the needed facilities, a missing container runtime, a refused mount, an image that does
not speak the job protocol.
"""

from __future__ import annotations

from jarvis_core.errors import ConfigError, JarvisError

__all__ = [
    "ContainerRuntimeError",
    "ContainerRuntimeNotFoundError",
    "JailUnavailableError",
    "MountRefusedError",
    "SandboxError",
    "SandboxLimitError",
    "SandboxUnavailableError",
    "SeccompUnavailableError",
]


class SandboxError(JarvisError):
    """Base of the sandbox's own errors."""


class SandboxUnavailableError(SandboxError):
    """This platform lacks what the process sandbox needs (POSIX process groups and ``resource`` limits)."""


class JailUnavailableError(SandboxUnavailableError):
    """The sandbox was asked for the bubblewrap jail (the default) and this machine cannot give it: no
    ``bwrap``, no user namespaces, not Linux, or bwrap refused to start. The message says what to install,
    and how to accept the rlimit-only sandbox knowingly (``isolation = "rlimits"``)."""


class SeccompUnavailableError(JailUnavailableError):
    """The jail's seccomp filter (on by default) cannot be built: its library (``pyseccomp``, over the
    system's libseccomp) is missing. The message says what to install, and how to run the jail without the
    filter knowingly (``seccomp = false``)."""


class SandboxLimitError(SandboxError, ConfigError):
    """A limit given to a sandbox is not a usable value (negative, zero, wrong type)."""


class ContainerRuntimeNotFoundError(SandboxError):
    """Neither ``docker`` nor ``podman`` (or the runtime that was asked for) is on ``PATH``."""


class ContainerRuntimeError(SandboxError):
    """The container runtime failed before the job ran (no daemon, unknown image, bad flag), or the image
    answered with something that is not a job result."""


class MountRefusedError(SandboxError):
    """A host path may not be mounted into a container: outside the allow-list, or a blocked pattern."""
