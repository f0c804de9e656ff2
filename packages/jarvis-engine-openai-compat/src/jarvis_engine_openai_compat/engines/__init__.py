"""The engines: one generic OpenAI-compatible base and a class per server.

==================== =============================== =================================================
module               engine key (class)              what it adds to the base
==================== =============================== =================================================
:mod:`.base`         ``openai-compat``               the generic ``/v1/chat/completions`` engine
                     (:class:`OpenAICompatEngine`)   (no server-specific knowledge)
:mod:`.vllm`         ``vllm`` (:class:`VLLMEngine`)  local samplers, ``repeat_penalty`` renamed
:mod:`.sglang`       ``sglang``                      as vLLM, another default port
:mod:`.lmstudio`     ``lmstudio``                    no ``min_p``; ``prepare`` loads the model
:mod:`.llamacpp`     ``llamacpp``                    the ``/props`` capability probe (``tool_mode``
                                                     auto), ``/slots``, llama.cpp's request fields and
                                                     the stream watch the managed worker uses
:mod:`.embedded`     ``embedded``                    a managed llama.cpp server started on first use
==================== =============================== =================================================

The plugin registers each class by its module path, so only the chosen engine's module is imported.
Importing this package imports the HTTP engines, not the embedded one (which pulls in the managed server).
"""

from jarvis_engine_openai_compat.engines.base import OpenAICompatEngine
from jarvis_engine_openai_compat.engines.llamacpp import LlamaCppEngine
from jarvis_engine_openai_compat.engines.lmstudio import LMStudioEngine
from jarvis_engine_openai_compat.engines.sglang import SGLangEngine
from jarvis_engine_openai_compat.engines.vllm import VLLMEngine

__all__ = ["LMStudioEngine", "LlamaCppEngine", "OpenAICompatEngine", "SGLangEngine", "VLLMEngine"]
