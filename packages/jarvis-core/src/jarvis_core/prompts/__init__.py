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

from jarvis_core.lazy import lazy_exports

_EXPORTS = {
    "PromptProvider": "provider",
    "JARVIS_JSON_RESPONSE_FORMAT": "provider",
    "append_suffix": "provider",
    "JarvisReply": "jarvis_json",
    "JarvisToolCall": "jarvis_json",
    "NodeContext": "context",
    "coerce_tools": "context",
    "AUTO": "lookup",
    "AutoChoice": "lookup",
    "choose_provider": "lookup",
    "get_provider": "lookup",
    "provider_for_model": "lookup",
    "provider_registrations": "lookup",
    "PromptDrivenAgent": "agent",
    "PromptReply": "session",
    "PromptSession": "session",
    "training_example": "training",
    "training_examples": "training",
}

__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, {k: f"{__name__}.{m}" for k, m in _EXPORTS.items()}, globals())
