"""The checks every :class:`~jarvis_core.stores.SessionStore` / :class:`~jarvis_core.stores.StateStore`
implementation passes: :func:`store_conformance`.

The core's SQLite store runs them, and so does any store that adapts its own database (a server's), so
"the same stores" means the same behaviour: messages come back equal (tool calls, tool-call ids, names,
reasoning, ``None`` content) in insertion order, an append is all or nothing, state values come back equal
with their types, a value that would change is refused, ``items`` keeps first-stored order and matches its
prefix exactly, and every failure is a :class:`~jarvis_core.stores.StoreError`::

    from jarvis_core.testing import store_conformance

    def test_my_store_behaves_like_the_core_ones(tmp_path):
        store = MyStore(tmp_path / "x.db")
        store_conformance(store.sessions, store.state)

A store that maps ids onto its own rows (a session per agent, keys under an agent's prefix) passes the
``session_ids`` and ``key_prefix`` it accepts. The stores must hold nothing under them yet.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, List, Sequence, Tuple

from jarvis_core.stores.errors import StoreError
from jarvis_core.stores.protocols import SessionStore, StateStore
from jarvis_core.types import Message, Role, ToolCall

__all__ = ["STATE_VALUES", "store_conformance"]

#: Values that must come back from a state store equal and of the same type.
STATE_VALUES: Tuple[Any, ...] = (
    "plain text", "", 0, -7, 2**70, 0.1, -0.0, 1e308, True, False, None, [], {},
    {"nested": {"list": [1, "two", 3.5, None, {"deep": [True]}], "unicode": "ORCHID ✿ 🌸"}},
)
#: Values a state store must refuse (they would not come back equal) without storing anything.
REFUSED_VALUES: Tuple[Any, ...] = ((1, 2), {1: "int key"}, float("nan"), float("inf"), object(), {"s": {1, 2}})


def _tick() -> List[Message]:
    calls = (ToolCall("c1", "calculator", '{"expression": "1+1"}'), ToolCall("c2", "think", '{"note": "é"}'))
    return [
        Message.user("remember the code word: ORCHID ✿"),
        Message(Role.ASSISTANT, None, tool_calls=calls, reasoning="let me store it"),
        Message.tool("2", "c1", "calculator"),
        Message.tool("noted", "c2", "think"),
        Message.assistant("ok"),
    ]


def _raises_store_error(what: str, fn: Callable[[], Any]) -> None:
    try:
        fn()
    except StoreError:
        return
    except Exception as exc:
        raise AssertionError(f"{what}: raised {type(exc).__name__} ({exc}), not a StoreError") from exc
    raise AssertionError(f"{what}: did not raise a StoreError")


def _check(condition: bool, what: str, detail: Any = "") -> None:
    if not condition:
        raise AssertionError(f"store conformance: {what}" + (f": {detail!r}" if detail != "" else ""))


def check_sessions(sessions: SessionStore, session_ids: Sequence[str]) -> None:
    """Messages come back equal in insertion order per session; a batch is all or nothing."""
    a, b = session_ids[0], session_ids[1]
    _check(isinstance(sessions, SessionStore), "the session store has append, tail and count")
    _check(sessions.tail(a, 10) == [] and sessions.count(a) == 0, "the session must be empty to begin with", a)
    tick = _tick()
    sessions.append(a, tick[:2])
    sessions.append(b, [Message.user("another session")])
    sessions.append(a, tick[2:])
    got = sessions.tail(a, 100)
    _check(got == tick, "a session's messages come back equal, in insertion order", got)
    _check(sessions.tail(a, 2) == tick[-2:], "tail(limit) is the last messages, oldest first")
    _check(sessions.tail(a, 0) == [], "tail(0) is empty")
    _check(sessions.count(a) == 5 and sessions.count(b) == 1, "count is per session")
    _check(sessions.tail(b, 10) == [Message.user("another session")], "sessions do not mix")
    sessions.append(a, [])
    _check(sessions.count(a) == 5, "appending nothing adds nothing")
    bad: List[Any] = [Message.user("half of a batch"), {"role": "user", "content": "not a Message"}]
    _raises_store_error("appending something that is not a Message", lambda: sessions.append(a, bad))
    _check(sessions.count(a) == 5, "a failed append stores nothing (one transaction)")
    _raises_store_error("an empty session id", lambda: sessions.append("", [Message.user("x")]))


def check_state(state: StateStore, key_prefix: str) -> None:
    """Values come back equal; refused values leave nothing; first-stored order; exact prefixes."""
    p = key_prefix
    _check(isinstance(state, StateStore), "the state store has get, put, delete and items")
    _check(state.items(p) == [], "the state must be empty under the prefix to begin with", p)
    for i, value in enumerate(STATE_VALUES):
        state.put(f"{p}v{i}", value)
        got = state.get(f"{p}v{i}", "MISSING")
        _check(got == value and type(got) is type(value), "a value comes back equal and of its type", value)
    for i in range(len(STATE_VALUES)):
        state.delete(f"{p}v{i}")
    for value in REFUSED_VALUES:
        _raises_store_error(f"putting {value!r}", functools.partial(state.put, f"{p}refused", value))
        _check(state.get(f"{p}refused", "absent") == "absent", "a refused value stores nothing", value)
    state.put(f"{p}b", 1)
    state.put(f"{p}a", 2)
    state.put(f"{p}b", "replaced")
    _check(state.items(p) == [(f"{p}b", "replaced"), (f"{p}a", 2)], "items keep first-stored order",
           state.items(p))
    _check(state.items(p, limit=1) == [(f"{p}a", 2)], "items(limit=n) are the last n")
    _check(state.delete(f"{p}b") is True and state.delete(f"{p}b") is False, "delete says whether it existed")
    _check(state.get(f"{p}b") is None and state.get(f"{p}b", 5) == 5, "a deleted key gives the default")
    state.put(f"{p}a_%:1", "literal")
    state.put(f"{p}ab%:1", "looks alike")
    state.put(f"{p}aXY:1", "wildcard match")
    _check(state.items(f"{p}a_%:") == [(f"{p}a_%:1", "literal")], "prefixes are exact, not patterns",
           state.items(f"{p}a_%:"))
    _raises_store_error("an empty key", lambda: state.put("", 1))


def store_conformance(sessions: SessionStore, state: StateStore, *,
                      session_ids: Sequence[str] = ("conformance:a", "conformance:b"),
                      key_prefix: str = "conformance:") -> None:
    """Run every check against ``sessions`` and ``state``; an :class:`AssertionError` names the first that fails.

    :param session_ids: two distinct, empty sessions the store accepts.
    :param key_prefix: a prefix under which the state store accepts keys and holds none yet.
    """
    if len(session_ids) < 2 or session_ids[0] == session_ids[1]:
        raise ValueError("store_conformance needs two distinct session ids")
    check_sessions(sessions, session_ids)
    check_state(state, key_prefix)
