"""``jarvis ask PROMPT``: one question, the answer streamed to stdout as it arrives.

The engine: ``--engine`` (with ``--host``), else the config's default, else the first healthy engine found
by probing (announced on stderr), else the embedded llama.cpp server when installed (announced); see
:mod:`jarvis_core.engine_choice`. With ``--agent`` (or ``[agent] default``) the question goes to that agent;
otherwise straight to the engine. ``--tools a,b`` hands registered tools to the agent; each tool call and
its result is shown on stderr as it happens (``--tools FILE.json`` instead describes the caller's own tool
schemas to a prompt provider), and a run that ends for another reason than a final answer
(``max_turns``, ``error``, …) says so there too.

With ``--prompt-provider NAME`` a prompt provider builds the system prompt (from ``--node-context``,
``--timezone``, ``--commands`` and the tools) and reads the reply: the tool calls it read are printed, not
run; with ``--agent prompt_driven`` as well they are run in a tool loop (docs/prompts.md).

Announcements and errors go to stderr, the answer alone to stdout, so ``jarvis ask … > answer.txt`` works.

Every answer is kept in the conversation log (``jarvis logs``) unless ``--no-log``, ``JARVIS_NO_LOG=1`` or
``[log] enabled = false`` says not to; ``-c`` continues the latest logged conversation, ``--cid ID`` a given
one (its exchanges are sent as history). See :mod:`jarvis_core.cli.answer_log`.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, TypedDict

from jarvis_core.cli.answer_log import add_log_arguments
from jarvis_core.cli.arg_types import repair_text
from jarvis_core.commands import finite_float, parse_tools, positive_int, show_agent_event, tools_file

if TYPE_CHECKING:
    from jarvis_core.cli.answer_log import AnswerLog
    from jarvis_core.config import JarvisConfig
    from jarvis_core.request_scope import Prompt
    from jarvis_core.sdk import Jarvis
from jarvis_core.cli.verb_args import add_verb_arguments, question_with_images, schema_format

__all__ = ["add_engine_arguments", "add_parser", "close_quietly", "jarvis_from_args", "request_options", "run"]


def add_engine_arguments(p: argparse.ArgumentParser) -> None:
    """Options shared by ``ask`` and ``chat``: which engine, model, agent and tools, and sampling."""
    g = p.add_argument_group("engine")
    g.add_argument("--engine", metavar="NAME", help="engine key (see 'jarvis plugins'); default: config, then discovery")
    g.add_argument("--host", metavar="URL", help="address of the engine's server, e.g. http://localhost:8000")
    g.add_argument("--model", metavar="ID", help="model id; default: config, then the first the engine offers")
    g.add_argument("--agent", metavar="NAME", help="answer through this registered agent")
    g.add_argument("--tools", metavar="A,B|FILE",
                   help="comma-separated registered tools for the agent; or a JSON file (an array of OpenAI "
                   "function schemas) describing the caller's own tools to a --prompt-provider")
    g.add_argument("-v", "--verbose", action="store_true", help="say on stderr when a request is retried")
    r = p.add_argument_group("request")
    r.add_argument("--system", metavar="TEXT", help='system prompt (default "You are a helpful assistant."; "" for none)')
    r.add_argument("--temperature", type=finite_float, metavar="T", help="sampling temperature (default: model family's)")
    r.add_argument("--max-tokens", type=positive_int, metavar="N",
                   help="answer length limit (default 1024; with --agent, the agent's own setting)")


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``ask`` to the ``jarvis`` parser."""
    p: argparse.ArgumentParser = subparsers.add_parser(
        "ask",
        help="ask one question; the answer streams to stdout",
        description="Ask one question. The answer streams to stdout; which engine and model were picked (when "
        "you did not say) is announced on stderr.",
    )
    p.add_argument("prompt", nargs="*", metavar="PROMPT", help="the question (words are joined; '-' or none: stdin)")
    p.add_argument("--json", action="store_true", help="print the whole answer (content, usage, …) as JSON, unstreamed")
    add_engine_arguments(p)
    add_log_arguments(p)
    add_verb_arguments(p)
    g = p.add_argument_group("prompt provider")
    g.add_argument("--prompt-provider", metavar="NAME",
                   help="build the prompt and read the reply with this provider ('jarvis prompts list'; 'auto': "
                   "the one the model's backend defaults name); --tools then go into the prompt and their calls "
                   "are printed, not run")
    g.add_argument("--node-context", metavar="FILE", help="JSON object: room, user, voice_mode, user_memories, agents")
    g.add_argument("--timezone", metavar="TZ", help="the node's timezone, e.g. Europe/Paris")
    g.add_argument("--commands", metavar="FILE",
                   help="JSON array of {command_name, allow_direct_answer, examples}: which commands may be answered "
                   "without a tool call")
    return p




def jarvis_from_args(args: argparse.Namespace, config: Optional[JarvisConfig] = None) -> Jarvis:
    """A :class:`~jarvis_core.sdk.Jarvis` for the engine options in ``args``, announcing on stderr
    (``config``: the loaded config, else loaded on first use)."""
    from jarvis_core.cli import output
    from jarvis_core.errors import UsageError
    from jarvis_core.sdk import DEFAULT_SYSTEM_PROMPT, Jarvis

    if getattr(args, "verbose", False):
        output.show_retries()
    schemas = tools_file(args.tools)
    if schemas and not getattr(args, "prompt_provider", None):
        raise UsageError(f"--tools {schemas}: tool schemas from a file are for 'jarvis ask --prompt-provider'; "
                         "name registered tools here (--tools a,b)", argument="--tools")
    return Jarvis(
        config,
        engine=args.engine,
        host=args.host,
        model=args.model,
        agent=args.agent,
        tools=parse_tools(args.tools),
        system_prompt=DEFAULT_SYSTEM_PROMPT if args.system is None else (args.system or None),
        announce=output.announce,
    )


class RequestOptions(TypedDict):
    """The sampling keywords ``jarvis ask`` and ``jarvis chat`` pass to ``Jarvis.ask_*``."""

    temperature: Optional[float]
    max_tokens: Optional[int]


def request_options(args: argparse.Namespace) -> RequestOptions:
    """Keyword arguments for ``Jarvis.ask_*`` from ``args``."""
    return RequestOptions(temperature=args.temperature, max_tokens=args.max_tokens)


def _prompt(args: argparse.Namespace) -> str:
    from jarvis_core.errors import UsageError

    words = list(args.prompt)
    if words in ([], ["-"]):
        if words == [] and sys.stdin.isatty():
            raise UsageError('no question given: jarvis ask "your question" (or pipe it on stdin)', argument="PROMPT")
        buffer = getattr(sys.stdin, "buffer", None)  # bytes, so text that is not UTF-8 is repaired, not fatal
        text = (buffer.read().decode("utf-8", "surrogateescape") if buffer is not None else sys.stdin.read()).strip()
    else:
        text = " ".join(words).strip()
    if not text:
        raise UsageError('the question is empty: jarvis ask "your question"', argument="PROMPT")
    return repair_text(text)


def run(args: argparse.Namespace) -> int:
    """Answer one question; the engine is closed (a managed server stopped) on every path."""
    import json

    from jarvis_core.cli.answer_log import AnswerLog
    from jarvis_core.config import load_config
    from jarvis_core.types import Message

    prompt = _prompt(args)
    provider_options = _provider_options(args)
    config = load_config()
    log = AnswerLog(args, config)
    response_format = schema_format(getattr(args, "schema", None))
    images = getattr(args, "attachment", None) or []
    content: Any = question_with_images(prompt, images) if images else prompt
    jarvis = jarvis_from_args(args, config=config)
    question: Prompt = [*log.history, Message.user(content)] if log.history or images else prompt
    try:
        if provider_options:
            return _ask_with_provider(jarvis, question, prompt, args, provider_options, log)
        jarvis.check_names()
        connect_first(jarvis)
        log.start()
        if response_format is not None:
            from jarvis_core.sdk_verbs import structured_answer

            result = jarvis.ask_full(question, response_format=response_format, **request_options(args))
            parsed = structured_answer(result, response_format, response_format)
            log.record(jarvis, prompt, result.content, result)
            out = {**result.to_dict(), "parsed": parsed} if args.json else parsed
            sys.stdout.write(json.dumps(out, ensure_ascii=False, indent=None if args.json else 2) + "\n")
            return 0
        if args.json:
            result = jarvis.ask_full(question, **request_options(args))
            log.record(jarvis, prompt, result.content, result)
            sys.stdout.write(json.dumps(result.to_dict(), ensure_ascii=False) + "\n")
            return 0
        answer = stream_answer(jarvis, question, request_options(args), on_event=log.on_event)
        log.record(jarvis, prompt, answer)
        return 0
    finally:
        close_quietly(jarvis)
        log.close()


def connect_first(jarvis: Jarvis) -> None:
    """Pick (and announce) the engine and model before any output; an agent with a model of its own (a
    wrapped runtime) needs no engine, so none is probed or started for it."""
    from jarvis_core.sdk_agents import own_model_agent

    if own_model_agent(jarvis.scope()) is None:
        jarvis.connect()


def close_quietly(jarvis: Jarvis) -> None:
    """Close the session (stopping a managed server); a failure to close is a warning line, so it never
    hides the error that ended the command."""
    from jarvis_core.cli import output

    try:
        jarvis.close()
    except Exception as exc:
        output.show_warning(f"closing the engine failed: {type(exc).__name__}: {exc}", RuntimeWarning, "", 0)



def stream_answer(jarvis: Jarvis, prompt: Prompt, options: RequestOptions,
                  on_event: Optional[Callable[[Any], None]] = None) -> str:
    """Write the answer to stdout as it arrives, ending with a newline; return the whole text. Agent events
    (tool calls and results, notices) go to stderr as they happen, and to ``on_event`` when given."""
    out = sys.stdout
    pieces: List[str] = []

    def shown(event: Any) -> None:
        show_agent_event(event)
        if on_event is not None:
            on_event(event)

    try:
        for text in jarvis.ask_stream_sync(prompt, on_event=shown, **options):
            pieces.append(text)
            out.write(text)
            out.flush()
    finally:
        if pieces and not pieces[-1].endswith("\n"):
            out.write("\n")
            out.flush()
    return "".join(pieces)


def _provider_options(args: argparse.Namespace) -> Dict[str, Any]:
    """``ask_full`` keywords for ``--prompt-provider`` (empty without it); a bad context file is a JarvisError."""
    from jarvis_core.errors import UsageError

    name = getattr(args, "prompt_provider", None)
    schemas = tools_file(getattr(args, "tools", None))
    if not name:
        if any(getattr(args, a, None) for a in ("node_context", "timezone", "commands")):
            raise UsageError("--node-context, --timezone and --commands are read by a prompt provider; add "
                             "--prompt-provider NAME", argument="--prompt-provider")
        if schemas:
            raise UsageError(f"--tools {schemas}: tool schemas from a file describe your own tools to a prompt "
                             "provider (their calls are printed, not run); add --prompt-provider NAME, or name "
                             "registered tools (--tools a,b)", argument="--tools")
        return {}
    from jarvis_core.cli.prompt_files import read_json_file

    context = read_json_file(args.node_context, "--node-context", want=dict) if args.node_context else None
    commands = read_json_file(args.commands, "--commands", want=list) if args.commands else None
    options: Dict[str, Any] = {"prompt_provider": name, "node_context": context, "timezone": args.timezone,
                               "available_commands": commands}
    if schemas:
        if args.agent:
            raise UsageError(f"--tools {schemas}: tool schemas from a file have no implementation for agent "
                             f"{args.agent!r} to run; drop --agent to get the calls printed, or name registered "
                             "tools (--tools a,b)", argument="--tools")
        options["tools"] = read_tool_schemas(schemas)
    return options


def read_tool_schemas(path: str) -> List[Any]:
    """The tool schemas in ``path`` (a JSON array of OpenAI function schemas or bare ``{name, parameters}``
    objects); a bad file or entry is a JarvisError naming the file and the entry."""
    from jarvis_core.cli.prompt_files import read_json_file
    from jarvis_core.errors import JarvisError
    from jarvis_core.prompts import coerce_tools

    value = read_json_file(path, "--tools", want=list)
    try:
        tools: List[Any] = coerce_tools(value)
        return tools
    except JarvisError as exc:
        raise JarvisError(f"--tools {path}: {exc}") from None


def _ask_with_provider(jarvis: Jarvis, prompt: Prompt, question: str, args: argparse.Namespace,
                       provider_options: Dict[str, Any], log: AnswerLog) -> int:
    """Ask through a prompt provider (``prompt``: the ``question`` after the logged history); print the message
    and the tool calls it read (or everything as JSON)."""
    import json

    jarvis.check_names()
    extra = {"system": args.system} if args.system is not None else {}
    log.start()
    result = jarvis.ask_full(prompt, **request_options(args), **provider_options, **extra)
    log.record(jarvis, question, result.content, result)
    if args.json:
        sys.stdout.write(json.dumps(result.to_dict(), ensure_ascii=False) + "\n")
        return 0
    reply = result.jarvis_json
    if reply is None:  # an agent ran the tools: its answer is the content
        sys.stdout.write(result.content.rstrip("\n") + "\n")
        return 0
    if reply.message:
        sys.stdout.write(reply.message.rstrip("\n") + "\n")
    for call in reply.tool_calls:
        sys.stdout.write(f"tool call: {call.name} {json.dumps(dict(call.arguments), ensure_ascii=False)}\n")
    if reply.error:
        from jarvis_core.cli import output

        output.announce(f"the reply carried an error: {reply.error}")
    return 0
