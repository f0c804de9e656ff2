"""What an agent that keeps memory between runs needs from a store: :class:`SessionStore` (a conversation
per session id, in insertion order) and :class:`StateStore` (exact key → JSON value).

Any object with these methods will do (the SQLite implementation is :class:`~jarvis_core.stores.SQLiteStore`;
a server can adapt its own database). Every method raises :class:`~jarvis_core.stores.StoreError` when the
store fails; none of them swallows an error.
"""

from __future__ import annotations

from typing import Any, List, Optional, Protocol, Sequence, Tuple, runtime_checkable

from jarvis_core.types import Message

__all__ = ["SessionStore", "StateStore"]


@runtime_checkable
class SessionStore(Protocol):
    """Conversations, one per ``session_id``, kept in insertion order (a sequence number, never a clock)."""

    def append(self, session_id: str, messages: Sequence[Message]) -> None:
        """Add ``messages`` after the session's last message, all or none (one transaction)."""
        ...

    def tail(self, session_id: str, limit: int) -> List[Message]:
        """The session's last ``limit`` messages, oldest first (``[]`` for an unknown session). The cut is
        made by count; :func:`~jarvis_core.stores.whole_groups` removes a tool-call group it split."""
        ...

    def count(self, session_id: str) -> int:
        """How many messages the session holds."""
        ...


@runtime_checkable
class StateStore(Protocol):
    """Exact key → value. Values are JSON (``dict`` with string keys, ``list``, ``str``, ``int``, ``float``,
    ``bool``, ``None``) and come back equal to what was put."""

    def get(self, key: str, default: Any = None) -> Any:
        """The value stored under exactly ``key``, or ``default``."""
        ...

    def put(self, key: str, value: Any) -> None:
        """Store ``value`` under ``key``, replacing what it held (its place in :meth:`items` is kept)."""
        ...

    def delete(self, key: str) -> bool:
        """Remove ``key``; whether it existed."""
        ...

    def items(self, prefix: str = "", *, limit: Optional[int] = None) -> List[Tuple[str, Any]]:
        """``(key, value)`` pairs whose key starts with ``prefix``, in the order the keys were first stored;
        with ``limit``, the last ``limit`` of them."""
        ...
