"""``jarvis ask`` and ``jarvis chat`` keep every answer in the conversation log (:mod:`jarvis_core.convlog`).

:class:`AnswerLog` is the command side: it decides whether to log (``--no-log``, ``$JARVIS_NO_LOG``,
``[log] enabled``), loads the conversation ``-c`` / ``--cid`` continue, gathers what one answer produced
(tool calls and results, reasoning and the usage of every model call, from the events ``Jarvis.ask_stream``
reports, or ``ask_full``'s result) and writes it. A log that cannot be written never fails the answer: the first
failure is said once on stderr and logging stops for the rest of the command.
"""

from __future__ import annotations

import argparse
import time
from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Optional

if TYPE_CHECKING:
    from jarvis_core.answer import Answer
    from jarvis_core.sdk import Jarvis

__all__ = ["AnswerLog", "add_log_arguments"]


def add_log_arguments(p: argparse.ArgumentParser) -> None:
    """``--no-log``, ``-c`` and ``--cid`` (``ask`` and ``chat``)."""
    g = p.add_argument_group("conversation log")
    g.add_argument("--no-log", action="store_true", help="do not keep this answer in the log (also JARVIS_NO_LOG=1 "
                   "or [log] enabled = false)")
    g.add_argument("-c", "--continue", dest="continue_", action="store_true",
                   help="continue the most recent logged conversation (its exchanges are sent as history)")
    g.add_argument("--cid", metavar="ID", help="continue the logged conversation with this id (or a unique prefix)")


class AnswerLog:
    """One command's conversation log: the history to continue and the answers to record.

    :param args: the command's arguments (``no_log``, ``continue_``, ``cid``).
    :param config: the loaded config (``[log]``).
    """

    def __init__(self, args: argparse.Namespace, config: Any) -> None:
        from jarvis_core.convlog import ConversationLog, log_path, logging_enabled

        self.enabled = logging_enabled(config, no_log=bool(getattr(args, "no_log", False)))
        self.log = ConversationLog(log_path(config))
        self.conversation_id: Optional[str] = None
        self.history: List[Dict[str, str]] = []
        self._usage: Optional[Dict[str, int]] = None
        self._tool_calls: List[Dict[str, Any]] = []
        self._tool_results: List[Dict[str, Any]] = []
        self._reasoning: List[str] = []
        self._started = time.perf_counter()
        self._continue(args)

    def _continue(self, args: argparse.Namespace) -> None:
        from jarvis_core.errors import JarvisError, UsageError

        cid, latest = getattr(args, "cid", None), bool(getattr(args, "continue_", False))
        if not cid and not latest:
            return
        try:
            if cid:
                cid = self.log.conversation_id(cid)
            else:
                cid = self.log.latest_conversation_id()
                if cid is None:
                    raise UsageError(f"there is no logged conversation to continue ({self.log.path} is empty or "
                                     "missing); ask without -c first", argument="-c")
            for response in self.log.conversation(cid):
                self.history.extend(response.exchange())
        except JarvisError:
            raise
        except Exception as exc:  # sqlite3.Error, OSError: the log exists but cannot be read
            raise JarvisError(f"cannot read the conversation log {self.log.path}: {type(exc).__name__}: {exc}") from exc
        self.conversation_id = cid

    # -- gathering one answer ---------------------------------------------------------------------
    def start(self) -> None:
        """A new answer begins: forget what the previous one gathered."""
        self._usage, self._tool_calls, self._tool_results, self._reasoning = None, [], [], []
        self._started = time.perf_counter()

    def on_event(self, event: Any) -> None:
        """Gather an event of the answer: tool calls, their results, reasoning, each model call's usage."""
        from jarvis_core.agents.events import ReasoningDelta, ToolCallFinished, ToolCallsRequested, TurnFinished

        if isinstance(event, TurnFinished):
            u = event.usage
            total = self._usage or {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
            total["prompt_tokens"] += u.prompt_tokens
            total["completion_tokens"] += u.completion_tokens
            total["total_tokens"] += u.total_tokens
            self._usage = total
        elif isinstance(event, ToolCallsRequested):
            self._tool_calls.extend({"id": c.id, "name": c.name, "arguments": c.arguments} for c in event.calls)
        elif isinstance(event, ToolCallFinished):
            r = event.result
            self._tool_results.append({"tool_call_id": r.tool_call_id, "name": r.name, "ok": r.ok,
                                       "content": r.content})
        elif isinstance(event, ReasoningDelta):
            self._reasoning.append(event.text)

    # -- writing ----------------------------------------------------------------------------------
    def record(self, jarvis: Jarvis, prompt: str, answer: str, result: Optional[Answer] = None) -> None:
        """Log one answer (streamed, with what was gathered; or ``ask_full``'s ``result``). A failure is
        said once on stderr and turns logging off; it never raises."""
        if not self.enabled:
            return
        conn = jarvis.connection
        facts: Dict[str, Any] = {
            "model": getattr(conn, "model", None), "engine": getattr(conn, "engine_key", None),
            "agent": jarvis.scope().requested_agent(), "usage": self._usage,
            "tool_calls": self._tool_calls, "tool_results": self._tool_results,
            "reasoning": "".join(self._reasoning) or None,
        }
        if result is not None:
            data = result.to_dict()
            facts.update({k: data[k] for k in ("model", "engine", "agent", "usage", "reasoning", "tool_calls",
                                                 "tool_results") if data.get(k) is not None})
            facts["tool_calls"] = [_call_dict(c) for c in facts["tool_calls"]]
        try:
            secrets = jarvis.engine.secret_values() if conn is not None else ()
            stored = self.log.record(
                prompt=prompt, response=answer, conversation_id=self.conversation_id, system=jarvis.system_prompt or None,
                duration_s=time.perf_counter() - self._started, secrets=secrets, **facts,
            )
        except Exception as exc:
            from jarvis_core.cli import output

            self.enabled = False
            output.announce(f"the conversation log {self.log.path} could not be written ({type(exc).__name__}: "
                            f"{exc}); answers are not logged")
            return
        self.conversation_id = stored.conversation_id

    def close(self) -> None:
        self.log.close()


def _call_dict(call: Any) -> Dict[str, Any]:
    if isinstance(call, Mapping):
        fn = call["function"] if isinstance(call.get("function"), Mapping) else call
        return {"id": call.get("id"), "name": fn.get("name"), "arguments": fn.get("arguments")}
    return {"id": getattr(call, "id", None), "name": getattr(call, "name", None),
            "arguments": getattr(call, "arguments", None)}
