"""The schema of ``[engine.ollama]`` in ``~/.jarvis/config.toml``.

Every field is a keyword argument of :class:`~jarvis_engine_ollama.engine.OllamaEngine`; unset fields
(``None``) leave the engine's defaults. Example::

    [engine.ollama]
    host = "gpu-box:11434"      # any OLLAMA_HOST form; the OLLAMA_HOST variable overrides it
    num_ctx = 16384             # context window per request; 0 = let the server decide
    keep_alive = "30m"          # or seconds; -1 keeps the model loaded forever
    think = true                # default for the think option ("low"/"medium"/"high" for gpt-oss)
    timeout = 600.0
"""

from __future__ import annotations

from typing import Any, Optional

import attrs

from jarvis_core.config.value_checks import METADATA_ADDRESS_CHECK
from jarvis_core.engine.limits import check_count, check_seconds, validator
from jarvis_engine_ollama.host import resolve_host
from jarvis_engine_ollama.options import check_keep_alive, check_num_ctx, check_think

__all__ = ["OllamaConfig"]


def _check_host(value: str, source: str) -> None:
    """``jarvis config show`` checks the host (from the file or ``OLLAMA_HOST``) as the engine reads it."""
    resolve_host(value, source=source)


def _validate(check: Any) -> Any:
    def validator(_inst: Any, _attr: Any, value: Any) -> None:
        check(value)

    return validator


@attrs.frozen
class OllamaConfig:
    """``[engine.ollama]``: where the server is and how requests are made."""

    host: Optional[str] = attrs.field(default=None, metadata={METADATA_ADDRESS_CHECK: _check_host})
    api_key: Optional[str] = attrs.field(default=None, repr=False)
    timeout: Optional[float] = attrs.field(default=None, validator=validator(check_seconds))
    connect_timeout: Optional[float] = attrs.field(default=None, validator=validator(check_seconds))
    health_timeout: Optional[float] = attrs.field(default=None, validator=validator(check_seconds))
    num_ctx: Optional[int] = attrs.field(default=None, validator=_validate(check_num_ctx))
    keep_alive: Any = attrs.field(default=None, validator=_validate(check_keep_alive))
    think: Any = attrs.field(default=None, validator=_validate(check_think))
    #: Seconds for a whole request, first byte to last (``None``: 600, the default; ``inf``: no total deadline).
    deadline: Optional[float] = attrs.field(default=None, validator=validator(check_seconds))
    #: Bytes one reply may take (``None``: only the bound derived from ``max_tokens``).
    max_output_bytes: Optional[int] = attrs.field(default=None, validator=validator(check_count))
    #: The longest line, stream event or non-streamed body accepted, in bytes (default 16 MiB).
    max_line_bytes: Optional[int] = attrs.field(default=None, validator=validator(check_count))
    #: Connections to the server at most (default 100): the concurrent requests you run, so a burst of them
    #: does not queue for connections.
    max_connections: Optional[int] = attrs.field(default=None, validator=validator(check_count))
    #: Idle connections kept up to 5 s for the next requests (default: as many as ``max_connections``).
    max_keepalive_connections: Optional[int] = attrs.field(default=None, validator=validator(check_count, minimum=0))
