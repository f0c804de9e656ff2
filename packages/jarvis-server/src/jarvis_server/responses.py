"""The responses every route module sends: JSON bodies, OpenAI error objects and the headers of a stream.

Route modules and the logic behind them (:mod:`.agent_chat`, :mod:`.engine_chat`, :mod:`.managed.routes`)
import these from here, so none of them imports another route module."""

from __future__ import annotations

import json
from typing import Any, Dict, Optional

from starlette.responses import Response

from jarvis_server.openai_errors import error_for

__all__ = ["SSE_HEADERS", "error_response", "json_response"]

#: The headers of every server-sent-events response (no caching, no proxy buffering).
SSE_HEADERS = {"cache-control": "no-cache", "x-accel-buffering": "no"}


def json_response(data: Any, status: int = 200, headers: Optional[Dict[str, str]] = None) -> Response:
    """A JSON response (compact, UTF-8)."""
    body = json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode()
    return Response(body, status_code=status, media_type="application/json", headers=headers)


def error_response(exc: BaseException) -> Response:
    """The OpenAI error response for ``exc``."""
    status, body, headers = error_for(exc)
    return json_response(body, status, headers)
