"""The error every store raises: :class:`StoreError`."""

from __future__ import annotations

from typing import Optional

from jarvis_core.errors import JarvisError

__all__ = ["StoreError"]


class StoreError(JarvisError):
    """A store could not do what was asked: the file is corrupted, read-only, newer than this code or not a
    database, a write failed, or a value cannot be stored exactly. ``path`` names the file and ``operation``
    what was being done (``open``, ``append``, ``put``, …). Nothing was half-written: each operation is one
    transaction."""

    def __init__(self, message: str, *, path: Optional[str] = None, operation: Optional[str] = None) -> None:
        self.path = path
        self.operation = operation
        super().__init__(message)
