"""Stores for agents that keep memory between runs: a conversation per session and exact key-value state.

- :class:`SessionStore` and :class:`StateStore` (:mod:`.protocols`): what an agent needs from a store.
- :class:`SQLiteStore` (:mod:`.sqlite`): both, in one SQLite file (stdlib ``sqlite3``).
- :func:`whole_groups` (:mod:`.history`): cut a loaded conversation so that no tool-call group is split.
- :mod:`.codec`: the one encoding of messages and state values (exact round trip), for any store.
- :class:`StoreError`: every failure of a store (a corrupted, read-only or newer file, a failed write).

Names load on first use, so importing this package is cheap::

    from jarvis_core.stores import SQLiteStore

    store = SQLiteStore("operators.db")
    store.sessions.append("operator:daily", [Message.user("hi"), Message.assistant("hello")])
    store.state.put("operator:daily:state", {"seen": 1})
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from jarvis_core.lazy import lazy_exports

_LAZY = {
    "SessionStore": "jarvis_core.stores.protocols",
    "StateStore": "jarvis_core.stores.protocols",
    "StoreError": "jarvis_core.stores.errors",
    "SQLiteStore": "jarvis_core.stores.sqlite",
    "SQLiteSessionStore": "jarvis_core.stores.sqlite",
    "SQLiteStateStore": "jarvis_core.stores.sqlite",
    "SCHEMA_VERSION": "jarvis_core.stores.sqlite",
    "whole_groups": "jarvis_core.stores.history",
}

__all__ = [
    "SCHEMA_VERSION",
    "SQLiteSessionStore",
    "SQLiteStateStore",
    "SQLiteStore",
    "SessionStore",
    "StateStore",
    "StoreError",
    "whole_groups",
]

__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals())

if TYPE_CHECKING:  # pragma: no cover
    from jarvis_core.stores.errors import StoreError
    from jarvis_core.stores.history import whole_groups
    from jarvis_core.stores.protocols import SessionStore, StateStore
    from jarvis_core.stores.sqlite import SCHEMA_VERSION, SQLiteSessionStore, SQLiteStateStore, SQLiteStore
