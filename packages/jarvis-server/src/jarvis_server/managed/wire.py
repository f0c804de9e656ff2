"""The ``/v1/managed-agents`` wire: request bodies (and the message listing's query) read into typed values,
and the store's rows rendered as the API shows them.

A body is a JSON object holding only the fields its route takes; any other field is a 400 naming it, as is a
field of the wrong type. What is valid beyond its shape (a registered agent type, tools the server allows)
is the service's to check (:mod:`.service`).
"""

from __future__ import annotations

import json
from typing import Any, Dict, Mapping, Optional, Tuple

import attrs

from jarvis_server.openai_errors import RequestError

__all__ = [
    "MAX_SEQ", "AgentPatch", "MessagePage", "NewAgent", "NewMessage", "agent_json", "message_json",
    "parse_agent_patch", "parse_message_page", "parse_new_agent", "parse_new_message", "run_json",
]

#: The largest message sequence number (SQLite's largest integer).
MAX_SEQ = 2**63 - 1
#: The fields of an agent's body (``POST`` and ``PATCH``).
AGENT_FIELDS = ("name", "agent_type", "config")


@attrs.frozen
class NewAgent:
    """``POST /v1/managed-agents``."""

    name: str
    agent_type: str
    config: Dict[str, Any]


@attrs.frozen
class AgentPatch:
    """``PATCH /v1/managed-agents/{id}``: ``None`` keeps a field; ``config`` holds the changes (a key set to
    ``None`` is removed)."""

    name: Optional[str]
    agent_type: Optional[str]
    config: Dict[str, Any]

    def merged(self, current: Mapping[str, Any]) -> Dict[str, Any]:
        """``current`` with the changes applied."""
        config = dict(current)
        for key, value in self.config.items():
            if value is None:
                config.pop(key, None)
            else:
                config[key] = value
        return config


@attrs.frozen
class NewMessage:
    """``POST /v1/managed-agents/{id}/messages``."""

    content: str
    stream: bool


@attrs.frozen
class MessagePage:
    """``GET /v1/managed-agents/{id}/messages?after=SEQ&limit=N``."""

    after: int
    limit: int


def _object(body: Any, allowed: Tuple[str, ...]) -> Mapping[str, Any]:
    if not isinstance(body, Mapping):
        raise RequestError("the request body must be a JSON object", param="body")
    unknown = sorted(k for k in body if k not in allowed)
    if unknown:
        raise RequestError(f"unsupported field(s) {', '.join(map(repr, unknown))}", param=unknown[0],
                           code="unsupported_parameter")
    return body


def _string(body: Mapping[str, Any], key: str, *, required: bool) -> Any:
    value = body.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value.strip():
        raise RequestError(f"{key} must be a non-empty string", param=key)
    return value


def _config(body: Mapping[str, Any]) -> Dict[str, Any]:
    config = body.get("config")
    if config is None:
        return {}
    if not isinstance(config, Mapping):
        raise RequestError("config must be a JSON object", param="config")
    return dict(config)


def parse_new_agent(body: Any) -> NewAgent:
    """A :class:`NewAgent` from a decoded body; a :class:`RequestError` naming the field at fault."""
    body = _object(body, AGENT_FIELDS)
    return NewAgent(_string(body, "name", required=True), _string(body, "agent_type", required=True),
                    _config(body))


def parse_agent_patch(body: Any) -> AgentPatch:
    """An :class:`AgentPatch` from a decoded body; a :class:`RequestError` naming the field at fault."""
    body = _object(body, AGENT_FIELDS)
    return AgentPatch(_string(body, "name", required=False), _string(body, "agent_type", required=False),
                      _config(body))


def parse_new_message(body: Any) -> NewMessage:
    """A :class:`NewMessage` from a decoded body; a :class:`RequestError` naming the field at fault."""
    body = _object(body, ("content", "stream"))
    content = _string(body, "content", required=True)
    stream = body.get("stream", False)
    if not isinstance(stream, bool):
        raise RequestError("stream must be true or false", param="stream")
    return NewMessage(content, stream)


def parse_message_page(query: Mapping[str, str]) -> MessagePage:
    """A :class:`MessagePage` from the query (``after`` 0 and ``limit`` 500 unless given)."""
    try:
        after = int(query.get("after", "0"))
        limit = int(query.get("limit", "500"))
    except ValueError:
        raise RequestError("after and limit must be integers", param="after") from None
    if not 0 <= after <= MAX_SEQ:
        raise RequestError(f"after must be between 0 and {MAX_SEQ}", param="after")
    if not 1 <= limit <= 5000:
        raise RequestError("limit must be between 1 and 5000", param="limit")
    return MessagePage(after, limit)


def agent_json(row: Dict[str, Any]) -> Dict[str, Any]:
    """An ``agents`` row as the API shows it."""
    return {"id": row["id"], "name": row["name"], "agent_type": row["agent_type"],
            "config": json.loads(row["config_json"]), "status": row["status"],
            "created_at": row["created_at"], "updated_at": row["updated_at"]}


def message_json(row: Dict[str, Any]) -> Dict[str, Any]:
    """A ``messages`` row as the API shows it (a tool result of an agent's session with its ``tool_call_id``
    and ``name``)."""
    calls = json.loads(row["tool_calls_json"]) if row.get("tool_calls_json") else None
    out = {"seq": row["seq"], "id": row["id"], "agent_id": row["agent_id"], "role": row["role"],
           "content": row["content"], "tool_calls": calls, "status": row["status"], "run_id": row["run_id"],
           "source": row.get("source") or "api", "created_at": row["created_at"]}
    if row["role"] == "tool" and row.get("message_json"):
        exact = json.loads(row["message_json"])
        out.update(tool_call_id=exact.get("tool_call_id"), name=exact.get("name"))
    return out


def run_json(row: Dict[str, Any]) -> Dict[str, Any]:
    """A ``runs`` row as the API shows it."""
    return {"id": row["id"], "agent_id": row["agent_id"], "kind": row["kind"], "status": row["status"],
            "started_at": row["started_at"], "ended_at": row["ended_at"], "stop_reason": row["stop_reason"],
            "error": row["error"], "usage": json.loads(row["usage_json"]) if row["usage_json"] else None}
