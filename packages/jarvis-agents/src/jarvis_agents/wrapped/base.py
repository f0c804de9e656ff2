"""What the wrapped agents share: :class:`WrappedAgent`, a :class:`~jarvis_core.agents.BaseAgent` whose
whole run is one external program.

The runtime runs its own agent loop with its own tools, so a wrapped agent takes no jarvis tools and no
sampling settings (``temperature``, ``max_tokens``: neither runtime has them; setting one is a
:class:`~jarvis_core.errors.ConfigError`, not silently ignored). The conversation of the context is not
dropped: the runtimes take one prompt, so earlier turns are written into it as a transcript
(:func:`split_transcript`), and system messages become the runtime's extra system prompt.
"""

from __future__ import annotations

import os
from typing import Any, AsyncIterator, List, Mapping, Optional, Sequence, Tuple, Union

from jarvis_core.agents import BaseAgent
from jarvis_core.agents.events import AgentEvent, TextDelta, TurnFinished
from jarvis_core.agents.run import AgentRun
from jarvis_core.errors import ConfigError
from jarvis_core.types import Message, Role, Usage

__all__ = ["WrappedAgent", "split_transcript", "str_tuple"]

DEFAULT_MAX_OUTPUT_BYTES = 4 * 1024 * 1024


def str_tuple(value: Union[str, Sequence[str], None], name: str) -> Tuple[str, ...]:
    """``value`` as a tuple of non-empty strings; a comma-separated string is split (config files write
    ``allowed_tools = "Read,Grep"`` as often as a list)."""
    if value is None:
        return ()
    items = value.split(",") if isinstance(value, str) else list(value)
    out = []
    for item in items:
        if not isinstance(item, str) or not item.strip():
            raise ConfigError(f"{name} must be a list of non-empty names, got {value!r}", key=name)
        out.append(item.strip())
    return tuple(out)


def _label(msg: Message) -> str:
    if msg.role is Role.USER:
        return "User"
    if msg.role is Role.TOOL:
        return f"Tool result ({msg.name or msg.tool_call_id or 'tool'})"
    return "Assistant"


def split_transcript(messages: Sequence[Message]) -> Tuple[Optional[str], str]:
    """``(system prompt or None, prompt)`` for a runtime that takes one prompt.

    ``messages`` is a run's first request (one leading system message, the context's turns, the input
    last). Without earlier turns the prompt is the input itself; with them, the turns come first as a
    labelled transcript, then the new request.
    """
    system: Optional[str] = None
    rest = list(messages)
    if rest and rest[0].role is Role.SYSTEM:
        system = rest.pop(0).text or None
    if not rest:
        return system, ""
    *history, last = rest
    if not history:
        return system, last.text or ""
    parts: List[str] = ["The conversation so far:"]
    for msg in history:
        text = msg.content or ""
        if msg.tool_calls and not text:
            text = "[called " + ", ".join(call.name for call in msg.tool_calls) + "]"
        parts.append(f"{_label(msg)}: {text}")
    parts.append(f"The new request:\n{last.content or ''}")
    return system, "\n\n".join(parts)


class WrappedAgent(BaseAgent):
    """A :class:`BaseAgent` run by an external runtime: the options every wrapper shares.

    :param workspace: the directory the runtime works in (default: the current directory when a run starts).
    :param timeout_s: the whole run's limit; past it the runtime's process group is killed.
    :param max_output_bytes: how much of the runtime's stdout and stderr is kept (each).
    """

    accepts_tools = False
    uses_engine = False  # the runtime calls its own model: jarvis picks and starts no engine for it

    def __init__(
        self,
        engine: Any = None,
        *,
        model: str,
        workspace: Optional[str] = None,
        timeout_s: float = 600.0,
        max_output_bytes: int = DEFAULT_MAX_OUTPUT_BYTES,
        **base: Any,
    ) -> None:
        super().__init__(engine, model=model, **base)
        unsupported = [name for name in ("temperature", "max_tokens") if getattr(self.settings, name) is not None]
        if unsupported:
            raise ConfigError(f"agent {self.agent_id!r} runs its own model loop and has no {' or '.join(unsupported)} "
                              "setting; remove it", key=f"agents.{self.agent_id}.{unsupported[0]}")
        if isinstance(timeout_s, bool) or not isinstance(timeout_s, (int, float)) or not 0 < timeout_s < float("inf"):
            raise ConfigError(f"timeout_s must be a positive number of seconds, got {timeout_s!r}",
                              key=f"agents.{self.agent_id}.timeout_s")
        if isinstance(max_output_bytes, bool) or not isinstance(max_output_bytes, int) or max_output_bytes < 1024:
            raise ConfigError(f"max_output_bytes must be a whole number of at least 1024, got {max_output_bytes!r}",
                              key=f"agents.{self.agent_id}.max_output_bytes")
        if workspace is not None:
            workspace = os.path.abspath(os.path.expanduser(workspace))
            if not os.path.isdir(workspace):
                raise ConfigError(f"workspace {workspace!r} is not a directory", key=f"agents.{self.agent_id}.workspace")
        self.workspace = workspace
        self.timeout_s = float(timeout_s)
        self.max_output_bytes = max_output_bytes

    def working_directory(self) -> str:
        """Where this run's runtime works."""
        return self.workspace or os.getcwd()

    async def answer(
        self, run: AgentRun, content: str, usage: Usage, stop_reason: str, **metadata: Any
    ) -> AsyncIterator[AgentEvent]:
        """End ``run`` with the runtime's answer: its text as one delta, one finished turn, the result."""
        run.model_calls = max(run.model_calls, 1)
        run.usage = usage
        if content:
            yield TextDelta(run.run_id, run.turns, content)
        yield TurnFinished(run.run_id, run.turns, usage, "length" if stop_reason == "max_turns" else "stop")
        run.messages.append(Message.assistant(content))
        run.finish(content, stop_reason, **metadata)

    @staticmethod
    def environ() -> Mapping[str, str]:
        """The environment a run looks its programs and key up in (read when the run starts)."""
        return dict(os.environ)
