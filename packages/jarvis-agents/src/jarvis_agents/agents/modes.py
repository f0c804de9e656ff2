"""How an agent talks to the model about tools, and how ``mode="auto"`` picks one.

``function_calling``: the engine's native tool calls. ``structured``: one JSON-schema-constrained action per
turn (the engine's ``response_format``, or its ``tool_mode="json_schema"``). ``text``/``react``: a text
protocol with stop sequences. ``auto`` picks, in this order: native when the engine says the model supports
tools (or is an OpenAI-compatible server that takes tools without saying per model: vLLM, SGLang, LM Studio);
structured when the engine accepts a JSON schema for the reply; react when it accepts ``stop``. The
pick and the reason are announced (a :class:`~jarvis_core.agents.Notice`, an ``AGENT_MODE_CHOSEN`` event and
a log line), never made silently.
"""

from __future__ import annotations

import logging
from typing import Any, Optional, Tuple

from jarvis_core.errors import ConfigError, EngineError

__all__ = ["MODES", "OPENAI_TOOL_SERVERS", "choose_mode", "engine_accepts", "tool_support"]

log = logging.getLogger("jarvis_agents")

MODES = ("auto", "function_calling", "structured", "text", "react")

#: OpenAI-compatible servers that take ``tools`` but report no per-model support: native is tried first.
OPENAI_TOOL_SERVERS = frozenset({"vllm", "sglang", "lmstudio", "openai-compat"})


def engine_accepts(engine: Any, option: str) -> bool:
    """True when ``option`` is among the engine's allowed request options."""
    allowed = getattr(engine, "allowed_options", None)
    return allowed is not None and option in allowed


def _props_supports_tools(props: Any) -> Optional[bool]:
    caps = props.get("chat_template_caps") if isinstance(props, dict) else None
    if not isinstance(caps, dict) or "supports_tools" not in caps:
        return None
    return bool(caps.get("supports_tools") and caps.get("supports_tool_calls", True))


def tool_support(engine: Any, model: str) -> Tuple[Optional[bool], str]:
    """Whether the engine says ``model`` supports native tool calls: ``(True|False|None, how we know)``.

    ``None`` means the engine does not say. Asked, in order: a ``supports_tools(model)`` method; Ollama's
    ``capabilities(model)``; llama.cpp's ``/props`` (``chat_template_caps.supports_tools``) for the
    ``llamacpp`` engine; hosted cloud APIs (which all take tools).
    """
    ask = getattr(engine, "supports_tools", None)
    if callable(ask):
        try:
            answer = ask(model)
        except EngineError as exc:
            return None, f"the engine could not say ({type(exc).__name__})"
        if answer is not None:
            return bool(answer), "the engine reports it"
    caps = getattr(engine, "capabilities", None)
    if callable(caps):
        try:
            listed = tuple(caps(model))
        except EngineError as exc:
            return None, f"the server could not say ({type(exc).__name__})"
        return "tools" in listed, f"the server lists the model's capabilities as {', '.join(listed) or 'none'}"
    engine_id = getattr(engine, "engine_id", "")
    request_json = getattr(engine, "request_json", None)
    if engine_id == "llamacpp" and callable(request_json):
        try:
            supported = _props_supports_tools(request_json("GET", "/props", timeout=5.0))
        except EngineError as exc:
            return None, f"llama.cpp /props did not answer ({type(exc).__name__})"
        if supported is not None:
            return supported, f"llama.cpp /props reports supports_tools={str(supported).lower()}"
        return None, "llama.cpp /props has no template capabilities"
    if engine_id == "cloud":
        return True, "hosted APIs take tools natively"
    if engine_id in OPENAI_TOOL_SERVERS:
        return True, (f"{engine_id} speaks OpenAI's tool calls and does not report per-model support; tried "
                      "natively, with an announced fall-back to structured if the server refuses them")
    return None, f"the {engine_id or type(engine).__name__} engine does not report tool support"


def choose_mode(engine: Any, model: str) -> Tuple[str, str]:
    """``(mode, reason)`` for ``mode="auto"``; raises :class:`ConfigError` when no mode can work."""
    supported, how = tool_support(engine, model)
    if supported:
        return "function_calling", f"native tool calls: {how}"
    if engine_accepts(engine, "response_format") or engine_accepts(engine, "tool_mode"):
        why = "the model has no native tool calls" if supported is False else "tool support is unknown"
        return "structured", f"JSON-schema-constrained actions: {why} ({how})"
    if engine_accepts(engine, "stop"):
        return "react", f"the ReAct text protocol: no native tools ({how}) and no JSON-schema replies"
    raise ConfigError(f"no tool mode works with the {getattr(engine, 'engine_id', '?')} engine: it reports no "
                      "native tool support and accepts neither response_format nor stop")
