"""The core's built-in parsers plugin (entry point ``core-parsers``).

Registers every tool-call and reasoning parser by name with string targets, so nothing is imported until
a parser is used. A third-party plugin adds a parser the same way (``register(name, "pkg.mod:Class",
kind="tool")``); :func:`jarvis_core.parsers.get_tool_parser` finds it through the registry.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from jarvis_core.hookspecs import hookimpl

if TYPE_CHECKING:
    from jarvis_core.plugins.registry import ParserRegister

_P = "jarvis_core.parsers."

#: (name, target, aliases, description)
TOOL_PARSERS = (
    ("hermes", "jsonblocks:HermesParser", (), "<tool_call>{json}</tool_call> (Qwen2.5/Qwen3, Hermes)"),
    ("granite4", "jsonblocks:Granite4Parser", (), "<tool_call>{json}</tool_call>, text around kept (Granite 4)"),
    ("qwen3_xml", "qwen3_xml:Qwen3XmlParser", ("qwen3_coder",), "<function=…><parameter=…> (Qwen3-Coder, Qwen3.5)"),
    ("llama3_json", "json_calls:Llama3JsonParser", ("llama4_json",), "{name, parameters} JSON (Llama 3.x)"),
    ("granite", "json_calls:GraniteParser", (), "<|tool_call|>[…] (Granite 3.x)"),
    ("pythonic", "pythonic:PythonicParser", (), "[f(a=1), g(b='x')]"),
    ("llama4_pythonic", "pythonic:Llama4PythonicParser", (), "<|python_start|>[f(a=1)]<|python_end|> (Llama 4)"),
    ("mistral", "mistral:MistralParser", (), "[TOOL_CALLS][…] and [TOOL_CALLS]name[ARGS]{…}"),
    ("deepseek_v3", "deepseek:DeepSeekV3Parser", (), "DeepSeek V3/R1 tool-call token sections"),
    ("deepseek_v31", "deepseek:DeepSeekV31Parser", (), "DeepSeek V3.1 call sections"),
    ("kimi_k2", "kimi:KimiK2Parser", (), "<|tool_calls_section_begin|>… (Kimi K2)"),
    ("glm45", "glm:GlmParser", ("glm47",), "<tool_call>NAME<arg_key>…<arg_value>… (GLM-4.5 to GLM-5)"),
    ("openai", "harmony:HarmonyToolParser", (), "gpt-oss Harmony messages"),
)

REASONING_PARSERS = (
    ("deepseek_r1", "reasoning_families:DeepSeekR1Reasoning", (), "<think>…</think>; untagged = reasoning"),
    ("qwen3", "reasoning_families:Qwen3Reasoning", (), "<think>…</think>, enable_thinking aware"),
    ("deepseek_v3", "reasoning_families:DeepSeekV3Reasoning", (), "deepseek_r1 when thinking=True"),
    ("kimi_k2", "reasoning_families:KimiK2Reasoning", (), "<think>…</think> or tool section"),
    ("glm45", "reasoning_families:Glm45Reasoning", ("glm47",), "closed <think>…</think> only"),
    ("mistral", "reasoning_families:MistralReasoning", (), "[THINK]…[/THINK] (Magistral)"),
    ("gemma4", "reasoning_families:Gemma4Reasoning", (), "<|channel>thought…<channel|> (Gemma 4)"),
    ("granite", "granite_reasoning:GraniteReasoning", (), "Here is my thought process: … Here is my response:"),
    ("minimax_m2", "reasoning_families:MiniMaxM2Reasoning", (), "…</think> (MiniMax M2)"),
    ("minimax_m2_append_think", "reasoning_families:MiniMaxM2AppendThinkReasoning", (), "keeps <think> in content"),
    ("nemotron_v3", "reasoning_families:NemotronV3Reasoning", (), "<think>…</think> (Nemotron)"),
    ("seed_oss", "reasoning_families:SeedOssReasoning", (), "<seed:think>…</seed:think>"),
    ("identity", "reasoning_families:IdentityReasoning", (), "no reasoning: all content"),
    ("openai_gptoss", "harmony:HarmonyReasoningParser", (), "gpt-oss Harmony analysis channel"),
)


@hookimpl
def jarvis_register_parsers(register: ParserRegister) -> None:
    for kind, table in (("tool", TOOL_PARSERS), ("reasoning", REASONING_PARSERS)):
        for name, target, aliases, description in table:
            register(name, _P + target, kind=kind, aliases=aliases, description=description)
