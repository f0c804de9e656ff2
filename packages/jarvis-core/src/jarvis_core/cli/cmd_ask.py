"""``jarvis ask PROMPT``: one question, the answer streamed to stdout as it arrives.

The engine: ``--engine`` (with ``--host``), else the config's default, else the first healthy engine found
by probing (announced on stderr), else the embedded llama.cpp server when installed (announced); see
:mod:`jarvis_core.engine_choice`. With ``--agent`` (or ``[agent] default``) the question goes to that agent;
otherwise straight to the engine. ``--tools a,b`` hands registered tools to the agent.

Announcements and errors go to stderr, the answer alone to stdout, so ``jarvis ask … > answer.txt`` works.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, Dict, List, Optional

from jarvis_core.cli.arg_types import finite_float, positive_int, repair_text

__all__ = ["add_engine_arguments", "add_parser", "close_quietly", "jarvis_from_args", "request_options", "run"]


def add_engine_arguments(p: argparse.ArgumentParser) -> None:
    """Options shared by ``ask`` and ``chat``: which engine, model, agent and tools, and sampling."""
    g = p.add_argument_group("engine")
    g.add_argument("--engine", metavar="NAME", help="engine key (see 'jarvis plugins'); default: config, then discovery")
    g.add_argument("--host", metavar="URL", help="address of the engine's server, e.g. http://localhost:8000")
    g.add_argument("--model", metavar="ID", help="model id; default: config, then the first the engine offers")
    g.add_argument("--agent", metavar="NAME", help="answer through this registered agent")
    g.add_argument("--tools", metavar="A,B", help="comma-separated registered tools for the agent")
    r = p.add_argument_group("request")
    r.add_argument("--system", metavar="TEXT", help='system prompt (default "You are a helpful assistant."; "" for none)')
    r.add_argument("--temperature", type=finite_float, metavar="T", help="sampling temperature (default: model family's)")
    r.add_argument("--max-tokens", type=positive_int, default=1024, metavar="N", help="answer length limit (default 1024)")


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``ask`` to the ``jarvis`` parser."""
    p = subparsers.add_parser(
        "ask",
        help="ask one question; the answer streams to stdout",
        description="Ask one question. The answer streams to stdout; which engine and model were picked (when "
        "you did not say) is announced on stderr.",
    )
    p.add_argument("prompt", nargs="*", metavar="PROMPT", help="the question (words are joined; '-' or none: stdin)")
    p.add_argument("--json", action="store_true", help="print the whole answer (content, usage, …) as JSON, unstreamed")
    add_engine_arguments(p)
    return p


def parse_tools(value: Optional[str]) -> List[str]:
    """``"a, b"`` → ``["a", "b"]``."""
    return [t.strip() for t in (value or "").split(",") if t.strip()]


def jarvis_from_args(args: argparse.Namespace) -> Any:
    """A :class:`~jarvis_core.sdk.Jarvis` for the engine options in ``args``, announcing on stderr."""
    from jarvis_core.cli import output
    from jarvis_core.sdk import DEFAULT_SYSTEM_PROMPT, Jarvis

    return Jarvis(
        engine=args.engine,
        host=args.host,
        model=args.model,
        agent=args.agent,
        tools=parse_tools(args.tools),
        system_prompt=DEFAULT_SYSTEM_PROMPT if args.system is None else (args.system or None),
        announce=output.announce,
    )


def request_options(args: argparse.Namespace) -> Dict[str, Any]:
    """Keyword arguments for ``Jarvis.ask_*`` from ``args``."""
    return {"temperature": args.temperature, "max_tokens": args.max_tokens}


def _prompt(args: argparse.Namespace) -> str:
    from jarvis_core.errors import JarvisError

    words = list(args.prompt)
    if words in ([], ["-"]):
        if words == [] and sys.stdin.isatty():
            raise JarvisError('no question given: jarvis ask "your question" (or pipe it on stdin)')
        buffer = getattr(sys.stdin, "buffer", None)  # bytes, so text that is not UTF-8 is repaired, not fatal
        text = (buffer.read().decode("utf-8", "surrogateescape") if buffer is not None else sys.stdin.read()).strip()
    else:
        text = " ".join(words).strip()
    if not text:
        raise JarvisError('the question is empty: jarvis ask "your question"')
    return repair_text(text)


def run(args: argparse.Namespace) -> int:
    """Answer one question; the engine is closed (a managed server stopped) on every path."""
    import json

    prompt = _prompt(args)
    jarvis = jarvis_from_args(args)
    try:
        jarvis.check_names()
        jarvis.engine  # noqa: B018 - pick (and announce) the engine and model before any output
        if args.model is None:
            jarvis.model  # noqa: B018
        if args.json:
            sys.stdout.write(json.dumps(jarvis.ask_full(prompt, **request_options(args)), ensure_ascii=False) + "\n")
            return 0
        stream_answer(jarvis, prompt, request_options(args))
        return 0
    finally:
        close_quietly(jarvis)


def close_quietly(jarvis: Any) -> None:
    """Close the session (stopping a managed server); a failure to close is a warning line, so it never
    hides the error that ended the command."""
    from jarvis_core.cli import output

    try:
        jarvis.close()
    except Exception as exc:
        output.show_warning(f"closing the engine failed: {type(exc).__name__}: {exc}", RuntimeWarning, "", 0)


def stream_answer(jarvis: Any, prompt: Any, options: Dict[str, Any]) -> str:
    """Write the answer to stdout as it arrives, ending with a newline; return the whole text."""
    out = sys.stdout
    pieces: List[str] = []
    try:
        for text in jarvis.ask_stream_sync(prompt, **options):
            pieces.append(text)
            out.write(text)
            out.flush()
    finally:
        if pieces and not pieces[-1].endswith("\n"):
            out.write("\n")
            out.flush()
    return "".join(pieces)
