"""``llm``: ask a model a sub-question (a summary, a translation, a second opinion) from inside an agent.

It uses the engine the agent runs on (from the :class:`~jarvis_core.tools.ToolContext` the core builds it
with) and, unless configured otherwise, the same model. Its token usage counts in the agent run's usage
(:mod:`jarvis_agents.usage`).

Configuration (``[tools.llm]``): ``model`` (another model on the same engine), ``max_tokens`` (512),
``temperature`` (unset: the model family's default), ``system`` (a system prompt for every sub-call).
"""

from __future__ import annotations

from typing import List, Optional

from jarvis_agents.model_call import complete_text
from jarvis_agents.usage import report_usage
from jarvis_core.errors import ConfigError
from jarvis_core.tools import ToolContext, ToolPolicy
from jarvis_core.types import Message, ToolSpec

__all__ = ["LLMTool"]


class LLMTool:
    """``llm(prompt, system?)`` → the model's answer to ``prompt``.

    :param context: the run's engine, and the model used unless ``model`` is set (passed by the core).
    :param model: another model on the same engine.
    :param max_tokens: the answer's length limit.
    :param temperature: sampling temperature (``None``: the family default).
    :param system: a system prompt used when the call gives none.
    """

    spec = ToolSpec(
        name="llm",
        description="Ask a language model a self-contained question and get its answer as text.",
        parameters={
            "type": "object",
            "properties": {
                "prompt": {"type": "string", "description": "the full question or task", "maxLength": 8000},
                "system": {"type": "string", "description": "optional instructions for the model", "maxLength": 2000},
            },
            "required": ["prompt"],
            "additionalProperties": False,
        },
    )
    policy = ToolPolicy(side_effects="none", timeout=120.0)

    def __init__(self, *, context: Optional[ToolContext] = None, model: Optional[str] = None,
                 max_tokens: int = 512, temperature: Optional[float] = None, system: Optional[str] = None) -> None:
        context = context or ToolContext()
        model = model or context.model
        if context.engine is None or not model:
            raise ConfigError("the llm tool needs an engine and a model; it is built by an agent run "
                              "(jarvis ask --agent orchestrator --tools llm ...), or set [tools.llm] model")
        self.engine = context.engine
        self.model = model
        self.max_tokens = int(max_tokens)
        self.temperature = temperature
        self.system = system

    async def arun(self, prompt: str, system: Optional[str] = None) -> str:
        """One model call; its usage is added to the calling run's usage."""
        messages: List[Message] = []
        if system or self.system:
            messages.append(Message.system(system or self.system or ""))
        messages.append(Message.user(prompt))
        text, usage = await complete_text(self.engine, messages, model=self.model, temperature=self.temperature,
                                          max_tokens=self.max_tokens)
        report_usage(usage)
        return text
