"""What :meth:`Jarvis.ask_full <jarvis_core.sdk.Jarvis.ask_full>` returns: one typed, frozen :class:`Answer`.

Every request gives the same type, whichever way it was answered:

- straight from the engine: ``content``, ``reasoning``, ``tool_calls`` (when the model asked for any),
  ``finish_reason`` (the model's: ``stop``, ``length``, ``tool_calls``), ``usage``, ``model``, ``engine``;
- through an agent: ``content``, ``turns``, ``tool_results`` (in call order), ``usage`` (every model call of
  the run), ``stop_reason`` (``final``, ``max_turns``, ``loop_guard``, ``error``, ``cancelled``), ``model``,
  ``engine`` (``None`` for an agent that runs a model of its own) and ``agent``;
- read by a prompt provider: ``prompt_provider`` as well and, when the provider's reply was read directly
  (no agent ran the tools), ``jarvis_json`` (the parsed :class:`~jarvis_core.prompts.JarvisReply`),
  ``model_calls`` and ``tools_loaded``.

For JSON, :meth:`Answer.to_dict` gives the dict ``jarvis ask --json`` prints: the fields that apply to how
the request was answered (the keys listed above), nested values as plain data::

    answer = j.ask_full("What is 17 * 23?")
    answer.content, answer.usage.total_tokens
    json.dumps(answer.to_dict())

Reading an answer like a dict (``answer["content"]``, ``answer.get("usage")``) still works, as it did when
``ask_full`` returned one, and warns with :class:`~jarvis_core.errors.JarvisDeprecationWarning`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, Iterator, Optional, Tuple

import attrs

from jarvis_core.types import AgentResult, Completion, ToolCall, ToolResult, Usage, as_tuple, to_dict

if TYPE_CHECKING:
    from jarvis_core.prompts.jarvis_json import JarvisReply

__all__ = ["Answer"]


@attrs.frozen
class Answer:
    """One answer to one request (see the module docs for which fields each way of answering sets)."""

    content: str
    model: Optional[str] = None
    engine: Optional[str] = None
    usage: Usage = attrs.field(factory=Usage)
    #: The agent that answered; ``None`` when the engine answered directly.
    agent: Optional[str] = None
    #: Model turns an agent run took (``None`` for a direct answer).
    turns: Optional[int] = None
    #: Why an agent run ended (``None`` for a direct answer).
    stop_reason: Optional[str] = None
    #: Why the model stopped, for a direct answer.
    finish_reason: Optional[str] = None
    reasoning: Optional[str] = None
    tool_calls: Tuple[ToolCall, ...] = attrs.field(default=(), converter=as_tuple)
    tool_results: Tuple[ToolResult, ...] = attrs.field(default=(), converter=as_tuple)
    prompt_provider: Optional[str] = None
    jarvis_json: Optional[JarvisReply] = None
    model_calls: Optional[int] = None
    tools_loaded: Tuple[str, ...] = attrs.field(default=(), converter=as_tuple)
    #: The decoded answer of a structured-output request (``response_format``; ``Jarvis.ask(schema=...)``).
    parsed: Any = None

    @classmethod
    def from_completion(cls, completion: Completion, *, engine: Optional[str], **more: Any) -> Answer:
        """A direct answer: the engine's completion."""
        return cls(completion.content or "", model=completion.model, engine=engine, usage=completion.usage,
                   finish_reason=completion.finish_reason, reasoning=completion.reasoning or None,
                   tool_calls=completion.tool_calls, parsed=completion.parsed, **more)

    @classmethod
    def from_agent_result(cls, result: AgentResult, *, model: Optional[str], engine: Optional[str], agent: str,
                          **more: Any) -> Answer:
        """An agent's answer: its run's result."""
        return cls(result.content, model=model, engine=engine, usage=result.usage, agent=agent, turns=result.turns,
                   stop_reason=result.stop_reason, tool_results=result.tool_results, **more)

    def to_dict(self) -> Dict[str, Any]:
        """The answer as plain data for JSON: the keys that apply to how it was answered (module docs)."""
        out: Dict[str, Any] = {"content": self.content, "usage": to_dict(self.usage), "model": self.model}
        if self.agent is None:
            out["finish_reason"] = self.finish_reason
            if self.tool_calls:
                out["tool_calls"] = to_dict(list(self.tool_calls))
            if self.reasoning:
                out["reasoning"] = self.reasoning
        else:
            out.update(turns=self.turns, tool_results=to_dict(list(self.tool_results)), stop_reason=self.stop_reason,
                       agent=self.agent)
        out["engine"] = self.engine
        if self.prompt_provider is not None:
            out["prompt_provider"] = self.prompt_provider
        if self.jarvis_json is not None:
            out["jarvis_json"] = self.jarvis_json.to_dict()
        if self.model_calls is not None:
            out["model_calls"] = self.model_calls
        if self.tools_loaded:
            out["tools_loaded"] = list(self.tools_loaded)
        if self.parsed is not None:
            out["parsed"] = self.parsed
        return out

    # -- the dict this used to be (deprecated) ------------------------------------------------------
    def _as_dict(self, how: str) -> Dict[str, Any]:
        from jarvis_core.deprecation import deprecated

        deprecated(f"reading ask_full's answer as a dict ({how})", "the Answer's attributes (or Answer.to_dict())")
        return self.to_dict()

    def __getitem__(self, key: str) -> Any:
        return self._as_dict(f"answer[{key!r}]")[key]

    def get(self, key: str, default: Any = None) -> Any:
        """Deprecated: read the attribute (or ``to_dict().get(key)``)."""
        return self._as_dict(f"answer.get({key!r})").get(key, default)

    def __contains__(self, key: object) -> bool:
        return key in self._as_dict(f"{key!r} in answer")

    def keys(self) -> Iterator[str]:
        """Deprecated: ``to_dict().keys()``."""
        return iter(self._as_dict("answer.keys()"))
