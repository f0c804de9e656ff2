"""Entry point of jarvis-engine-openai-compat: registers its engines and config sections.

Targets are strings, so listing plugins imports none of the engine code.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from jarvis_core import hookimpl

if TYPE_CHECKING:
    from jarvis_core.plugins.registry import DefaultsRegister, Register

_PKG = "jarvis_engine_openai_compat"


@hookimpl
def jarvis_register_engines(register: Register) -> None:
    register("vllm", f"{_PKG}.engines.vllm:VLLMEngine", description="vLLM OpenAI-compatible server (default :8000)")
    register("sglang", f"{_PKG}.engines.sglang:SGLangEngine", description="SGLang OpenAI-compatible server (default :30000)")
    register("llamacpp", f"{_PKG}.engines.llamacpp:LlamaCppEngine", description="llama.cpp llama-server (default :8080)")
    register("lmstudio", f"{_PKG}.engines.lmstudio:LMStudioEngine", description="LM Studio local server (default :1234)")
    register(
        "openai-compat",
        f"{_PKG}.engines.base:OpenAICompatEngine",
        description="any OpenAI-compatible server (explicit base_url, optional api_key)",
        discoverable=False,
    )
    register(
        "embedded",
        f"{_PKG}.engines.embedded:EmbeddedEngine",
        description="a llama.cpp server managed by jarvis (SmolLM2-135M by default; needs the [embedded] extra)",
        discoverable=False,
    )


@hookimpl
def jarvis_register_config_sections(register: Register) -> None:
    for key in ("vllm", "sglang", "llamacpp", "lmstudio", "openai-compat"):
        register(f"engine.{key}", f"{_PKG}.config:OpenAICompatConfig")
    register("engine.embedded", f"{_PKG}.config:EmbeddedConfig")


@hookimpl
def jarvis_backend_defaults(register: DefaultsRegister) -> None:
    # SmolLM2-135M is the embedded default. At this size any sampling temperature drifts off topic (measured
    # on "What is the capital of France?": 2 of 5 answers wrong at 0.2, 4 of 5 at 0.7, none at 0), so its
    # rule pins greedy decoding. The pattern is longer than the core's "smollm" family rule, so it wins.
    register("smollm2-135m", backends=("*",), sampling={"temperature": 0.0})
    # LocalAI's llama.cpp hook: a local GGUF's own metadata (its name, so the family rules match whatever the
    # file is called; its trained context length) for the engines that serve such files.
    register("*", backends=("llamacpp", "embedded", ""), compute=f"{_PKG}.gguf_defaults:from_gguf")
