"""``native_openhands`` (alias ``codeact``): a CodeAct agent. The model acts by writing Python, which runs in
a sandboxed REPL that persists for the whole run, and by calling tools.

Each turn the reply is read in this order, and the first form found is what runs:

1. **native tool calls** (the engine's ``tool_calls``);
2. **fenced code**: ```` ```python ````, ```` ```py ```` and bare fences, all blocks of the reply joined
   into one cell (:mod:`.code_blocks`). The cell runs in the run's
   :class:`~jarvis_agents.sandbox.repl.PythonRepl`: a separate, limited process with a clean environment
   whose variables and imports last from one turn to the next, and which is killed when the run ends;
3. **Hermes text**: ``<tool_call>{"name": …, "arguments": {…}}</tool_call>`` (the core's ``hermes``
   parser), for servers that leave the model's calls in the text. A block that cannot be read gets one
   corrective message; it is never silently stripped from the answer;
4. **ReAct text**: ``Action:`` / ``Action Input:`` (:mod:`.text_protocol`);
5. otherwise the reply is the answer (a ``Final Answer:`` line, if any, is taken as it).

Results go back as ``tool`` messages for native calls and as one user message otherwise (``Output:`` for
a cell). Every result is cut to fit the model's context window (:mod:`.context_window`), which comes from
the engine or the ``context_window`` setting. URL prefetch (:mod:`.prefetch`) is off by default.

Options: ``cell_timeout_s`` (30), ``max_output_chars`` (10000, per cell), ``url_prefetch`` (false),
``prefetch_options`` (the ``web_fetch`` options used when the agent has no ``web_fetch`` tool of its own),
``context_window`` (tokens; default: ask the engine), ``isolation`` (``"jail"``, the default: cells run in
the bubblewrap jail and are refused where it cannot be had; ``"rlimits"``: the limits-only sandbox, accepted
knowingly), ``seccomp`` (true: the jail's seccomp filter; false leaves it out knowingly), ``sandbox`` (a :class:`~jarvis_agents.sandbox.PythonSandbox`, for its limits; it brings its own
isolation), and those of
:class:`~jarvis_core.agents.ToolUsingAgent`.
"""

from __future__ import annotations

from typing import Any, AsyncIterator, Mapping, Optional, Sequence, Tuple

import attrs

from jarvis_agents.agents.cells import ReplAgent, cell_call, check_cell_name, run_sandbox
from jarvis_agents.agents.code_blocks import joined_code
from jarvis_agents.agents.context_window import WINDOW, ContextWindow, check_window, fit_observation
from jarvis_agents.agents.prefetch import fetch_executor, prefetch_urls
from jarvis_agents.agents.text_protocol import REACT, parse_reply, render_tools, strip_reasoning
from jarvis_agents.sandbox.python import PythonSandbox
from jarvis_agents.sandbox.repl import PythonRepl
from jarvis_core.agents import AgentEvent, AgentRun, Decision, Notice, TextDelta
from jarvis_core.errors import ConfigError
from jarvis_core.parsers.jsonblocks import HermesParser
from jarvis_core.tools import ToolExecutor
from jarvis_core.types import AgentContext, Completion, Message, Role, ToolResult, ToolSpec

__all__ = ["CODEACT_PROMPT", "CodeActAgent", "read_reply"]

CODEACT_PROMPT = "You are a careful assistant who solves tasks step by step by writing Python code."

_CODE_RULES = (
    "To run Python, write it in a ```python block. It runs in a sandboxed Python session that lasts for this "
    "whole conversation: variables, functions and imports stay defined between your blocks. Only the standard "
    "library is available. Use print() to see values; the output comes back in the next message."
)
_TOOL_RULES = (
    "You can also call these tools (with the tool-calling interface if you have one, else by writing "
    '<tool_call>{{"name": "tool_name", "arguments": {{...}}}}</tool_call>):\n{tools}'
)
_ANSWER_RULE = "When you know the answer, reply with the answer only, in plain text, with no code block and no tool call."
_HERMES_RETRY = ("Your <tool_call> block could not be read ({problem}). Write it as "
                 '<tool_call>{{"name": "tool_name", "arguments": {{...}}}}</tool_call>, or reply with the answer.')


def _bad_hermes(text: str, specs: Sequence[ToolSpec]) -> Tuple[Tuple[Any, ...], str]:
    """The Hermes calls of ``text``, and what is wrong when it has a block that could not be read."""
    parsed = HermesParser(list(specs)).parse(text)
    problem = "; ".join(d.message for d in parsed.diagnostics if d.code != "text_dropped")
    return parsed.tool_calls, problem or "no call found in it"


def read_reply(completion: Completion, specs: Sequence[ToolSpec]) -> Tuple[Decision, str, str]:
    """``(decision, form, problem)``: what a reply asks for. ``form`` is ``native``, ``code``, ``hermes``,
    ``action`` or ``answer``; ``problem`` is set when a ``<tool_call>`` block could not be read."""
    content = completion.content or ""
    if completion.tool_calls:
        return Decision(content, completion.tool_calls), "native", ""
    text = strip_reasoning(content)
    code = joined_code(text)
    if code:
        return Decision("", (cell_call(code),)), "code", ""
    problem = ""
    if "<tool_call>" in text:
        calls, problem = _bad_hermes(text, specs)
        if calls:
            return Decision("", calls), "hermes", ""
    parsed = parse_reply(text, REACT, specs)
    if parsed.call is not None:
        return Decision("", (parsed.call,)), "action", ""
    if parsed.final is not None:
        return Decision(parsed.final), "answer", problem
    return Decision(text.strip()), "answer", problem


class CodeActAgent(ReplAgent):
    """``CodeActAgent(engine, model=..., tools=[...], url_prefetch=False)``; see the module docs."""

    agent_id = "native_openhands"
    default_system_prompt = CODEACT_PROMPT
    #: The documented defaults: three code turns, replies up to 2048 tokens (a cell and its explanation).
    default_max_turns = 3
    default_max_tokens = 2048

    def __init__(self, engine: Any, *, sandbox: Optional[PythonSandbox] = None, cell_timeout_s: float = 30.0,
                 max_output_chars: int = 10_000, url_prefetch: bool = False,
                 prefetch_options: Optional[Mapping[str, Any]] = None, context_window: Optional[int] = None,
                 isolation: str = "jail", seccomp: bool = True, **kwargs: Any) -> None:
        key = f"agents.{self.agent_id}"
        if not isinstance(url_prefetch, bool):
            raise ConfigError(f"url_prefetch must be true or false, got {url_prefetch!r}", key=f"{key}.url_prefetch")
        if isinstance(cell_timeout_s, bool) or not isinstance(cell_timeout_s, (int, float)) or not 0 < cell_timeout_s <= 86400:
            raise ConfigError(f"cell_timeout_s must be a number of seconds above 0, at most a day, got {cell_timeout_s!r}",
                              key=f"{key}.cell_timeout_s")
        if isinstance(max_output_chars, bool) or not isinstance(max_output_chars, int) or max_output_chars < 100:
            raise ConfigError(f"max_output_chars must be a whole number of at least 100, got {max_output_chars!r}",
                              key=f"{key}.max_output_chars")
        window = check_window(context_window, f"{key}.context_window")
        super().__init__(engine, **kwargs)
        self.window = ContextWindow(engine, self.model, window)
        check_cell_name(self.tools, self.agent_id)
        self.sandbox = run_sandbox(sandbox, isolation, key, seccomp)
        self.cell_timeout_s = float(cell_timeout_s)
        self.max_output_chars = max_output_chars
        self.url_prefetch = url_prefetch
        # Built now, so bad web_fetch options are a ConfigError when the agent is created, not mid-run.
        self._fetcher: Optional[ToolExecutor] = None
        if url_prefetch and self.executor.get("web_fetch") is None:
            self._fetcher = fetch_executor(prefetch_options, self.approver, self.bus)

    # -- the prompt ---------------------------------------------------------------------------------
    def build_messages(self, input: str, context: Optional[AgentContext]) -> list[Any]:
        """The base messages, with the code and tool rules added to the one system message."""
        messages = super().build_messages(input, context)
        rules = [_CODE_RULES]
        if self.tools:
            rules.append(_TOOL_RULES.format(tools=render_tools(self.tool_specs())))
        rules.append(_ANSWER_RULE)
        text = "\n\n".join(rules)
        if messages and messages[0].role is Role.SYSTEM:
            messages[0] = Message.system(f"{messages[0].content or ''}\n\n{text}".strip())
        else:
            messages.insert(0, Message.system(text))
        return messages

    # -- the run ------------------------------------------------------------------------------------
    def make_repl(self, run: AgentRun) -> PythonRepl:
        return PythonRepl(self.sandbox, cell_timeout_s=self.cell_timeout_s, max_output_chars=self.max_output_chars)

    async def body(self, run: AgentRun) -> AsyncIterator[AgentEvent]:
        if self.url_prefetch:
            fetcher = self._fetcher.with_run(run.run_id) if self._fetcher is not None else run.executor
            async for event in prefetch_urls(run, fetcher, WINDOW.get(run), self.max_tokens):
                yield event
        async for event in super().body(run):
            yield event

    async def decide(self, run: AgentRun) -> AsyncIterator[AgentEvent]:
        specs = self.tool_specs()
        corrected = False
        while True:
            async for event in self.call_model(run, tools=specs or None, continue_on_length=True):
                if not isinstance(event, TextDelta):  # code and calls are not the answer; the answer is sent below
                    yield event
            assert run.completion is not None
            decision, form, problem = read_reply(run.completion, specs)
            if form == "answer" and problem and not corrected:
                corrected = True
                run.messages.append(Message.user(_HERMES_RETRY.format(problem=problem)))
                yield Notice(run.run_id, "protocol", f"a <tool_call> block could not be read ({problem}); asked again",
                             run.turns)
                continue
            break
        run.state["form"] = form
        if form == "answer" and decision.content:
            yield TextDelta(run.run_id, run.turns, decision.content)
        run.decision = decision

    def observe(self, run: AgentRun, results: Sequence[ToolResult]) -> None:
        window: int = WINDOW.get(run)

        def fit(result: ToolResult) -> str:
            return fit_observation(result.content, run.messages, window, self.max_tokens)

        form = run.state.get("form")
        if form == "native":
            run.messages.extend(attrs.evolve(r, content=fit(r)).to_message() for r in results)
        elif form == "code":
            run.messages.append(Message.user("Output:\n" + "\n".join(fit(r) for r in results)))
        else:
            run.messages.append(Message.user("\n".join(f"Result of {r.name}: {fit(r)}" for r in results)))
