"""Which paths the file tools may touch: configured roots, the resolved path, and a deny-list.

The order matters. The path is resolved first (symlinks and ``..`` followed), then checked against the
roots, then every component of the resolved path against the deny-list, and only then does anything look
at whether the file exists. A path outside the roots is refused with the same message whether or not it
exists, so the tools are no existence oracle for the rest of the disk.
"""

from __future__ import annotations

import fnmatch
import os
from pathlib import Path, PurePath
from typing import Sequence, Tuple

from jarvis_core.errors import ConfigError

__all__ = ["DENIED_NAMES", "DENIED_TREES", "PathDenied", "PathPolicy"]

#: Patterns matched (case-insensitively) against every component of the resolved path.
DENIED_NAMES: Tuple[str, ...] = (".ssh", ".gnupg", ".aws", ".env*", "*.pem", "*.key", "id_*", "credentials*")
#: Trees refused whole, whatever the roots say.
DENIED_TREES: Tuple[str, ...] = ("/proc", "/sys", "/dev")


class PathDenied(PermissionError):
    """The path may not be used; the message says why without saying whether it exists."""


def _denied_name(part: str) -> str | None:
    lowered = part.lower()
    for pattern in DENIED_NAMES:
        if fnmatch.fnmatchcase(lowered, pattern):
            return pattern
    return None


def _inside(path: PurePath, root: PurePath) -> bool:
    return path == root or root in path.parents


class PathPolicy:
    """Resolves the paths a model asks for and refuses the ones outside ``roots`` or on the deny-list.

    :param roots: directories the tool may use. Required: a file tool without roots refuses to run.
    :param tool: the tool's name, for the configuration hint in errors.
    """

    def __init__(self, roots: Sequence[str | os.PathLike[str]], *, tool: str) -> None:
        if isinstance(roots, (str, os.PathLike)):
            roots = [roots]
        if not roots:
            raise ConfigError(
                f"the {tool} tool needs at least one allowed directory; set it in the config file:\n"
                f'[tools.{tool}]\nroots = ["/path/to/allowed/dir"]',
                key=f"tools.{tool}.roots",
            )
        resolved = []
        for root in roots:
            real = Path(os.path.realpath(os.path.expanduser(os.fspath(root))))
            denied = self._deny_reason(real)
            if denied:
                raise ConfigError(f"tools.{tool}.roots: {os.fspath(root)!r} is not allowed ({denied})",
                                  key=f"tools.{tool}.roots")
            resolved.append(real)
        self.tool = tool
        self.roots: Tuple[Path, ...] = tuple(resolved)

    @staticmethod
    def _deny_reason(path: PurePath) -> str | None:
        for tree in DENIED_TREES:
            if _inside(path, PurePath(tree)):
                return f"{tree} is never readable or writable by tools"
        for part in path.parts:
            pattern = _denied_name(part)
            if pattern:
                return f"{part!r} matches the deny-list pattern {pattern!r}"
        return None

    def resolve(self, requested: str) -> Path:
        """The real path for ``requested`` (relative paths are taken from the first root).

        Raises :class:`PathDenied` when it is outside every root or on the deny-list. Never looks at
        whether the file exists.
        """
        if not isinstance(requested, str) or not requested.strip():
            raise PathDenied("the path is empty")
        if "\x00" in requested:
            raise PathDenied("the path contains a NUL character")
        given = Path(os.path.expanduser(requested.strip()))
        if not given.is_absolute():
            given = self.roots[0] / given
        real = Path(os.path.realpath(given))
        if not any(_inside(real, root) for root in self.roots):
            allowed = ", ".join(str(r) for r in self.roots)
            raise PathDenied(f"{requested!r} is outside the directories this tool may use ({allowed})")
        # The name the model gave is checked as well: a link called notes.txt must not hide a key file, and
        # a link called .env must not be read because it happens to point somewhere harmless.
        reason = self._deny_reason(real) or self._deny_reason(PurePath(os.path.normpath(given)))
        if reason:
            raise PathDenied(f"{requested!r} is not allowed: {reason}")
        return real
