"""The ``[engine.cloud]`` config table. Field names are :class:`~jarvis_engine_cloud.engine.CloudEngine`
keyword arguments; keys are kept out of ``repr``.

::

    [engine.cloud]
    anthropic_api_key = "..."          # or ANTHROPIC_API_KEY
    openai_base_url = "http://localhost:4000/v1"   # e.g. a LiteLLM proxy (or OPENAI_BASE_URL)
    max_retries = 2
"""

from __future__ import annotations

from typing import Optional

import attrs

from jarvis_core.config.value_checks import METADATA_ENV
from jarvis_core.engine.limits import check_count, check_seconds, validator
from jarvis_engine_cloud.credentials import URL_VARS
from jarvis_engine_cloud.routing import ANTHROPIC, GOOGLE, OPENAI

__all__ = ["CloudConfig"]


@attrs.frozen
class CloudConfig:
    """Schema of ``[engine.cloud]`` (every field optional; unset fields fall back to the environment)."""

    openai_api_key: Optional[str] = attrs.field(default=None, repr=False)
    anthropic_api_key: Optional[str] = attrs.field(default=None, repr=False)
    gemini_api_key: Optional[str] = attrs.field(default=None, repr=False)
    openai_base_url: Optional[str] = attrs.field(default=None, metadata={METADATA_ENV: URL_VARS[OPENAI]})
    anthropic_base_url: Optional[str] = attrs.field(default=None, metadata={METADATA_ENV: URL_VARS[ANTHROPIC]})
    gemini_base_url: Optional[str] = attrs.field(default=None, metadata={METADATA_ENV: URL_VARS[GOOGLE]})
    timeout: Optional[float] = attrs.field(default=None, validator=validator(check_seconds))
    connect_timeout: Optional[float] = attrs.field(default=None, validator=validator(check_seconds))
    max_retries: Optional[int] = attrs.field(default=None, validator=validator(check_count, minimum=0))
    anthropic_version: Optional[str] = None
    openai_max_tokens_field: Optional[str] = None
    #: Seconds for a whole request, first byte to last (``None``: 600, the default; ``inf``: no total deadline).
    deadline: Optional[float] = attrs.field(default=None, validator=validator(check_seconds))
    #: Bytes one reply may take (``None``: only the bound derived from ``max_tokens``).
    max_output_bytes: Optional[int] = attrs.field(default=None, validator=validator(check_count))
    #: The longest line, stream event or non-streamed body accepted, in bytes (default 16 MiB).
    max_line_bytes: Optional[int] = attrs.field(default=None, validator=validator(check_count))
    #: Connections to each provider at most (default 100): the concurrent requests you run, so a burst of them
    #: does not queue for connections.
    max_connections: Optional[int] = attrs.field(default=None, validator=validator(check_count))
    #: Idle connections kept up to 5 s for the next requests (default: as many as ``max_connections``).
    max_keepalive_connections: Optional[int] = attrs.field(default=None, validator=validator(check_count, minimum=0))
