"""``file_read`` and ``file_write``: text files inside the directories the user configured.

Both need ``roots`` in the config (``[tools.file_read] roots = ["~/notes"]``); without them the tool is not
built and the error says how to configure it. Paths go through :class:`~.paths.PathPolicy` (resolved, inside
a root, not on the deny-list) before anything looks at the disk, and are then opened from the root without
following a link (:meth:`~.paths.PathPolicy.parent_dir`), so a symlink swapped in after the check is
refused rather than followed out of the root. ``file_write`` asks for confirmation through its policy: with
no approver the executor refuses it.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import uuid
from typing import Optional, Sequence, Union

from jarvis_agents.tools.paths import NO_FOLLOW, PathDenied, PathPolicy, changed_error
from jarvis_core.tools import ToolPolicy
from jarvis_core.types import ToolSpec

__all__ = ["FileReadTool", "FileWriteTool"]

PathLike = Union[str, "os.PathLike[str]"]

#: Default size limits (bytes): what ``file_read`` returns at most, and what ``file_write`` accepts.
DEFAULT_MAX_READ = 256 * 1024
DEFAULT_MAX_WRITE = 1024 * 1024


def _open(name: str, flags: int, dir_fd: Optional[int], requested: str) -> int:
    """Open the last component, never following a link and never blocking on a FIFO; a regular file only."""
    try:
        fd = os.open(name, flags | NO_FOLLOW | getattr(os, "O_NONBLOCK", 0), 0o666, dir_fd=dir_fd)
    except FileNotFoundError:
        raise FileNotFoundError(f"no such file: {requested!r}") from None
    except IsADirectoryError:
        raise IsADirectoryError(f"{requested!r} is a directory, not a file") from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise changed_error(requested) from None
        if exc.errno == errno.ENXIO:  # a FIFO without a reader
            raise PathDenied(f"{requested!r} is not a regular file") from None
        raise
    try:
        _regular(os.fstat(fd), requested)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _regular(info: os.stat_result, requested: str) -> None:
    if stat.S_ISDIR(info.st_mode):
        raise IsADirectoryError(f"{requested!r} is a directory, not a file")
    if stat.S_ISLNK(info.st_mode):
        raise changed_error(requested)
    if not stat.S_ISREG(info.st_mode):
        # A FIFO or device would block or stream forever.
        raise PathDenied(f"{requested!r} is not a regular file")


class FileReadTool:
    """``file_read(path, max_lines?)``: the text of a file inside the configured roots.

    :param roots: the directories it may read (required).
    :param max_bytes: the most it returns; a longer file is cut and says so.
    """

    spec = ToolSpec(
        name="file_read",
        description="Read a text file and return its contents. Paths are relative to the allowed directory.",
        parameters={
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "the file to read", "maxLength": 1024},
                "max_lines": {"type": "integer", "minimum": 1, "description": "return only the first N lines"},
            },
            "required": ["path"],
            "additionalProperties": False,
        },
    )
    policy = ToolPolicy(side_effects="read", timeout=10.0)

    def __init__(self, roots: Sequence[PathLike] = (), max_bytes: int = DEFAULT_MAX_READ) -> None:
        self.paths = PathPolicy(roots, tool="file_read")
        self.max_bytes = int(max_bytes)

    def run(self, path: str, max_lines: Optional[int] = None) -> str:
        """Return the file's text (UTF-8, undecodable bytes replaced); errors name the reason."""
        real = self.paths.resolve(path)
        with self.paths.parent_dir(real, path) as (dir_fd, name):
            fd = _open(name, os.O_RDONLY, dir_fd, path)
        with os.fdopen(fd, "rb") as fh:
            data = fh.read(self.max_bytes + 1)
        if b"\x00" in data:
            raise ValueError(f"{path!r} looks like a binary file; file_read returns text only")
        cut = len(data) > self.max_bytes
        text = data[: self.max_bytes].decode("utf-8", errors="replace")
        if max_lines is not None:
            lines = text.splitlines(keepends=True)
            if len(lines) > max_lines:
                text, cut = "".join(lines[:max_lines]), True
        if cut:
            text += ("" if text.endswith("\n") else "\n") + f"[file_read: cut here; the file is longer than {'max_lines' if max_lines else 'max_bytes'}]"
        return text


class FileWriteTool:
    """``file_write(path, content, append?)``: write a text file inside the configured roots.

    Needs confirmation (its policy says so), so it runs only when the caller gave an approver that says yes.

    :param roots: the directories it may write (required).
    :param max_bytes: the largest content it accepts.
    """

    spec = ToolSpec(
        name="file_write",
        description="Write text to a file (created if missing, replaced unless append is true).",
        parameters={
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "the file to write", "maxLength": 1024},
                "content": {"type": "string", "description": "the text to write"},
                "append": {"type": "boolean", "description": "add to the end instead of replacing"},
            },
            "required": ["path", "content"],
            "additionalProperties": False,
        },
    )
    policy = ToolPolicy(confirm=True, side_effects="write", timeout=10.0)

    def __init__(self, roots: Sequence[PathLike] = (), max_bytes: int = DEFAULT_MAX_WRITE) -> None:
        self.paths = PathPolicy(roots, tool="file_write")
        self.max_bytes = int(max_bytes)

    def run(self, path: str, content: str, append: bool = False) -> str:
        """Write ``content``; returns what was done."""
        data = content.encode("utf-8")
        if len(data) > self.max_bytes:
            raise ValueError(f"the content is {len(data)} bytes; file_write accepts at most {self.max_bytes}")
        real = self.paths.resolve(path)
        with self.paths.parent_dir(real, path, make=True) as (dir_fd, name):
            if append:
                fd = _open(name, os.O_WRONLY | os.O_APPEND | os.O_CREAT, dir_fd, path)
                with os.fdopen(fd, "wb") as fh:
                    fh.write(data)
                return f"appended {len(data)} bytes to {path}"
            self._replace(name, dir_fd, data, path)
        return f"wrote {len(data)} bytes to {path}"

    @staticmethod
    def _replace(name: str, dir_fd: Optional[int], data: bytes, requested: str) -> None:
        """Write a sibling then rename it over ``name``, so a failure never leaves a half-written file."""
        try:
            info: Optional[os.stat_result] = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        except FileNotFoundError:
            info = None
        if info is not None:
            _regular(info, requested)
        tmp = f".jarvis-write-{uuid.uuid4().hex}"
        if dir_fd is None:
            tmp = os.path.join(os.path.dirname(name), tmp)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | NO_FOLLOW, 0o666, dir_fd=dir_fd)  # umask applies
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
                if info is not None:
                    os.chmod(fh.fileno() if os.chmod in os.supports_fd else tmp, stat.S_IMODE(info.st_mode))
            # A rename replaces the directory entry itself: a link swapped in meanwhile is replaced, not followed.
            os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp, dir_fd=dir_fd)
            raise
