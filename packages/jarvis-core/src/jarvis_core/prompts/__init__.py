"""Prompt providers: the contract, the Jarvis JSON reply type, shared building blocks, lookup and use.

- :class:`PromptProvider` — the contract a plugin implements (``docs/prompts.md``).
- :class:`JarvisReply` / :class:`JarvisToolCall` — Jarvis JSON, read without ever raising on model output.
- :mod:`~jarvis_core.prompts.blocks` (prompt text) and :mod:`~jarvis_core.prompts.output` (reply parsing)
  — the building blocks providers assemble themselves from.
- :func:`get_provider` / :func:`choose_provider` — lookup by case-insensitive name, or ``auto`` by model id.
- :class:`PromptSession` — a provider put to work on one request (what ``Jarvis.ask`` and agents use);
  :class:`PromptDrivenAgent` — the agent contract's tool loop driven by a session.

Names are imported lazily, so importing this package costs nothing until a name is used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from jarvis_core.lazy import lazy_exports

_LAZY = {
    "PromptProvider": "jarvis_core.prompts.provider",
    "JARVIS_JSON_RESPONSE_FORMAT": "jarvis_core.prompts.provider",
    "append_suffix": "jarvis_core.prompts.provider",
    "JarvisReply": "jarvis_core.prompts.jarvis_json",
    "JarvisToolCall": "jarvis_core.prompts.jarvis_json",
    "NodeContext": "jarvis_core.prompts.context",
    "coerce_tools": "jarvis_core.prompts.context",
    "AUTO": "jarvis_core.prompts.lookup",
    "AutoChoice": "jarvis_core.prompts.lookup",
    "choose_provider": "jarvis_core.prompts.lookup",
    "get_provider": "jarvis_core.prompts.lookup",
    "provider_for_model": "jarvis_core.prompts.lookup",
    "provider_registrations": "jarvis_core.prompts.lookup",
    "PromptDrivenAgent": "jarvis_core.prompts.agent",
    "PromptReply": "jarvis_core.prompts.session",
    "PromptSession": "jarvis_core.prompts.session",
    "training_example": "jarvis_core.prompts.training",
    "training_examples": "jarvis_core.prompts.training",
}

__all__ = [
    "AUTO",
    "JARVIS_JSON_RESPONSE_FORMAT",
    "AutoChoice",
    "JarvisReply",
    "JarvisToolCall",
    "NodeContext",
    "PromptDrivenAgent",
    "PromptProvider",
    "PromptReply",
    "PromptSession",
    "append_suffix",
    "choose_provider",
    "coerce_tools",
    "get_provider",
    "provider_for_model",
    "provider_registrations",
    "training_example",
    "training_examples",
]

__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals())

if TYPE_CHECKING:  # pragma: no cover
    from jarvis_core.prompts.agent import PromptDrivenAgent
    from jarvis_core.prompts.context import NodeContext, coerce_tools
    from jarvis_core.prompts.jarvis_json import JarvisReply, JarvisToolCall
    from jarvis_core.prompts.lookup import (
        AUTO,
        AutoChoice,
        choose_provider,
        get_provider,
        provider_for_model,
        provider_registrations,
    )
    from jarvis_core.prompts.provider import JARVIS_JSON_RESPONSE_FORMAT, PromptProvider, append_suffix
    from jarvis_core.prompts.session import PromptReply, PromptSession
    from jarvis_core.prompts.training import training_example, training_examples
