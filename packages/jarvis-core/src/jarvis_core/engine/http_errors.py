"""Turning HTTP failures and error payloads into the typed errors of :mod:`jarvis_core.errors`.

Classification looks at the status code and at the words servers use (OpenAI, vLLM, SGLang, llama.cpp,
Ollama, Anthropic, Gemini all phrase "context too long" or "model not found" differently). Messages carry
only the engine id, status and a short excerpt of the server's own words, never request headers.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Mapping, Optional

from jarvis_core.errors import (
    AuthenticationError,
    BadRequestError,
    ContentFilterError,
    ContextLengthError,
    EngineError,
    EngineHTTPError,
    EngineTimeoutError,
    ModelNotFoundError,
    RateLimitError,
    ServerError,
    StreamError,
    ToolsNotSupportedError,
)

if TYPE_CHECKING:
    import httpx

__all__ = ["classify_http_error", "error_from_payload", "error_message_of", "parse_retry_after", "timeout_error"]

_CONTEXT_WORDS = (
    "context length",
    "context_length",
    "maximum context",
    "context window",
    "too many tokens",
    "exceeds the context",
    "exceed_context_size",
    "prompt is too long",
    "input is too long",
    "reduce the length",
    "longer than the model",
    "input token count",
    "exceeds the available context size",
)
_TOOLS_WORDS = (
    "enable-auto-tool-choice",
    "auto tool choice",
    "tool-call-parser",
    "does not support tools",
    "tools are not supported",
    "tool use is not supported",
    "tool calling is not supported",
    "requires --jinja",
    "tools param requires",
)
_NOT_FOUND_WORDS = ("model not found", "not found", "does not exist", "no such model", "unknown model")
_FILTER_WORDS = ("content_filter", "content filter", "safety", "content management policy")


def error_message_of(payload: Any) -> str:
    """The human message inside an error payload (``{"error": {"message": …}}``, ``{"error": "…"}``, …)."""
    if isinstance(payload, Mapping):
        err = payload.get("error", payload)
        if isinstance(err, Mapping):
            for key in ("message", "msg", "detail", "status"):
                if err.get(key):
                    return str(err[key])
            return json.dumps(err)[:500]
        if err:
            return str(err)
        if payload.get("detail"):
            return str(payload["detail"])
    return str(payload)[:500]


def parse_retry_after(value: Optional[str]) -> Optional[float]:
    """Seconds from a ``Retry-After`` header (a number of seconds; HTTP dates are not trusted)."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None


def classify_http_error(
    status: int,
    body: Any,
    *,
    engine_id: str = "",
    model: Optional[str] = None,
    retry_after: Optional[float] = None,
) -> EngineHTTPError:
    """The typed error for an HTTP error status and its (decoded JSON or text) body; ``retry_after`` (the
    server's ``Retry-After``) is kept on whichever error it is, a 503 as much as a 429."""
    text = error_message_of(body)
    low = text.lower()
    excerpt = text[:300]
    kw: dict[str, Any] = {"engine_id": engine_id, "status_code": status, "body": excerpt, "retry_after": retry_after}
    who = engine_id or "engine"
    if status == 429 or "rate limit" in low or "resource_exhausted" in low:
        hint = f"; retry after {retry_after:g}s" if retry_after is not None else "; slow down and retry"
        return RateLimitError(f"{who}: rate limited (HTTP {status}){hint}: {excerpt}", **kw)
    if status in (401, 403):
        return AuthenticationError(f"{who}: authentication failed (HTTP {status}); check the API key: {excerpt}", **kw)
    if any(w in low for w in _CONTEXT_WORDS):
        return ContextLengthError(
            f"{who}: the prompt does not fit the model's context (HTTP {status}); shorten the conversation "
            f"or lower max_tokens: {excerpt}",
            **kw,
        )
    if "model" in low and (status == 404 or any(w in low for w in _NOT_FOUND_WORDS)):
        name = f" {model!r}" if model else ""
        return ModelNotFoundError(f"{who}: model{name} not found (HTTP {status}): {excerpt}", model=model or "", **kw)
    if status == 404:  # a wrong base URL or path, not a missing model (that says so in its body)
        return EngineHTTPError(
            f"{who}: the server has no such endpoint (HTTP 404); check the server address (host or base URL): "
            f"{' '.join(excerpt.split())[:200]}", **kw)
    if any(w in low for w in _TOOLS_WORDS):
        return ToolsNotSupportedError(f"{who}: the server does not support tool calling (HTTP {status}): {excerpt}", **kw)
    if any(w in low for w in _FILTER_WORDS) and status < 500:
        return ContentFilterError(f"{who}: blocked by the provider's content filter: {excerpt}", **kw)
    if status >= 500:
        return ServerError(f"{who}: server error (HTTP {status}): {excerpt}", **kw)
    if status in (400, 405, 409, 413, 415, 422):
        return BadRequestError(f"{who}: bad request (HTTP {status}): {excerpt}", **kw)
    return EngineHTTPError(f"{who}: HTTP {status}: {excerpt}", **kw)


_PHASES = {"ConnectTimeout": "connect", "ReadTimeout": "read", "WriteTimeout": "write", "PoolTimeout": "pool"}


def timeout_error(exc: httpx.TimeoutException, *, engine_id: str, url: str, who: str = "") -> EngineTimeoutError:
    """The :class:`~jarvis_core.errors.EngineTimeoutError` for an httpx timeout, naming what timed out
    (connect, read, write, pool) and after how many seconds. ``who`` names the engine in the message
    (default ``engine_id``)."""
    phase = _PHASES.get(type(exc).__name__, "")
    try:
        seconds = exc.request.extensions.get("timeout", {}).get(phase)
    except RuntimeError:  # raised by httpx when the exception carries no request
        seconds = None
    seconds = seconds if isinstance(seconds, (int, float)) else None
    waited = f" after {seconds:g}s" if seconds is not None else ""
    what = {"connect": "connecting to", "write": "sending to", "pool": "waiting for a free connection to"}.get(
        phase, "waiting for an answer from")
    return EngineTimeoutError(
        f"{who or engine_id}: timed out{waited} {what} {url}; is the server overloaded or stuck? (if it is "
        "only slow, raise the engine's timeout)",
        engine_id=engine_id, url=url, timeout=seconds, phase=phase,
    )


def error_from_payload(payload: Any, *, engine_id: str = "", in_stream: bool = False) -> EngineError:
    """The typed error for an error payload received with a 200 status (usually mid-stream)."""
    err = payload.get("error") if isinstance(payload, Mapping) else None
    if err is None and isinstance(payload, Mapping) and payload.get("object") == "error":
        err = payload  # older vLLM: {"object": "error", "message", "type", "code"} at the top level
    status = 0
    if isinstance(err, Mapping):
        code = err.get("code") or err.get("status_code")
        if isinstance(code, int):
            status = code
        etype = str(err.get("type", ""))
        if etype == "overloaded_error":
            status = 529
        elif etype == "rate_limit_error":
            status = 429
        elif etype == "authentication_error":
            status = 401
    if status:
        return classify_http_error(status, payload, engine_id=engine_id)
    msg = error_message_of(payload)
    probe = classify_http_error(400, payload, engine_id=engine_id)
    if isinstance(probe, (ContextLengthError, ModelNotFoundError, RateLimitError)):
        return probe
    where = "mid-stream" if in_stream else "in its reply"
    return StreamError(f"{engine_id or 'engine'} reported an error {where}: {msg[:300]}", engine_id=engine_id)
