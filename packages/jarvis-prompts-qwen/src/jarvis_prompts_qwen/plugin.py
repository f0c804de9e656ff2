"""The ``prompts-qwen`` plugin: registers the Qwen prompt providers and names them in backend defaults.

Targets are strings, so ``jarvis plugins`` imports no provider module. Every backend-default pattern here is
longer than the core's family patterns (``qwen2.5``, ``qwen3``, ``qwen3.5``), and the rules set only the
``prompt_provider`` extra: parsers and sampling still come from the core's rules.
"""

from __future__ import annotations

from typing import Dict, Tuple

from jarvis_core.hookspecs import hookimpl

#: name -> (module, one-line description)
PROVIDERS: Dict[str, Tuple[str, str]] = {
    "Qwen25_3B_Compressed": ("compressed", "Qwen 2.5 3B, compressed prompt, <tool_call> text"),
    "Qwen25MediumUntrained": ("qwen25", "Qwen 2.5 7B, full prompt, <tool_call> text"),
    "Qwen25Compressed": ("compressed", "Qwen 2.5 7B, compressed prompt, always calls a tool"),
    "Qwen25_7B_Compressed": ("compressed", "Qwen 2.5 7B, four rules, tools last"),
    "Qwen25LargeUntrained": ("qwen25", "Qwen 2.5 14B, full prompt with language and date-key rules"),
    "Qwen25_14B_Untrained": ("qwen25", "Qwen 2.5 14B, lazy tool loading (get_tools)"),
    "Qwen25_32B_Untrained": ("qwen25", "Qwen 2.5 32B, no forced tool calls"),
    "Qwen3_8B_Compressed": ("qwen3", "Qwen 3 8B, tools first, /think or /no_think"),
    "Qwen3LargeUntrained": ("qwen3", "Qwen 3 30B-A3B, /no_think, <think> stripped"),
    "Qwen3_14B_Compressed": ("qwen3", "Qwen 3 14B, compressed, /no_think"),
    "Qwen3_5_9B_Compressed": ("qwen3", "Qwen 3.5 9B, native tool calling"),
}

#: pattern -> provider. Hugging Face ids (``qwen2.5-7b-instruct``) and Ollama tags (``qwen2.5:7b``) alike;
#: the longest matching pattern wins, so size-specific rules beat the family-wide ones.
MODEL_RULES: Tuple[Tuple[str, str], ...] = tuple(
    (f"{family}{sep}{size}", provider)
    for family, size, provider in (
        ("qwen2.5", "3b", "Qwen25_3B_Compressed"),
        ("qwen2.5", "7b", "Qwen25MediumUntrained"),
        ("qwen2.5", "14b", "Qwen25LargeUntrained"),
        ("qwen2.5", "32b", "Qwen25_32B_Untrained"),
        ("qwen2.5", "", "Qwen25MediumUntrained"),
        ("qwen3", "8b", "Qwen3_8B_Compressed"),
        ("qwen3", "14b", "Qwen3_14B_Compressed"),
        ("qwen3", "30b", "Qwen3LargeUntrained"),
        ("qwen3", "32b", "Qwen3LargeUntrained"),
        ("qwen3", "", "Qwen3_8B_Compressed"),
        ("qwen3.5", "9b", "Qwen3_5_9B_Compressed"),
        ("qwen3.5", "", "Qwen3_5_9B_Compressed"),
    )
    for sep in ("-", ":")
)


@hookimpl
def jarvis_register_prompt_providers(register):
    for name, (module, description) in PROVIDERS.items():
        register(name, f"jarvis_prompts_qwen.{module}:{name}", description=description)


@hookimpl
def jarvis_backend_defaults(register):
    for pattern, provider in MODEL_RULES:
        register(pattern, extras={"prompt_provider": provider})
