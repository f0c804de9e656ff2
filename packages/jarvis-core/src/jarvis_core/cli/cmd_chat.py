"""``jarvis chat``: a conversation over stdin, one question per line, one engine for the whole session.

The engine (and, for the embedded default, its llama.cpp server) is started once and reused for every
line. Answers stream to stdout, each ending with a newline. On a terminal a ``>`` prompt is shown on stderr.

Lines starting with ``/`` are commands: ``/reset`` forgets the conversation, ``/exit`` or ``/quit`` ends the
session (so does end of input). An engine error for one question is reported on one line and the session
goes on; Ctrl-C while an answer streams stops that answer, Ctrl-C at the prompt ends the session. SIGTERM
and SIGHUP always end the session (exit 143 / 129), after the same clean-up.

Every exchange is kept in the conversation log, in one conversation per session (``--no-log`` and the other
off switches as for ``jarvis ask``); ``-c`` / ``--cid ID`` continue a logged conversation: its exchanges
are the session's history and the new ones are added to it. ``/reset`` starts a new logged conversation.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, List

__all__ = ["add_parser", "run"]


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``chat`` to the ``jarvis`` parser."""
    from jarvis_core.cli.answer_log import add_log_arguments
    from jarvis_core.cli.cmd_ask import add_engine_arguments

    p: argparse.ArgumentParser = subparsers.add_parser(
        "chat",
        help="answer questions read from stdin, one per line, with one engine",
        description="Read questions from stdin, one per line, and stream each answer to stdout. One engine "
        "serves the whole session. Commands: /reset, /exit.",
    )
    p.add_argument("--fresh", action="store_true", help="answer each line on its own (keep no conversation)")
    add_engine_arguments(p)
    add_log_arguments(p)
    return p


def run(args: argparse.Namespace) -> int:
    """Run the session; the engine is closed (a managed server stopped) on every path."""
    from jarvis_core.cli import output
    from jarvis_core.cli.answer_log import AnswerLog
    from jarvis_core.cli.cmd_ask import close_quietly, connect_first, jarvis_from_args, request_options, stream_answer
    from jarvis_core.cli.signals import Terminated
    from jarvis_core.config import load_config
    from jarvis_core.errors import EngineError
    from jarvis_core.types import Message

    interactive = sys.stdin.isatty()
    config = load_config()
    log = AnswerLog(args, config)
    jarvis = jarvis_from_args(args, config=config)
    history: List[Message] = [Message(m["role"], m["content"]) for m in log.history]
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
                log.conversation_id = None
                continue
            question = Message.user(text)
            prompt = [question] if args.fresh else [*history, question]
            log.start()
            try:
                answer = stream_answer(jarvis, prompt, request_options(args), on_event=log.on_event)
            except Terminated:
                raise  # SIGTERM / SIGHUP end the session (exit 143 / 129), not just the answer
            except KeyboardInterrupt:
                output.announce("answer interrupted")
                continue
            except EngineError as exc:
                output.print_error(exc, debug=args.debug)
                continue
            if args.fresh:
                log.conversation_id = None  # each line its own conversation, as it was answered
            else:
                history.extend([question, Message.assistant(answer)])
            log.record(jarvis, text, answer)
    finally:
        close_quietly(jarvis)
        log.close()


def _read_line(interactive: bool) -> Any:
    """The next line of input, or ``None`` at end of input. Ctrl-C here ends the session (exit 130)."""
    if interactive:
        sys.stderr.write("> ")
        sys.stderr.flush()
    line = sys.stdin.readline()
    return line if line else None
