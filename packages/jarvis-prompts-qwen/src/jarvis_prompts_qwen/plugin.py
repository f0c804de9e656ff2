"""The ``prompts-qwen`` plugin: registers the Qwen prompt providers and names them in backend defaults.

Targets are strings, so ``jarvis plugins`` imports no provider module. Every backend-default pattern here is
longer than the core's family patterns (``qwen2.5``, ``qwen2.5-coder``, ``qwen3``, ``qwen3.5``), and the
rules set only the ``prompt_provider`` extra: parsers and sampling still come from the core's rules.

The Qwen 2.5 and Qwen 3 rules name each size explicitly. A family-wide ``qwen3-`` would also catch
Qwen3-Coder (which writes ``<function=…>`` calls, read by the core's ``qwen3_xml`` parser, not
``<tool_call>`` JSON), Qwen3-VL, the embedding and reranker models; those get no provider, so
``--prompt-provider auto`` says so instead of picking a wrong one. Qwen 3.5 keeps a family-wide rule: its
provider uses native tools, so the engine's parser reads the calls whatever their format.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Dict, Tuple

from jarvis_core.hookspecs import hookimpl
from jarvis_core.prompts.registration import register_providers, register_rules, size_rules

if TYPE_CHECKING:
    from jarvis_core.plugins.registry import DefaultsRegister, Register

#: name -> (module, one-line description)
PROVIDERS: Dict[str, Tuple[str, str]] = {
    "Qwen25_3B_Compressed": ("compressed", "Qwen 2.5 3B, compressed prompt, <tool_call> text"),
    "Qwen25MediumUntrained": ("qwen25", "Qwen 2.5 7B, full prompt, <tool_call> text"),
    "Qwen25Compressed": ("compressed", "Qwen 2.5 7B, compressed prompt, always calls a tool"),
    "Qwen25_7B_Compressed": ("compressed", "Qwen 2.5 7B, four rules, tools last"),
    "Qwen25LargeUntrained": ("qwen25", "Qwen 2.5 14B, full prompt with language and date-key rules"),
    "Qwen25_14B_Untrained": ("qwen25", "Qwen 2.5 14B, lazy tool loading (get_tools)"),
    "Qwen25_32B_Untrained": ("qwen25", "Qwen 2.5 32B, no forced tool calls"),
    "Qwen3_8B_Compressed": ("qwen3", "Qwen 3 8B, tools first, /no_think"),
    "Qwen3_8B_Thinking": ("qwen3", "Qwen 3 8B, tools first, thinking on (/think)"),
    "Qwen3LargeUntrained": ("qwen3", "Qwen 3 30B-A3B, /no_think, <think> stripped"),
    "Qwen3_14B_Compressed": ("qwen3", "Qwen 3 14B, compressed, /no_think"),
    "Qwen3_5_9B_Compressed": ("qwen3", "Qwen 3.5 9B, native tool calling"),
}

#: (family, sizes, provider): one rule per size, for Hugging Face ids (``qwen2.5-7b-instruct``) and Ollama
#: tags (``qwen2.5:7b``) alike. Qwen2.5-Coder uses Qwen 2.5's chat template and call format.
FAMILY_SIZES: Tuple[Tuple[str, Tuple[str, ...], str], ...] = (
    ("qwen2.5", ("0.5b", "1.5b", "3b"), "Qwen25_3B_Compressed"),
    ("qwen2.5", ("7b",), "Qwen25MediumUntrained"),
    ("qwen2.5", ("14b",), "Qwen25LargeUntrained"),
    ("qwen2.5", ("32b", "72b"), "Qwen25_32B_Untrained"),
    ("qwen2.5-coder", ("0.5b", "1.5b", "3b"), "Qwen25_3B_Compressed"),
    ("qwen2.5-coder", ("7b",), "Qwen25MediumUntrained"),
    ("qwen2.5-coder", ("14b",), "Qwen25LargeUntrained"),
    ("qwen2.5-coder", ("32b",), "Qwen25_32B_Untrained"),
    ("qwen3", ("0.6b", "1.7b", "4b", "8b"), "Qwen3_8B_Compressed"),
    ("qwen3", ("14b",), "Qwen3_14B_Compressed"),
    ("qwen3", ("30b", "32b", "235b"), "Qwen3LargeUntrained"),
    ("qwen3.5", ("9b", ""), "Qwen3_5_9B_Compressed"),
)

#: pattern -> provider; the longest matching pattern wins.
MODEL_RULES: Tuple[Tuple[str, str], ...] = size_rules(FAMILY_SIZES)


@hookimpl
def jarvis_register_prompt_providers(register: Register) -> None:
    register_providers(register, "jarvis_prompts_qwen", PROVIDERS)


@hookimpl
def jarvis_backend_defaults(register: DefaultsRegister) -> None:
    register_rules(register, MODEL_RULES)
