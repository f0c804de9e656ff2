"""OpenAI error objects: what a client sees when a request fails.

Every failure is ``{"error": {"message", "type", "param", "code"}}`` with a status the official clients map
to the matching exception (400 ``BadRequestError``, 401 ``AuthenticationError``, 404 ``NotFoundError``, 429
``RateLimitError``, 5xx ``InternalServerError``). The engine's typed errors decide the status:

=================================== ====== =========================
jarvis error                        status code
=================================== ====== =========================
``InvalidOptionError``              400    ``unsupported_parameter``
``ContextLengthError``              400    ``context_length_exceeded``
``ToolsNotSupportedError``          400    ``tools_not_supported``
``ContentFilterError``              400    ``content_filter``
``BadRequestError``                 400    ``invalid_request``
``AuthenticationError``             401    ``upstream_authentication``
``ConfigError``, ``UsageError``     400    ``invalid_request``
``ModelNotFoundError`` / unknown    404    ``model_not_found``
``RateLimitError``                  429    ``rate_limit_exceeded``
``EngineTimeoutError``              504    ``engine_timeout``
``EngineConnectionError``           503    ``engine_unavailable``
``ServerError``, ``StreamError``,   502    ``upstream_error``
``MalformedResponseError``, other
``EngineHTTPError``
``PluginError``                     500    ``plugin_error``
anything else                       500    ``internal_error`` (message withheld, logged)
=================================== ====== =========================

Messages come from jarvis errors, which never hold secrets; an unexpected exception's text is not sent. An
agent whose run raises is a ``PluginError`` naming the agent key, its plugin and distribution and the
exception's type (:func:`jarvis_server.withheld.agent_failure`); the log line names the same and where it was
raised.
"""

from __future__ import annotations

import json
import logging
from typing import Any, Dict, List, Optional, Tuple

from jarvis_core import errors as E
from jarvis_server.error_responses import note_error
from jarvis_server.withheld import log_withheld, withheld_message

__all__ = ["RequestError", "error_body", "error_for", "sse_error"]

log = logging.getLogger("jarvis_server")

_TYPES = {400: "invalid_request_error", 401: "authentication_error", 404: "not_found_error",
          409: "conflict_error", 429: "rate_limit_error"}


class RequestError(Exception):
    """A request the server refuses before calling the engine: a status, a message and the field at fault."""

    def __init__(self, message: str, *, status: int = 400, param: Optional[str] = None, code: str = "invalid_request") -> None:
        super().__init__(message)
        self.status, self.param, self.code = status, param, code


def _type_for(status: int) -> str:
    return _TYPES.get(status, "server_error" if status >= 500 else "invalid_request_error")


def error_body(status: int, message: str, *, code: str, param: Optional[str] = None) -> Dict[str, Any]:
    """The OpenAI error object."""
    return {"error": {"message": message, "type": _type_for(status), "param": param, "code": code}}


# Most specific first: the first matching class decides.
_MAP: List[Tuple[type, int, str]] = [
    (E.InvalidOptionError, 400, "unsupported_parameter"),
    (E.ContextLengthError, 400, "context_length_exceeded"),
    (E.ToolsNotSupportedError, 400, "tools_not_supported"),
    (E.ContentFilterError, 400, "content_filter"),
    (E.CapabilityError, 400, "unsupported_capability"),
    (E.BadRequestError, 400, "invalid_request"),
    (E.AuthenticationError, 401, "upstream_authentication"),
    (E.ModelNotFoundError, 404, "model_not_found"),
    (E.UnknownNameError, 404, "not_found"),
    (E.RateLimitError, 429, "rate_limit_exceeded"),
    (E.EngineTimeoutError, 504, "engine_timeout"),
    (E.EngineConnectionError, 503, "engine_unavailable"),
    (E.ServerError, 502, "upstream_error"),
    (E.StreamError, 502, "upstream_error"),
    (E.EngineHTTPError, 502, "upstream_error"),
    (E.EngineError, 502, "upstream_error"),
    (E.ConfigError, 400, "invalid_request"),
    (E.UsageError, 400, "invalid_request"),
    (E.PluginError, 500, "plugin_error"),
    (E.JarvisError, 500, "internal_error"),
]


def error_for(exc: BaseException) -> Tuple[int, Dict[str, Any], Dict[str, str]]:
    """``(status, body, headers)`` for an exception raised while answering a request (its code is noted for
    ``/metrics``: :mod:`jarvis_server.error_responses`)."""
    status, body, headers = _error_for(exc)
    note_error(body["error"]["code"])
    return status, body, headers


def _error_for(exc: BaseException) -> Tuple[int, Dict[str, Any], Dict[str, str]]:
    if isinstance(exc, RequestError):
        return exc.status, error_body(exc.status, str(exc), code=exc.code, param=exc.param), {}
    headers: Dict[str, str] = {}
    for cls, status, code in _MAP:
        if isinstance(exc, cls):
            param = None
            if isinstance(exc, E.InvalidOptionError) and exc.names:
                param = exc.names[0]
            if isinstance(exc, E.RateLimitError) and exc.retry_after is not None:
                headers["retry-after"] = str(max(1, round(exc.retry_after)))
            return status, error_body(status, str(exc), code=code, param=param), headers
    log_withheld(exc, "answering a request")
    return 500, error_body(500, withheld_message(exc), code="internal_error"), headers


def sse_error(exc: BaseException) -> bytes:
    """An error after the first byte of a stream: an ``error`` SSE event holding the error object."""
    _status, body, _headers = error_for(exc)
    return b"event: error\ndata: " + json.dumps(body, ensure_ascii=False).encode() + b"\n\n"
