"""Engine base classes and HTTP plumbing. Importing this package imports httpx; ``jarvis_core`` does not."""

from jarvis_core.engine.base import (
    SAMPLING_FIELDS,
    SAMPLING_OPTIONS,
    InferenceEngine,
    ToolLike,
    supports_embeddings,
    supports_structured_output,
)
from jarvis_core.engine.factory import create_engine, engine_class
from jarvis_core.engine.messages import coerce_messages, messages_to_dicts, tools_to_openai

__all__ = [
    "SAMPLING_FIELDS",
    "SAMPLING_OPTIONS",
    "InferenceEngine",
    "ToolLike",
    "coerce_messages",
    "create_engine",
    "engine_class",
    "messages_to_dicts",
    "supports_embeddings",
    "supports_structured_output",
    "tools_to_openai",
]
