"""The ``prompts-families`` plugin: registers the Hermes, Llama, Mistral and Gemma prompt providers and names
them in backend defaults.

Targets are strings, so ``jarvis plugins`` imports no provider module. Every backend-default pattern here is
longer than the core's family patterns (``hermes``, ``llama-3.1``, ``gemma-3``, ``ministral``, …) and the
rules set only the ``prompt_provider`` extra, so parsers and sampling still come from the core's rules.
Sizes are named explicitly: a family-wide ``llama-3.2`` would also catch the vision models, ``gemma-3`` the
``gemma-3n`` and embedding models; those get no provider, and ``--prompt-provider auto`` says so.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Dict, Tuple

from jarvis_core.hookspecs import hookimpl
from jarvis_core.prompts.registration import register_providers, register_rules, size_rules

if TYPE_CHECKING:
    from jarvis_core.plugins.registry import DefaultsRegister, Register

#: name -> (module, one-line description)
PROVIDERS: Dict[str, Tuple[str, str]] = {
    "HermesMediumUntrained": ("hermes", "Hermes 3 / Hermes 2 Pro, full prompt, <tool_call> text, <scratch_pad> stripped"),
    "HermesCompressed": ("hermes", "Hermes, compressed prompt and compacted tool schemas"),
    "HermesMediumMlx": ("hermes", "Hermes on MLX 4-bit: numeric strings become numbers"),
    "HermesMediumTrained": ("hermes", "Hermes with the date-key LoRA merged"),
    "LlamaSmallUntrained": ("llama", "small Llama, replies in Jarvis JSON"),
    "Llama32_3B_Compressed": ("llama", "Llama 3.2 3B, compact name(param: type) listing, <function=…> calls"),
    "Llama31MediumUntrained": ("llama", "Llama 3.1 8B, full prompt, <function=…> calls read tolerantly"),
    "Llama33ThinkingMediumUntrained": ("llama", "thinking Llama 3.3 tune, /no_think, <tool_call> then <function=…>"),
    "Mistral7bMediumUntrained": ("mistral", "Mistral 7B, <tool_call> text, [TOOL_CALLS] understood"),
    "MixtralLargeUntrained": ("mistral", "Mixtral, the Mistral prompt, forces tool calls"),
    "Ministral14bLargeUntrained": ("mistral", "Ministral 3 14B, spoken text cut at chat markers"),
    "Gemma2MediumUntrained": ("gemma", "Gemma 2, full prompt with a concrete call example"),
    "Gemma2Compressed": ("gemma", "Gemma 2, compressed prompt"),
    "Gemma3MediumUntrained": ("gemma", "Gemma 3, fenced calls rescued, turn tokens stripped"),
    "Gemma3Compressed": ("gemma", "Gemma 3, compressed prompt"),
    "Gemma4_31B_Untrained": ("gemma", "Gemma 4 31B, thinking channel stripped"),
}

#: (family, sizes, provider): one rule per size, for Hugging Face ids (``gemma-3-12b-it``) and Ollama tags
#: (``gemma3:12b`` is read as ``gemma-3:12b``) alike.
FAMILY_SIZES: Tuple[Tuple[str, Tuple[str, ...], str], ...] = (
    ("hermes-3-llama-3.1", ("8b", "70b", "405b"), "HermesMediumUntrained"),
    ("hermes-3-llama-3.2", ("3b",), "HermesMediumUntrained"),
    ("hermes-3", ("3b", "8b", "70b", "405b"), "HermesMediumUntrained"),
    ("hermes-2-pro-llama-3", ("8b",), "HermesMediumUntrained"),
    ("hermes-2-pro-mistral", ("7b",), "HermesMediumUntrained"),
    ("llama-3.1", ("8b", "70b", "405b"), "Llama31MediumUntrained"),
    ("llama-3.3", ("70b",), "Llama31MediumUntrained"),
    ("llama-3.2", ("1b", "3b"), "Llama32_3B_Compressed"),
    ("mistral", ("7b",), "Mistral7bMediumUntrained"),
    ("mixtral", ("8x7b", "8x22b"), "MixtralLargeUntrained"),
    ("ministral-3", ("14b",), "Ministral14bLargeUntrained"),
    ("gemma-2", ("9b", "27b"), "Gemma2MediumUntrained"),
    ("gemma-2", ("2b",), "Gemma2Compressed"),
    ("gemma-3", ("4b", "12b", "27b"), "Gemma3MediumUntrained"),
    ("gemma-3", ("1b",), "Gemma3Compressed"),
    ("gemma-4", ("31b",), "Gemma4_31B_Untrained"),
)

#: pattern -> provider; the longest matching pattern wins.
MODEL_RULES: Tuple[Tuple[str, str], ...] = size_rules(FAMILY_SIZES)


@hookimpl
def jarvis_register_prompt_providers(register: Register) -> None:
    register_providers(register, "jarvis_prompts_families", PROVIDERS)


@hookimpl
def jarvis_backend_defaults(register: DefaultsRegister) -> None:
    register_rules(register, MODEL_RULES)
