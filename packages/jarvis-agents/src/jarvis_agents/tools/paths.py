"""Which paths the file tools may touch: configured roots, the resolved path, and a deny-list.

The order matters. The path is resolved first (symlinks and ``..`` followed), then checked against the
roots, then every component of the resolved path against the deny-list, and only then does anything look
at whether the file exists. A path outside the roots is refused with the same message whether or not it
exists, so the tools are no existence oracle for the rest of the disk.

Checking a path and then opening it by name leaves a gap: something that can write inside a root (the
sandbox, another program) can swap a checked component for a symlink to outside in between. So the tools
open through :meth:`PathPolicy.parent_dir`: from the root's directory descriptor, one component at a time,
never following a link (``O_NOFOLLOW`` with ``dir_fd``), and act on the last component relative to the
directory reached. A component that became a link since the check is refused, never followed. Where the
platform has no ``dir_fd`` opens (Windows), the checked path is opened by name and that gap remains.
"""

from __future__ import annotations

import contextlib
import errno
import fnmatch
import os
import stat
from pathlib import Path, PurePath
from typing import Iterator, Optional, Sequence, Tuple

from jarvis_core.errors import ConfigError

__all__ = ["DENIED_NAMES", "DENIED_TREES", "NO_FOLLOW", "WALKS", "PathDenied", "PathPolicy", "changed_error"]

#: Patterns matched (case-insensitively) against every component of the resolved path.
DENIED_NAMES: Tuple[str, ...] = (".ssh", ".gnupg", ".aws", ".env*", "*.pem", "*.key", "id_*", "credentials*")
#: Trees refused whole, whatever the roots say.
DENIED_TREES: Tuple[str, ...] = ("/proc", "/sys", "/dev")


#: True where opens relative to a directory descriptor without following links are available (POSIX).
WALKS = all(f in os.supports_dir_fd for f in (os.open, os.mkdir, os.stat, os.rename, os.unlink)) and all(
    hasattr(os, flag) for flag in ("O_NOFOLLOW", "O_DIRECTORY"))
#: Flags every open of a path component adds: no link is followed, no descriptor leaks into a child.
NO_FOLLOW = getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
_DIRECTORY = NO_FOLLOW | os.O_RDONLY | getattr(os, "O_DIRECTORY", 0)


class PathDenied(PermissionError):
    """The path may not be used; the message says why without saying whether it exists."""


def changed_error(requested: str) -> PathDenied:
    """The error for a path a symlink replaced between its check and its opening."""
    return PathDenied(f"{requested!r} changed while it was opened (a part of it became a symbolic link); "
                      "it was not followed")


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
        try:
            real = Path(os.path.realpath(given))
        except OSError as exc:  # a link that stopped being one while it was read (EINVAL from readlink)
            raise PathDenied(f"{requested!r} could not be resolved ({exc.strerror}); it changed while it was "
                             "checked") from None
        if not any(_inside(real, root) for root in self.roots):
            allowed = ", ".join(str(r) for r in self.roots)
            raise PathDenied(f"{requested!r} is outside the directories this tool may use ({allowed})")
        # The name the model gave is checked as well: a link called notes.txt must not hide a key file, and
        # a link called .env must not be read because it happens to point somewhere harmless.
        reason = self._deny_reason(real) or self._deny_reason(PurePath(os.path.normpath(given)))
        if reason:
            raise PathDenied(f"{requested!r} is not allowed: {reason}")
        return real

    @contextlib.contextmanager
    def parent_dir(self, real: Path, requested: str, *, make: bool = False) -> Iterator[Tuple[Optional[int], str]]:
        """``(dir_fd, name)`` for a path :meth:`resolve` returned: ``dir_fd`` is the directory holding it,
        opened from its root one component at a time without following a link, and ``name`` its last
        component, for ``os.open(name, ..., dir_fd=dir_fd)`` and the like (add :data:`NO_FOLLOW`).

        ``make`` creates missing directories on the way. Where :data:`WALKS` is false ``dir_fd`` is
        ``None`` and ``name`` the whole path. The descriptor is closed on leaving the block.
        """
        root = max((r for r in self.roots if _inside(real, r)), key=lambda r: len(r.parts))
        parts = real.relative_to(root).parts
        if not parts:
            raise IsADirectoryError(f"{requested!r} is a directory, not a file")
        if not WALKS:
            if make:
                real.parent.mkdir(parents=True, exist_ok=True)
            yield None, str(real)
            return
        current = os.open(root, _DIRECTORY)
        try:
            for part in parts[:-1]:
                opened = _open_directory(current, part, requested, make)
                os.close(current)
                current = opened
            yield current, parts[-1]
        finally:
            os.close(current)


def _open_directory(parent: int, name: str, requested: str, make: bool) -> int:
    try:
        try:
            return os.open(name, _DIRECTORY, dir_fd=parent)
        except FileNotFoundError:
            if not make:
                raise FileNotFoundError(f"no such file: {requested!r}") from None
            with contextlib.suppress(FileExistsError):
                os.mkdir(name, 0o777, dir_fd=parent)
            return os.open(name, _DIRECTORY, dir_fd=parent)
    except OSError as exc:
        if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
            raise
        if stat.S_ISLNK(os.stat(name, dir_fd=parent, follow_symlinks=False).st_mode):
            raise changed_error(requested) from None
        raise NotADirectoryError(f"{requested!r}: {name!r} is not a directory") from None
