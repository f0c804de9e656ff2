"""How a store turns messages and state values into text and back, exactly: :func:`encode_value`,
:func:`decode_value`, :func:`encode_message`, :func:`decode_message`.

Every store of :mod:`jarvis_core.stores` (and any other that adapts its own database, such as a server's) uses
these, so "comes back equal" means the same everywhere: a message is the JSON of a
:class:`~jarvis_core.types.Message`; a state value is JSON that must load back equal to what was put (a tuple,
a dict with non-string keys, ``nan`` or ``inf`` is refused, never changed). Failures are
:class:`~jarvis_core.stores.StoreError` naming the store's file (``path``) and the operation.
"""

from __future__ import annotations

import json
from typing import Any, Optional

from jarvis_core.stores.errors import StoreError
from jarvis_core.types import Message, from_json, to_json

__all__ = ["decode_message", "decode_value", "encode_message", "encode_value"]


def encode_value(key: str, value: Any, *, path: Optional[str] = None) -> str:
    """The JSON text of ``value``, stored under ``key``; a :class:`StoreError` if it would not come back equal."""
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise StoreError(f"put {key!r}: the value is not JSON ({exc})", path=path, operation="put") from None
    if json.loads(text) != value:
        raise StoreError(f"put {key!r}: the value would not come back equal from JSON (tuples become lists, "
                         "dict keys become strings); convert it first", path=path, operation="put")
    return text


def decode_value(key: str, text: str, *, path: Optional[str] = None) -> Any:
    """The value stored as ``text`` under ``key``."""
    try:
        return json.loads(text)
    except ValueError as exc:
        raise StoreError(f"the value of {key!r} in {path} is not JSON; the file was changed outside jarvis",
                         path=path, operation="get") from exc


def encode_message(message: Any, *, path: Optional[str] = None) -> str:
    """The JSON text of a :class:`~jarvis_core.types.Message` (anything else is a :class:`StoreError`)."""
    if not isinstance(message, Message):
        raise StoreError(f"append: expected Message objects, got {type(message).__name__}", path=path,
                         operation="append")
    return to_json(message)


def decode_message(text: str, *, path: Optional[str] = None) -> Message:
    """The :class:`~jarvis_core.types.Message` stored as ``text``."""
    try:
        return from_json(Message, text)
    except Exception as exc:  # cattrs raises its own exception groups for malformed rows
        raise StoreError(f"a stored message in {path} is unreadable ({type(exc).__name__}); the file was changed "
                         "outside jarvis", path=path, operation="tail") from exc
