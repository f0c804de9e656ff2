"""Which host paths may be mounted into a sandbox container: an allow-list of roots and blocked patterns.

A mount is refused unless its resolved host path (symlinks followed) lies under an allowed root, and no
part of it, nor any entry inside a mounted directory, matches a blocked pattern (SSH and GPG keys, cloud
credentials, ``.env`` files, tokens, the container runtime's socket, …). The default policy allows no
root at all, so nothing is mounted unless the operator says where from.
"""

from __future__ import annotations

import fnmatch
import os
import posixpath
from pathlib import Path
from typing import Iterable, Sequence, Tuple

import attrs

from jarvis_agents.sandbox.errors import MountRefusedError
from jarvis_core.types import as_tuple

__all__ = ["DEFAULT_BLOCKED_PATTERNS", "Mount", "MountPolicy"]

DEFAULT_BLOCKED_PATTERNS: Tuple[str, ...] = (
    ".ssh", ".gnupg", ".aws", ".azure", ".kube", ".docker", "gcloud", ".netrc", ".git-credentials",
    ".npmrc", ".pypirc", ".pgpass", ".password-store", ".env", ".env.*", "*.pem", "*.key", "*.p12", "*.pfx",
    "*.kdbx", "id_rsa*", "id_dsa*", "id_ecdsa*", "id_ed25519*", "*credential*", "*secret*", "*password*",
    # "token" files, but not "tokenizer.json", which every model directory has
    "token", ".*token*", "*_token", "*-token", "*.token", "*_token.*", "*-token.*", "*.sock",
)
# Host trees no sandbox has any business seeing, whatever the allow-list says.
_SYSTEM_ROOTS = ("/proc", "/sys", "/dev", "/run", "/var/run", "/etc", "/boot", "/root")
_MAX_SCANNED_ENTRIES = 10_000


@attrs.frozen
class Mount:
    """A host path to show inside the container at ``target`` (read-only unless ``read_only=False``)."""

    source: str
    target: str
    read_only: bool = True

    def volume_arg(self) -> str:
        """The ``-v`` value, ``source:target[:ro]``."""
        return f"{self.source}:{self.target}" + (":ro" if self.read_only else "")


@attrs.frozen
class MountPolicy:
    """``allowed_roots``: host directories under which mounts may come from (none by default).
    ``blocked_patterns``: shell-style patterns matched, case-insensitively, against every component of the
    resolved path and every name inside a mounted directory."""

    allowed_roots: Tuple[str, ...] = attrs.field(default=(), converter=as_tuple)
    blocked_patterns: Tuple[str, ...] = attrs.field(default=DEFAULT_BLOCKED_PATTERNS, converter=as_tuple)

    def check(self, mount: Mount) -> Mount:
        """The mount with its source resolved, or :class:`MountRefusedError` saying why not."""
        _check_target(mount.target)
        if not self.allowed_roots:
            raise MountRefusedError(f"mount {mount.source!r} refused: no mount roots are allowed")
        try:
            source = Path(mount.source).expanduser().resolve(strict=True)
        except (OSError, RuntimeError):
            raise MountRefusedError(f"mount {mount.source!r} refused: the path does not exist") from None
        text = str(source)
        if ":" in text or "," in text:
            raise MountRefusedError(f"mount {mount.source!r} refused: ':' and ',' are not allowed in a mount path")
        if text == "/" or any(text == r or text.startswith(r + "/") for r in _SYSTEM_ROOTS):
            raise MountRefusedError(f"mount {mount.source!r} refused: {text} is a system path")
        roots = [Path(r).expanduser().resolve() for r in self.allowed_roots]
        if not any(source == root or root in source.parents for root in roots):
            raise MountRefusedError(
                f"mount {mount.source!r} refused: {text} is not under an allowed root "
                f"({', '.join(str(r) for r in roots)})"
            )
        self._check_names(mount.source, source.parts[1:], text)
        if source.is_dir():
            self._check_names(mount.source, _names_inside(mount.source, source), text)
        return attrs.evolve(mount, source=text)

    def _check_names(self, given: str, names: Iterable[str], where: str) -> None:
        for name in names:
            pattern = self._blocked(name)
            if pattern is not None:
                raise MountRefusedError(
                    f"mount {given!r} refused: {name!r} in {where} matches the blocked pattern {pattern!r}"
                )

    def _blocked(self, name: str) -> str | None:
        lowered = name.lower()
        for pattern in self.blocked_patterns:
            if fnmatch.fnmatchcase(lowered, pattern.lower()):
                return pattern
        return None


def _check_target(target: str) -> None:
    if not target.startswith("/") or posixpath.normpath(target) != target or target == "/":
        raise MountRefusedError(f"mount target {target!r} refused: it must be a normalized absolute path, not '/'")
    if ":" in target or "," in target:
        raise MountRefusedError(f"mount target {target!r} refused: ':' and ',' are not allowed in a mount path")


def _names_inside(given: str, directory: Path) -> Sequence[str]:
    """Every file and directory name below ``directory`` (symlinks not followed), bounded in number."""
    names = []
    for _, dirs, files in os.walk(directory):
        names.extend(dirs)
        names.extend(files)
        if len(names) > _MAX_SCANNED_ENTRIES:
            raise MountRefusedError(
                f"mount {given!r} refused: more than {_MAX_SCANNED_ENTRIES} entries to check; "
                "mount a narrower directory"
            )
    return names
