"""Turning recorded protocol transcripts into :class:`~jarvis_core.testing.replay.Exchange` objects.

A transcript is a dict ``{"id", "request": {"method", "path" | "url", "body"?}, "response": {"status",
"content_type", <body>}}`` where the body is one of:

``body``          a JSON value (or a string, sent as text)
``ndjson_lines``  NDJSON lines (strings), one chunk each
``events``        raw SSE event texts (``'data: {...}'``), each followed by a blank line
``raw_sse``       the exact SSE byte stream (kept as is, CRLFs included; split into one chunk per event)
``sse_events``    ``[{"event"?: name, "data": value}]``, framed as ``event: name`` / ``data: <json>``

Requests recorded with a full ``url`` (cloud providers) match on its path and query; ``path=`` overrides
the path and ``any_path=True`` matches every path.
"""

from __future__ import annotations

import json
import os
import re
from typing import Any, Iterable, List, Mapping, Optional, Sequence, Union
from urllib.parse import urlsplit

from jarvis_core.testing.replay import Exchange

__all__ = ["exchange_from_transcript", "exchanges_from_transcripts", "load_transcripts", "split_raw_sse"]

_KEEP: Any = object()
_EVENT_END = re.compile(r".*?(?:\r\n\r\n|\n\n|\r\r)", re.DOTALL)


def load_transcripts(path: Union[str, os.PathLike[str]]) -> List[dict[str, Any]]:
    """Read a transcript file (a JSON list of transcripts)."""
    return json_list(path, "transcripts")


def json_list(path: Union[str, os.PathLike[str]], what: str) -> List[dict[str, Any]]:
    """The JSON list of ``what`` in the file at ``path`` (``ValueError`` when it holds something else)."""
    with open(path, encoding="utf-8") as fh:
        data = json.load(fh)
    if not isinstance(data, list):
        raise ValueError(f"{path}: expected a JSON list of {what}, got {type(data).__name__}")
    return data


def split_raw_sse(raw: str) -> List[str]:
    """Cut a raw SSE stream into chunks, one per event, keeping every byte (line endings included)."""
    chunks = [m.group(0) for m in _EVENT_END.finditer(raw)]
    rest = raw[sum(map(len, chunks)) :]
    if rest:
        chunks.append(rest)
    return chunks


def _sse_event_text(event: Mapping[str, Any]) -> str:
    data = event.get("data")
    text = data if isinstance(data, str) else json.dumps(data)
    lines = [f"event: {event['event']}"] if event.get("event") else []
    lines += [f"data: {part}" for part in text.split("\n")]
    return "\n".join(lines)


def _request_target(request: Mapping[str, Any]) -> Optional[str]:
    if request.get("path"):
        return str(request["path"])
    if request.get("url"):
        split = urlsplit(str(request["url"]))
        return split.path + (f"?{split.query}" if split.query else "")
    return None


def exchange_from_transcript(
    transcript: Mapping[str, Any],
    *,
    path: Any = _KEEP,
    any_path: bool = False,
    match_body: Optional[Any] = None,
    **overrides: Any,
) -> Exchange:
    """One transcript as an :class:`Exchange`.

    :param path: match this path instead of the recorded one (``None``: any path).
    :param any_path: match every path (same as ``path=None``).
    :param match_body: a subset dict or predicate for the request body (default: the body is not checked,
        since an engine under test rarely sends byte-for-byte the recorded request).
    :param overrides: any other :class:`Exchange` field (``delay=``, ``break_after=``, ``times=``, …).
    """
    request = transcript.get("request") or {}
    response = transcript.get("response") or {}
    name = str(transcript.get("id", ""))
    target = None if any_path else (_request_target(request) if path is _KEEP else path)
    headers = dict(response.get("headers") or {})
    if response.get("content_type"):
        headers.setdefault("Content-Type", str(response["content_type"]))
    body: dict[str, Any] = {}
    if "ndjson_lines" in response:
        body["ndjson"] = list(response["ndjson_lines"])
    elif "raw_sse" in response:
        body["raw"] = split_raw_sse(response["raw_sse"])
    elif "events" in response:
        body["sse"] = list(response["events"])
    elif "sse_events" in response:
        body["sse"] = [_sse_event_text(ev) for ev in response["sse_events"]]
    elif "body" in response:
        value = response["body"]
        if isinstance(value, str) and "json" not in headers.get("Content-Type", "json"):
            body["raw"] = value
        else:
            body["json"] = value
    fields: dict[str, Any] = {
        "method": str(request.get("method", "POST")),
        "path": target,
        "match": match_body,
        "status": int(response.get("status", 200)),
        "headers": headers,
        "name": name,
        "meta": dict(transcript),
        **body,
    }
    fields.update(overrides)
    return Exchange(**fields)


def exchanges_from_transcripts(
    transcripts: Iterable[Mapping[str, Any]],
    ids: Optional[Sequence[str]] = None,
    *,
    path: Any = _KEEP,
    any_path: bool = False,
    match_body: Optional[Any] = None,
    **overrides: Any,
) -> List[Exchange]:
    """Exchanges for the transcripts (all of them, or those named in ``ids``, in the order of ``ids``).

    Several transcripts often share one method and path (``POST /api/chat``): the first one wins, so pick
    the ones a test needs with ``ids``. Unknown ids raise :class:`KeyError` listing the known ones.
    """
    items = list(transcripts)
    if ids is not None:
        by_id = {str(t.get("id")): t for t in items}
        missing = [i for i in ids if i not in by_id]
        if missing:
            raise KeyError(f"no transcript(s) {', '.join(map(repr, missing))}; known: {', '.join(sorted(by_id))}")
        items = [by_id[i] for i in ids]
    return [
        exchange_from_transcript(t, path=path, any_path=any_path, match_body=match_body, **overrides) for t in items
    ]
