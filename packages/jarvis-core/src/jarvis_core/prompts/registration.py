"""What a prompt-provider plugin registers, built from two tables: its providers, and the model sizes each
provider is for (backend-default rules naming the provider in ``extras.prompt_provider``).

Both ``jarvis-prompts-qwen`` and ``jarvis-prompts-families`` register this way; a plugin of your own can too::

    PROVIDERS = {"AcmeMedium": ("acme", "Acme 7B, <tool_call> text")}
    FAMILY_SIZES = (("acme-2", ("7b",), "AcmeMedium"),)

    @hookimpl
    def jarvis_register_prompt_providers(register):
        register_providers(register, "my_prompts", PROVIDERS)

    @hookimpl
    def jarvis_backend_defaults(register):
        register_rules(register, size_rules(FAMILY_SIZES))
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence, Tuple

__all__ = ["register_providers", "register_rules", "size_rules"]


def size_rules(family_sizes: Sequence[Tuple[str, Sequence[str], str]]) -> Tuple[Tuple[str, str], ...]:
    """``(pattern, provider)`` for every ``(family, sizes, provider)``: one pattern per size and separator,
    so Hugging Face ids (``gemma-3-12b-it``) and Ollama tags (``gemma3:12b``, read as ``gemma-3:12b``) both
    match. A size of ``""`` gives ``family-`` (any size)."""
    return tuple((f"{family}{sep}{size}", provider)
                 for family, sizes, provider in family_sizes for size in sizes for sep in ("-", ":"))


def register_providers(register: Any, package: str, providers: Mapping[str, Tuple[str, str]]) -> None:
    """Register ``{name: (module, description)}`` as ``package.module:name`` string targets (nothing is
    imported until a provider is used)."""
    for name, (module, description) in providers.items():
        register(name, f"{package}.{module}:{name}", description=description)


def register_rules(register: Any, rules: Sequence[Tuple[str, str]]) -> None:
    """One backend-default rule per ``(pattern, provider)``, setting only ``extras.prompt_provider`` (parsers
    and sampling keep coming from the family rules)."""
    for pattern, provider in rules:
        register(pattern, extras={"prompt_provider": provider})
