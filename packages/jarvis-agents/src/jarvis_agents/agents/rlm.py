"""``rlm``: a Recursive Language Model agent. The long context lives in a sandboxed Python REPL as the
variable ``context``, never in the prompt; the model explores it with code and asks a sub-model about the
pieces it picks.

- **The REPL** is one :class:`~jarvis_agents.sandbox.repl.PythonRepl` per run: a separate, limited process
  with a clean environment, started on the first cell and killed when the run ends (an answer, an error or
  a cancellation). Its variables last between turns.
- **Inside it**: ``context``; ``llm_query(prompt)``, ``llm_batch(prompts)`` (concurrent, at most
  ``max_concurrent_sub_calls`` at a time) and ``tool_call(name, **arguments)``, which reach this process
  over the REPL's pipe (:mod:`.rlm_calls`); ``FINAL(value)`` and ``FINAL_VAR(name)``, which end the run.
- **The prompt** says what ``context`` is (its type and length) and how to look at it. The context comes
  from ``AgentContext.metadata["context"]`` (text or JSON values); without it, the input is the context,
  and an input longer than ``max_input_chars`` is shown only by its start.
- **Each turn**: the reply's fenced code (```` ```python ````, ```` ```py ````, bare; joined) runs as one cell;
  its output, capped at ``max_output_chars`` and cut to fit the context window, comes back as a user message.
  ``FINAL(x)`` called in the code ends the run with ``x``. A reply without code ends the run when a line of
  it is ``FINAL(x)`` (or ``FINAL_VAR(name)``); a reply with neither gets one corrective message, then is
  taken as the answer (with a notice).

Options: ``sub_model`` (default: the agent's model), ``sub_temperature`` (0.3), ``sub_max_tokens`` (1024),
``max_output_chars`` (10000), ``cell_timeout_s`` (30: the cell's wall clock, its sub-calls included),
``max_concurrent_sub_calls`` (4), ``max_sub_calls_per_cell`` (32), ``max_sub_calls_per_run`` (256),
``max_sub_tokens_per_cell`` (100000), ``max_sub_tokens_per_run`` (500000) (see :mod:`.rlm_calls`),
``max_input_chars`` (4000), ``context_window``, ``isolation`` (``"jail"``, the default, or ``"rlimits"``: as
for codeact), ``seccomp`` (as for codeact), ``sandbox``; and ``final_answer_on_max_turns``.
"""

from __future__ import annotations

import ast
import json
import re
from typing import Any, AsyncIterator, List, Optional, Tuple

from jarvis_agents.agents.cells import CELL, ReplAgent, cell_call, check_cell_name, run_sandbox
from jarvis_agents.agents.code_blocks import joined_code
from jarvis_agents.agents.context_window import WINDOW, ContextWindow, check_window, fit_observation
from jarvis_agents.agents.rlm_calls import SUB_CALLS, SubCalls
from jarvis_agents.agents.text_protocol import render_tools, strip_reasoning
from jarvis_agents.run_keys import RunKey
from jarvis_agents.sandbox.python import PythonSandbox
from jarvis_agents.sandbox.repl import PythonRepl
from jarvis_agents.usage import usage_sink
from jarvis_core.agents import AgentEvent, AgentRun, Notice, TextDelta, ToolCallFinished, ToolCallsRequested
from jarvis_core.errors import ConfigError, JarvisError
from jarvis_core.types import AgentContext, Message, Role

__all__ = ["RLMAgent", "RLM_PROMPT", "RLMContextError", "final_in_text"]

RLM_PROMPT = (
    "You answer the user's question with the help of a Python REPL. The material to work on is not in this "
    "conversation: it is in the REPL variable `context`. Look at it with code; do not guess what it says."
)
_REPL_RULES = """\
To run code, write it in a ```python block. Its printed output (at most {max_output} characters) comes back in \
the next message. Variables stay defined between blocks. Only the standard library is available.

In the REPL you can also use:
- llm_query(prompt) -> str: ask a language model about a piece of text; it sees only the prompt you give it.
- llm_batch(prompts) -> list[str]: ask several prompts at once (they run in parallel, {concurrent} at a time).
- FINAL(value): end with value as the answer. FINAL_VAR(name): end with the value of the variable called name.{tools}

When you know the answer, call FINAL(answer) in code, or write FINAL(answer) on a line of its own."""
_TOOLS = "\n- tool_call(name, **arguments) -> str: run one of these tools:\n{specs}"
_CORRECTION = ("Your reply had neither a ```python block nor a FINAL(answer) line. Write code to look at `context`, "
               "or give the answer as FINAL(answer).")
_LAST_CALL = "You have used all your turns. Reply now with FINAL(answer) on a line of its own, from what you found."
_FINAL_LINE = re.compile(r"(?m)^[ \t>*_`]*FINAL(_VAR)?\(")
#: The run's REPL call handler (``llm_query``, ``llm_batch``, ``tool_call``) and the answer its last cell
#: gave to ``FINAL``.
_SUB_CALLS: RunKey[SubCalls] = RunKey("sub_call_handler")
_FINAL: RunKey[str] = RunKey("final")


class RLMContextError(JarvisError, TypeError):
    """The context given to the rlm agent cannot go to its REPL: it is not text or JSON values."""


def final_in_text(text: str) -> Optional[Tuple[str, bool]]:
    """``(value, is_var)`` of the first line of ``text`` that starts with ``FINAL(`` or ``FINAL_VAR(``.

    The argument ends at the ``)`` that ends that line, else at the last ``)`` of the text; a quoted string
    is unquoted. ``None`` when there is no such line.
    """
    match = _FINAL_LINE.search(text or "")
    if match is None:
        return None
    rest = text[match.end():]
    line = rest.split("\n", 1)[0].rstrip().rstrip("*_`. ")
    if line.endswith(")"):
        argument = line[:-1]
    else:
        end = rest.rfind(")")
        if end < 0:
            return None
        argument = rest[:end]
    argument = argument.strip()
    if len(argument) >= 2 and argument[0] == argument[-1] and argument[0] in "'\"":
        try:
            value = ast.literal_eval(argument)
        except (ValueError, SyntaxError):  # e.g. a line break inside the quotes
            value = argument[1:-1]
        argument = value if isinstance(value, str) else argument
    return argument, match.group(1) is not None


def _positive(value: Any, name: str, *, whole: bool, minimum: float = 1) -> Any:
    kinds = (int,) if whole else (int, float)
    if isinstance(value, bool) or not isinstance(value, kinds) or value < minimum:
        raise ConfigError(f"{name} must be a {'whole ' if whole else ''}number of at least {minimum:g}, got {value!r}",
                          key=f"agents.rlm.{name}")
    return value


class RLMAgent(ReplAgent):
    """``RLMAgent(engine, model=..., sub_model=None, ...)``; see the module docs."""

    agent_id = "rlm"
    default_system_prompt = RLM_PROMPT
    default_max_tokens = 2048

    def __init__(self, engine: Any, *, sub_model: Optional[str] = None, sub_temperature: Optional[float] = 0.3,
                 sub_max_tokens: int = 1024, max_output_chars: int = 10_000, cell_timeout_s: float = 30.0,
                 max_concurrent_sub_calls: int = 4, max_sub_calls_per_cell: int = 32, max_sub_calls_per_run: int = 256,
                 max_sub_tokens_per_cell: int = 100_000, max_sub_tokens_per_run: int = 500_000,
                 max_input_chars: int = 4000, context_window: Optional[int] = None,
                 sandbox: Optional[PythonSandbox] = None, isolation: str = "jail", seccomp: bool = True,
                 **kwargs: Any) -> None:
        if sub_model is not None and (not isinstance(sub_model, str) or not sub_model.strip()):
            raise ConfigError(f"sub_model must be a model id, got {sub_model!r}", key="agents.rlm.sub_model")
        if sub_temperature is not None:
            _positive(sub_temperature, "sub_temperature", whole=False, minimum=0)
        self.sub_max_tokens = _positive(sub_max_tokens, "sub_max_tokens", whole=True)
        self.max_output_chars = _positive(max_output_chars, "max_output_chars", whole=True, minimum=100)
        self.cell_timeout_s = float(_positive(cell_timeout_s, "cell_timeout_s", whole=False, minimum=0.1))
        if self.cell_timeout_s > 86400:
            raise ConfigError(f"cell_timeout_s must be at most a day (86400 s), got {cell_timeout_s!r}",
                              key="agents.rlm.cell_timeout_s")
        self.max_concurrent_sub_calls = _positive(max_concurrent_sub_calls, "max_concurrent_sub_calls", whole=True)
        self.max_sub_calls_per_cell = _positive(max_sub_calls_per_cell, "max_sub_calls_per_cell", whole=True)
        self.max_sub_calls_per_run = _positive(max_sub_calls_per_run, "max_sub_calls_per_run", whole=True)
        self.max_sub_tokens_per_cell = _positive(max_sub_tokens_per_cell, "max_sub_tokens_per_cell", whole=True)
        self.max_sub_tokens_per_run = _positive(max_sub_tokens_per_run, "max_sub_tokens_per_run", whole=True)
        self.max_input_chars = _positive(max_input_chars, "max_input_chars", whole=True, minimum=100)
        window = check_window(context_window, "agents.rlm.context_window")
        super().__init__(engine, **kwargs)
        check_cell_name(self.tools, self.agent_id)
        self.sub_model: str = sub_model or self.model
        self.sub_temperature = sub_temperature
        self.window = ContextWindow(engine, self.model, window)
        self.sandbox = run_sandbox(sandbox, isolation, "agents.rlm", seccomp)

    # -- the prompt ---------------------------------------------------------------------------------
    def build_messages(self, input: str, context: Optional[AgentContext]) -> List[Message]:
        """The REPL rules in the system message; the input and a description of ``context`` as the user's."""
        messages = super().build_messages(input, context)
        tools = _TOOLS.format(specs=render_tools(self.tool_specs())) if self.tools else ""
        rules = _REPL_RULES.format(max_output=self.max_output_chars, concurrent=self.max_concurrent_sub_calls,
                                   tools=tools)
        if messages[0].role is Role.SYSTEM:
            messages[0] = Message.system(f"{messages[0].content or ''}\n\n{rules}".strip())
        else:
            messages.insert(0, Message.system(rules))
        value, given = _context_of(input, context)
        question = input
        if not given and len(input) > self.max_input_chars:
            question = (f"{input[:500]}\n[… the request continues: it is {len(input)} characters long; the whole "
                        "of it is in `context`]")
        messages[-1] = Message.user(f"{question}\n\n{_describe(value)}")
        return messages

    # -- the run ------------------------------------------------------------------------------------
    def make_repl(self, run: AgentRun) -> PythonRepl:
        value, _ = _context_of(run.input, run.context)
        calls = SubCalls(self, run)
        _SUB_CALLS.set(run, calls)
        return PythonRepl(self.sandbox, cell_timeout_s=self.cell_timeout_s, max_output_chars=self.max_output_chars,
                          handler=calls, functions=("llm_query", "llm_batch", "tool_call"), final=True,
                          variables={"context": value})

    async def body(self, run: AgentRun) -> AsyncIterator[AgentEvent]:
        with usage_sink(run):
            async for event in self._turns(run):
                yield event

    @staticmethod
    def _finish(run: AgentRun, content: str, stop_reason: str) -> None:
        run.finish(content, stop_reason, sub_calls=SUB_CALLS.get(run, 0))

    async def _turns(self, run: AgentRun) -> AsyncIterator[AgentEvent]:
        corrected = False
        for turn in range(1, self.max_turns + 1):
            run.turns = turn
            async for event in self._ask(run):
                yield event
            text = strip_reasoning((run.completion.content if run.completion else "") or "")
            code = joined_code(text)
            final = None
            if code:
                async for event in self._cell(run, code):
                    yield event
                final = _FINAL.pop(run, None)
            else:
                found = final_in_text(text)
                if found is not None and found[1]:
                    async for event in self._cell(run, f"FINAL_VAR({found[0]!r})"):
                        yield event
                    final = _FINAL.pop(run, None)
                elif found is not None:
                    final = found[0]
                elif not corrected:
                    corrected = True
                    run.messages.append(Message.user(_CORRECTION))
                    yield Notice(run.run_id, "protocol", "the reply had neither code nor FINAL(...); asked once more",
                                 turn)
                    continue
                else:
                    final = text.strip()
                    yield Notice(run.run_id, "protocol", "the model did not follow the protocol after one correction; "
                                 "its reply is taken as the answer", turn)
            if final is not None:
                yield TextDelta(run.run_id, turn, final)
                self._finish(run, final, "final")
                return
        yield Notice(run.run_id, "max_turns", f"reached the limit of {self.max_turns} turn(s)", run.turns)
        answer = ""
        if self.final_answer_on_max_turns:
            run.messages.append(Message.user(_LAST_CALL))
            async for event in self._ask(run):
                yield event
            text = strip_reasoning((run.completion.content if run.completion else "") or "")
            found = final_in_text(text)
            answer = found[0] if found is not None and not found[1] else text.strip()
            if answer:
                yield TextDelta(run.run_id, run.turns, answer)
        self._finish(run, answer, "max_turns")

    async def _ask(self, run: AgentRun) -> AsyncIterator[AgentEvent]:
        async for event in self.call_model(run, continue_on_length=True):
            if not isinstance(event, TextDelta):  # code is not the answer; the answer is sent when known
                yield event

    async def _cell(self, run: AgentRun, code: str) -> AsyncIterator[AgentEvent]:
        """Run one cell through the run's executor; the run's ``_FINAL`` is set when it called FINAL."""
        call = cell_call(code)
        yield ToolCallsRequested(run.run_id, run.turns, (call,))
        cell = CELL.get(run)
        cell.last = None
        _SUB_CALLS.get(run).new_cell()
        result = await run.executor.aexecute(call)
        run.tool_results.append(result)
        yield ToolCallFinished(run.run_id, run.turns, result)
        if cell.last is not None and cell.last.final is not None:
            _FINAL.set(run, cell.last.final)
            return
        body = fit_observation(result.content, run.messages, WINDOW.get(run), self.max_tokens)
        run.messages.append(Message.user(f"REPL output:\n{body}"))


def _context_of(input: str, context: Optional[AgentContext]) -> Tuple[Any, bool]:
    """The value of ``context`` in the REPL and whether the caller gave one (else it is the input)."""
    metadata = context.metadata if context is not None else {}
    if "context" not in metadata:
        return input, False
    value = metadata["context"]
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        raise RLMContextError("the rlm agent's context (AgentContext.metadata['context']) must be text or JSON values "
                         f"(str, list, dict, numbers), got {type(value).__name__}") from None
    return value, True


def _describe(value: Any) -> str:
    """What the prompt says about ``context``: its type and size, and how to look at it."""
    if isinstance(value, str):
        lines = value.count("\n") + 1 if value else 0
        return (f"[`context` is a str of {len(value)} characters ({lines} lines). Look at it with code, for example "
                "print(context[:1000]), context.splitlines(), re.findall(...), or llm_query over chunks of it.]")
    size = len(value) if isinstance(value, (list, dict)) else None
    count = f" with {size} items" if size is not None else ""
    return (f"[`context` is a {type(value).__name__}{count} ({len(json.dumps(value))} characters as JSON). Look at "
            "it with code, for example print(type(context), len(context)) and print(context[0]) or "
            "list(context)[:10].]")
