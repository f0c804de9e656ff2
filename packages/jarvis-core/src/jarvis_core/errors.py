"""The jarvis error hierarchy.

Every error jarvis raises on purpose derives from :class:`JarvisError`, so an application can catch one
type. Messages say what to do next and never contain secrets: build them from public facts only (engine
id, host, status code, model name), never from request headers or keys.

::

    JarvisError
    ├── ConfigError                     bad config file, key, type or value
    ├── PluginError
    │   ├── PluginLoadError             a plugin failed to import/register (strict mode re-raises this)
    │   ├── DuplicateRegistrationError  two distributions registered the same key
    │   └── UnknownNameError            no engine/agent/tool/parser of that name (lists the available ones)
    ├── InvalidOptionError (ValueError) an option the engine does not allow
    └── EngineError
        ├── EngineConnectionError       unreachable, refused, DNS, timeout
        ├── EngineHTTPError             the server answered with an error status
        │   ├── BadRequestError
        │   │   ├── ContextLengthError
        │   │   └── ToolsNotSupportedError
        │   ├── AuthenticationError
        │   ├── ModelNotFoundError
        │   ├── RateLimitError          (retry_after)
        │   ├── ContentFilterError
        │   └── ServerError
        └── StreamError                 a stream broke or carried an error mid-way
            └── LimitExceededError      a reply went past a limit: line length, output size, deadline
"""

from __future__ import annotations

from typing import Iterable, Optional, Sequence

__all__ = [
    "AuthenticationError",
    "BadRequestError",
    "ConfigError",
    "ContentFilterError",
    "ContextLengthError",
    "DuplicateRegistrationError",
    "EngineConnectionError",
    "EngineError",
    "EngineHTTPError",
    "InvalidOptionError",
    "JarvisError",
    "LimitExceededError",
    "ModelNotFoundError",
    "PluginError",
    "PluginLoadError",
    "RateLimitError",
    "ServerError",
    "StreamError",
    "ToolsNotSupportedError",
    "UnknownNameError",
]


class JarvisError(Exception):
    """Base of every error jarvis raises on purpose."""


class ConfigError(JarvisError):
    """The configuration is wrong: names the file, the key and, where known, the line and a likely fix."""

    def __init__(
        self,
        message: str,
        *,
        path: Optional[str] = None,
        key: Optional[str] = None,
        line: Optional[int] = None,
        suggestion: Optional[str] = None,
    ) -> None:
        self.path = path
        self.key = key
        self.line = line
        self.suggestion = suggestion
        where = ""
        if path:
            where = f"{path}:{line}: " if line else f"{path}: "
        hint = f" (did you mean {suggestion!r}?)" if suggestion else ""
        super().__init__(f"{where}{message}{hint}")


class PluginError(JarvisError):
    """Something is wrong with a plugin or the registry."""


class PluginLoadError(PluginError):
    """A plugin failed to load. Raised only in strict mode (``JARVIS_STRICT_PLUGINS=1``)."""


class DuplicateRegistrationError(PluginError):
    """Two plugins registered the same key for the same kind."""


class UnknownNameError(PluginError, LookupError):
    """No registered item of that kind has that name; the message lists what is available."""

    def __init__(self, kind: str, name: str, available: Sequence[str]) -> None:
        self.kind = kind
        self.name = name
        self.available = tuple(sorted(available))
        listing = ", ".join(self.available) if self.available else "none installed"
        super().__init__(f"unknown {kind} {name!r}; available: {listing}")


class InvalidOptionError(JarvisError, ValueError):
    """An option an engine does not allow (options are allow-listed per engine)."""

    def __init__(self, engine_id: str, names: Iterable[str], allowed: Iterable[str]) -> None:
        self.engine_id = engine_id
        self.names = tuple(names)
        self.allowed = tuple(sorted(allowed))
        super().__init__(
            f"engine {engine_id!r} does not accept option(s) {', '.join(map(repr, self.names))}; "
            f"allowed: {', '.join(self.allowed)}"
        )


class EngineError(JarvisError):
    """Base of every engine failure. ``engine_id`` says which engine failed."""

    def __init__(self, message: str, *, engine_id: str = "") -> None:
        self.engine_id = engine_id
        super().__init__(message)


class EngineConnectionError(EngineError):
    """The engine could not be reached: connection refused, DNS failure, or a timeout."""


class EngineHTTPError(EngineError):
    """The server answered with an error status. ``body`` is a short, secret-free excerpt of its reply."""

    def __init__(self, message: str, *, engine_id: str = "", status_code: int = 0, body: str = "") -> None:
        self.status_code = status_code
        self.body = body
        super().__init__(message, engine_id=engine_id)


class BadRequestError(EngineHTTPError):
    """The server rejected the request (400/422)."""


class ContextLengthError(BadRequestError):
    """The prompt plus ``max_tokens`` does not fit the model's context. Never retried without tools."""


class ToolsNotSupportedError(BadRequestError):
    """The server said it does not support tool calling (e.g. vLLM started without auto tool choice)."""


class AuthenticationError(EngineHTTPError):
    """The key is missing, wrong or lacks permission (401/403)."""


class ModelNotFoundError(EngineHTTPError):
    """The server does not have the model (404, or a provider's own spelling of it)."""


class RateLimitError(EngineHTTPError):
    """Too many requests (429). ``retry_after`` is the server's hint in seconds, when it gave one."""

    def __init__(self, message: str, *, retry_after: Optional[float] = None, **kwargs: object) -> None:
        self.retry_after = retry_after
        super().__init__(message, **kwargs)  # type: ignore[arg-type]


class ContentFilterError(EngineHTTPError):
    """The provider refused the request or response on safety grounds."""


class ServerError(EngineHTTPError):
    """The server failed (5xx)."""


class StreamError(EngineError):
    """A stream broke off, was malformed, or carried an error payload mid-way."""


class LimitExceededError(StreamError):
    """A reply went past one of the client's limits: a line or body longer than the line cap, more output
    than was asked for, or the request's total deadline. ``limit`` names it (``line``, ``output``,
    ``deadline``); text already streamed stays with the caller, who has received it."""

    def __init__(self, message: str, *, engine_id: str = "", limit: str = "") -> None:
        self.limit = limit
        super().__init__(message, engine_id=engine_id)
