"""The jarvis error hierarchy.

Every error jarvis raises on purpose derives from :class:`JarvisError`, so an application can catch one
type. Messages say what to do next and never contain secrets: build them from public facts only (engine
id, host, status code, model name), never from request headers or keys.

One constructor pattern throughout: the message first, then the facts as keyword-only attributes, every
one optional (the option errors and :class:`UnknownNameError` take the facts and write the message
themselves). A class that adds no fact shares its parent's constructor. The facts in brackets below are
the attributes each class adds::

    JarvisError
    ├── ConfigError                     bad config file, key, type or value  [path, key, line, suggestion]
    ├── UsageError (ValueError)         a command or API called wrongly; the CLI exits 2  [argument]
    ├── PluginError                     a plugin is broken  [key, plugin, distribution]
    │   ├── PluginLoadError             a plugin failed to import/register (strict mode re-raises this)
    │   ├── DuplicateRegistrationError  two distributions registered the same key  [distributions]
    │   ├── RemovedAPIError (AttributeError)  plugin code used a removed public name  [name, removed_in, replacement]
    │   └── UnknownNameError            no engine/agent/tool/parser of that name  [kind, name, available]
    ├── InvalidOptionError (ValueError) an option the engine does not allow  [engine_id, names, allowed]
    │   ├── InvalidOptionValueError     an allowed option with a value the engine cannot take  [option, value, why]
    │   └── ConflictingOptionsError     options that cannot be used together  [why]
    └── EngineError                     [engine_id]
        ├── EngineConnectionError       unreachable, refused, DNS  [url]
        │   └── EngineTimeoutError      no answer within the timeout  [timeout, phase]
        ├── EngineHTTPError             the server answered with an error status  [status_code, body, retry_after]
        │   ├── BadRequestError         400/422
        │   │   ├── ContextLengthError
        │   │   └── ToolsNotSupportedError
        │   ├── AuthenticationError     401/403
        │   ├── ModelNotFoundError      [model]
        │   ├── RateLimitError          429
        │   ├── ContentFilterError
        │   └── ServerError             5xx
        ├── CapabilityError             the engine or model cannot do what was asked  [capability, model]
        │   ├── EmbeddingsNotSupportedError
        │   ├── StructuredOutputNotSupportedError
        │   └── VisionNotSupportedError
        ├── StructuredOutputError       the answer is not JSON, or not valid against the schema  [text, problems]
        ├── MalformedResponseError      a whole (non-streamed) reply that is not what the protocol says  [excerpt]
        └── StreamError                 a stream broke, was malformed or carried an error mid-way
            └── LimitExceededError      a reply went past a limit: line length, output size, deadline  [limit]

Not an error: :class:`JarvisDeprecationWarning` (a ``DeprecationWarning``) is the warning a deprecated public
name gives.
"""

from __future__ import annotations

from typing import Any, Dict, Iterable, Optional, Sequence, Tuple, Type

__all__ = [
    "AuthenticationError",
    "BadRequestError",
    "CapabilityError",
    "ConfigError",
    "ConflictingOptionsError",
    "ContentFilterError",
    "ContextLengthError",
    "DuplicateRegistrationError",
    "EmbeddingsNotSupportedError",
    "EngineConnectionError",
    "EngineError",
    "EngineHTTPError",
    "EngineTimeoutError",
    "InvalidOptionError",
    "InvalidOptionValueError",
    "JarvisDeprecationWarning",
    "JarvisError",
    "LimitExceededError",
    "MalformedResponseError",
    "ModelNotFoundError",
    "PluginError",
    "PluginLoadError",
    "RateLimitError",
    "RemovedAPIError",
    "ServerError",
    "StreamError",
    "StructuredOutputError",
    "StructuredOutputNotSupportedError",
    "ToolsNotSupportedError",
    "UnknownNameError",
    "UsageError",
    "VisionNotSupportedError",
]

#: How much of a server's reply :class:`MalformedResponseError` keeps.
EXCERPT_CHARS = 300


def _restore(cls: Type[BaseException], args: Tuple[Any, ...], state: Dict[str, Any]) -> BaseException:
    exc = cls.__new__(cls)
    exc.args = args
    exc.__dict__.update(state)
    return exc


class JarvisError(Exception):
    """Base of every error jarvis raises on purpose: ``JarvisError(message)``."""

    def __reduce__(self) -> Any:
        # Constructors take keyword-only facts (and some take no message), so rebuild from the state
        # instead of calling cls(*args): errors cross process boundaries (workers, the server's runners).
        return _restore, (type(self), self.args, self.__dict__)


class ConfigError(JarvisError):
    """The configuration is wrong.

    :param path: the config file, when the error is in one.
    :param key: the key at fault (dotted, ``engine.ollama.host``).
    :param line: its line in ``path``, when known.
    :param suggestion: the nearest valid key, shown as "did you mean".
    """

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


class UsageError(JarvisError, ValueError):
    """A command or an API was called wrongly: a missing or empty argument, an option without the one it
    needs, a closed object used. The ``jarvis`` command exits 2 on it, as on argparse's own usage errors.

    :param argument: the argument or option at fault (``--timeout``, ``question``), when there is one.
    """

    def __init__(self, message: str, *, argument: str = "") -> None:
        self.argument = argument
        super().__init__(message)


class PluginError(JarvisError):
    """Something is wrong with a plugin or the registry.

    :param key: the registered key at fault (an engine, tool, parser … name), when known.
    :param plugin: the plugin (entry point) to blame, when known.
    :param distribution: the distribution that ships it, when known.
    """

    def __init__(self, message: str, *, key: str = "", plugin: str = "", distribution: str = "") -> None:
        self.key = key
        self.plugin = plugin
        self.distribution = distribution
        super().__init__(message)


class PluginLoadError(PluginError):
    """A plugin failed to load. Raised only in strict mode (``JARVIS_STRICT_PLUGINS=1``); constructor as
    :class:`PluginError`."""


class RemovedAPIError(PluginError, AttributeError):
    """Plugin code used a public name that jarvis-core removed (``docs/contract.md`` §11). An
    ``AttributeError`` too, so ``hasattr`` and ``getattr(x, name, default)`` behave as before.

    :param name: the removed name (``EventType.STREAM_START``).
    :param removed_in: the jarvis-core version that removed it.
    :param replacement: what to use instead.
    The other attributes as :class:`PluginError` (``plugin``: the top-level package of the code that used it).
    """

    def __init__(self, message: str, *, key: str = "", plugin: str = "", distribution: str = "", name: str = "",
                 removed_in: str = "", replacement: str = "") -> None:
        super().__init__(message, key=key, plugin=plugin, distribution=distribution)
        self.name, self.removed_in, self.replacement = name, removed_in, replacement


class JarvisDeprecationWarning(DeprecationWarning):
    """A deprecated public name was used: the message names its replacement, the version that removes it
    and the plugin code that used it (``docs/contract.md`` §11)."""


class DuplicateRegistrationError(PluginError):
    """Two plugins registered the same key for the same kind.

    :param distributions: the distributions that registered it; the other attributes as :class:`PluginError`.
    """

    def __init__(self, message: str, *, key: str = "", distributions: Iterable[str] = ()) -> None:
        self.distributions = tuple(distributions)
        super().__init__(message, key=key)


class UnknownNameError(PluginError, LookupError):
    """No registered item of that kind has that name; the message lists what is available.

    :param kind: what was looked up (``engine``, ``agent``, ``tool``, ``parser``, ``hook`` …).
    :param name: the name that is not registered (also :attr:`key`).
    :param available: the names that are, sorted.
    :param note: said after the listing (where else it was looked for, the close matches), when given.
    """

    def __init__(self, kind: str, name: str, available: Sequence[str], *, note: str = "") -> None:
        self.kind = kind
        self.name = name
        self.available = tuple(sorted(available))
        listing = ", ".join(self.available) if self.available else "none installed"
        super().__init__(f"unknown {kind} {name!r}; available: {listing}{'; ' + note if note else ''}", key=name)


class InvalidOptionError(JarvisError, ValueError):
    """An option an engine does not allow (options are allow-listed per engine).

    :param engine_id: the engine that refused it.
    :param names: the options at fault.
    :param allowed: the options the engine accepts (empty when the fault is not the name: see the subclasses).
    :param message: replaces the generated message (for subclasses).
    """

    def __init__(self, engine_id: str, names: Iterable[str], allowed: Iterable[str] = (), *, message: str = "") -> None:
        self.engine_id = engine_id
        self.names = tuple(names)
        self.allowed = tuple(sorted(allowed))
        super().__init__(
            message
            or f"engine {engine_id!r} does not accept option(s) {', '.join(map(repr, self.names))}; "
            f"allowed: {', '.join(self.allowed)}"
        )


_NO_VALUE: Any = object()


def _short_repr(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


class InvalidOptionValueError(InvalidOptionError):
    """An option the engine allows, with a value it cannot take (checked before anything is sent).

    :param engine_id: the engine (``ollama``, ``cloud (google)``).
    :param option: the option (also ``names[0]``).
    :param why: what is wrong or what is expected (``expected an integer``).
    :param value: the value given, when showing it helps (``None`` when not given; never pass a secret).
    """

    def __init__(self, engine_id: str, option: str, why: str, *, value: Any = _NO_VALUE) -> None:
        self.option = option
        self.why = why
        self.value = None if value is _NO_VALUE else value
        shown = "" if value is _NO_VALUE else f" = {_short_repr(value)}"
        super().__init__(engine_id, (option,), message=f"{engine_id}: option {option!r}{shown} is invalid: {why}")


class ConflictingOptionsError(InvalidOptionError):
    """Options that are each allowed but cannot be used together (``response_format`` with tools in the
    ``json_schema`` tool mode, say).

    :param engine_id: the engine.
    :param names: the options in conflict, the one to change first.
    :param why: why they conflict and what to do.
    """

    def __init__(self, engine_id: str, names: Iterable[str], why: str) -> None:
        self.why = why
        names = tuple(names)
        listed = " and ".join(map(repr, names))
        super().__init__(engine_id, names, message=f"{engine_id}: options {listed} cannot be used together: {why}")


class EngineError(JarvisError):
    """Base of every engine failure.

    :param engine_id: which engine failed.
    """

    def __init__(self, message: str, *, engine_id: str = "") -> None:
        self.engine_id = engine_id
        super().__init__(message)


class EngineConnectionError(EngineError):
    """The engine could not be reached: connection refused, DNS failure, a server that never became ready.

    :param url: the address tried, when known; the other attributes as :class:`EngineError`.
    """

    def __init__(self, message: str, *, engine_id: str = "", url: str = "") -> None:
        self.url = url
        super().__init__(message, engine_id=engine_id)


class EngineTimeoutError(EngineConnectionError):
    """The engine did not answer within the timeout (a gateway timeout: the jarvis server answers 504).
    A stream that falls silent after it started is a :class:`StreamError` instead.

    :param timeout: the seconds waited, when known.
    :param phase: what timed out: ``connect``, ``read``, ``write`` or ``pool`` (``""`` when unknown).
    :param url: / :param engine_id: as :class:`EngineConnectionError`.
    """

    def __init__(
        self, message: str, *, engine_id: str = "", url: str = "", timeout: Optional[float] = None, phase: str = ""
    ) -> None:
        self.timeout = timeout
        self.phase = phase
        super().__init__(message, engine_id=engine_id, url=url)


class EngineHTTPError(EngineError):
    """The server answered with an error status. Every subclass shares this constructor.

    :param status_code: the HTTP status (0 for an error payload that came with a 200).
    :param body: a short, secret-free excerpt of the reply.
    :param retry_after: seconds the server asked to wait before retrying (``Retry-After`` on a 429 or a
        503), when it said.
    :param engine_id: as :class:`EngineError`.
    """

    def __init__(
        self, message: str, *, engine_id: str = "", status_code: int = 0, body: str = "",
        retry_after: Optional[float] = None,
    ) -> None:
        self.status_code = status_code
        self.body = body
        self.retry_after = retry_after
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
    """The server does not have the model (404, or a provider's own spelling of it).

    :param model: the model asked for, when known; the other attributes as :class:`EngineHTTPError`.
    """

    def __init__(
        self, message: str, *, model: str = "", engine_id: str = "", status_code: int = 0, body: str = "",
        retry_after: Optional[float] = None,
    ) -> None:
        self.model = model
        super().__init__(message, engine_id=engine_id, status_code=status_code, body=body, retry_after=retry_after)


class RateLimitError(EngineHTTPError):
    """Too many requests (429); :attr:`retry_after` is the server's hint in seconds, when it gave one."""


class ContentFilterError(EngineHTTPError):
    """The provider refused the request or response on safety grounds."""


class ServerError(EngineHTTPError):
    """The server failed (5xx); a 503 may carry :attr:`retry_after`."""


class CapabilityError(EngineError):
    """The engine, or the model on it, cannot do what the request asks (embeddings, ``response_format``,
    images); raised before anything is sent when the engine knows, never a silent fallback. The jarvis
    server answers 400.

    :param capability: ``embeddings``, ``response_format`` or ``vision``.
    :param model: the model, when the limit is the model's rather than the engine's.
    :param engine_id: as :class:`EngineError`.
    """

    capability_name = ""
    what = "this"

    def __init__(self, message: str = "", *, engine_id: str = "", model: str = "", capability: str = "") -> None:
        self.capability = capability or self.capability_name
        self.model = model
        if not message:
            who = f"model {model!r} on engine {engine_id!r}" if model else f"engine {engine_id!r}"
            message = f"{who} has no {self.what}"
        super().__init__(message, engine_id=engine_id)


class EmbeddingsNotSupportedError(CapabilityError):
    """The engine (or model) serves no embeddings (Anthropic; an engine that does not implement ``embed``)."""

    capability_name = "embeddings"
    what = "embeddings"


class StructuredOutputNotSupportedError(CapabilityError):
    """The engine (or model) cannot honour ``response_format``."""

    capability_name = "response_format"
    what = "structured output (response_format)"


class VisionNotSupportedError(CapabilityError):
    """The message holds an image and the engine or model cannot see (a text-only model, as its server
    reports it); the image is never dropped."""

    capability_name = "vision"
    what = "vision: it cannot take images"


class StructuredOutputError(EngineError):
    """A structured-output answer (``response_format``) that is not JSON, or not valid against the schema.

    :param text: the model's whole answer (nothing of it is lost; :func:`repr` and the message show only its start).
    :param problems: what is wrong, one entry per problem.
    :param engine_id: as :class:`EngineError`.
    """

    def __init__(self, message: str, *, engine_id: str = "", text: str = "", problems: Sequence[str] = ()) -> None:
        self.text = text
        self.problems = tuple(problems)
        super().__init__(message, engine_id=engine_id)


class MalformedResponseError(EngineError):
    """A whole (non-streamed) reply that is not what the protocol says: not JSON, a web page, JSON of the
    wrong shape. Usually a wrong address, a proxy in the way, or a server of another kind.

    :param excerpt: the start of the reply, secrets masked (the raiser redacts it; at most 300 characters).
    :param engine_id: as :class:`EngineError`.
    """

    def __init__(self, message: str, *, engine_id: str = "", excerpt: str = "") -> None:
        self.excerpt = excerpt[:EXCERPT_CHARS]
        super().__init__(message, engine_id=engine_id)


class StreamError(EngineError):
    """A stream broke off, was malformed, or carried an error payload mid-way; the text already streamed
    stays with the caller. Constructor as :class:`EngineError`."""


class LimitExceededError(StreamError):
    """A reply went past one of the client's limits: a line or body longer than the line cap, more output
    than was asked for, or the request's total deadline; text already streamed stays with the caller, who
    has received it.

    :param limit: which limit: ``line``, ``output`` or ``deadline``.
    :param engine_id: as :class:`EngineError`.
    """

    def __init__(self, message: str, *, engine_id: str = "", limit: str = "") -> None:
        self.limit = limit
        super().__init__(message, engine_id=engine_id)
