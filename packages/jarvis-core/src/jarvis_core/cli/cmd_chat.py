"""``jarvis chat``: a conversation over stdin, one question per line, one engine for the whole session.

The engine (and, for the embedded default, its llama.cpp server) is started once and reused for every
line. Answers stream to stdout, each ending with a newline. On a terminal a ``>`` prompt is shown on stderr.

Lines starting with ``/`` are commands: ``/reset`` forgets the conversation, ``/exit`` or ``/quit`` ends the
session (so does end of input). An engine error for one question is reported on one line and the session
goes on; Ctrl-C while an answer streams stops that answer, Ctrl-C at the prompt ends the session. SIGTERM
and SIGHUP always end the session (exit 143 / 129), after the same clean-up.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, List

__all__ = ["add_parser", "run"]


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``chat`` to the ``jarvis`` parser."""
    from jarvis_core.cli.cmd_ask import add_engine_arguments

    p: argparse.ArgumentParser = subparsers.add_parser(
        "chat",
        help="answer questions read from stdin, one per line, with one engine",
        description="Read questions from stdin, one per line, and stream each answer to stdout. One engine "
        "serves the whole session. Commands: /reset, /exit.",
    )
    p.add_argument("--fresh", action="store_true", help="answer each line on its own (keep no conversation)")
    add_engine_arguments(p)
    return p


def run(args: argparse.Namespace) -> int:
    """Run the session; the engine is closed (a managed server stopped) on every path."""
    from jarvis_core.cli import output
    from jarvis_core.cli.cmd_ask import close_quietly, connect_first, jarvis_from_args, request_options, stream_answer
    from jarvis_core.cli.signals import Terminated
    from jarvis_core.errors import EngineError
    from jarvis_core.types import Message

    interactive = sys.stdin.isatty()
    jarvis = jarvis_from_args(args)
    history: List[Message] = []
    try:
        jarvis.check_names()
        connect_first(jarvis)  # the engine and model announced before the first question
        while True:
            line = _read_line(interactive)
            if line is None:
                return 0
            text = line.strip()
            if not text:
                continue
            if text in ("/exit", "/quit"):
                return 0
            if text == "/reset":
                history.clear()
                continue
            question = Message.user(text)
            prompt = [question] if args.fresh else [*history, question]
            try:
                answer = stream_answer(jarvis, prompt, request_options(args))
            except Terminated:
                raise  # SIGTERM / SIGHUP end the session (exit 143 / 129), not just the answer
            except KeyboardInterrupt:
                output.announce("answer interrupted")
                continue
            except EngineError as exc:
                output.print_error(exc, debug=args.debug)
                continue
            if not args.fresh:
                history.extend([question, Message.assistant(answer)])
    finally:
        close_quietly(jarvis)


def _read_line(interactive: bool) -> Any:
    """The next line of input, or ``None`` at end of input. Ctrl-C here ends the session (exit 130)."""
    if interactive:
        sys.stderr.write("> ")
        sys.stderr.flush()
    line = sys.stdin.readline()
    return line if line else None
