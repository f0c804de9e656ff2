"""``jarvis embed TEXT…``: the embeddings of texts, from the engine ``jarvis ask`` would use.

The texts are the arguments (each one text), or stdin's lines (one text per non-empty line) when there are
none or the only one is ``-``. By default one line per text: its dimensions and the first values; ``--json``
prints OpenAI's ``/v1/embeddings`` document (``--encoding-format base64`` for the compact form). The engine
is picked as for ``jarvis ask`` (``--engine``, ``--host``, ``--model``); one without embeddings is an error
that names it.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, List

from jarvis_core.commands import add_json_options, wants_json, write_json

__all__ = ["add_parser", "run"]


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``embed`` to the ``jarvis`` parser."""
    from jarvis_core.cli.arg_types import positive_int

    p: argparse.ArgumentParser = subparsers.add_parser(
        "embed",
        help="print the embeddings of texts",
        description="Print the embeddings of texts (each argument is one text; none or '-': one per stdin line).",
    )
    p.add_argument("texts", nargs="*", metavar="TEXT", help="the texts ('-' or none: stdin, one per line)")
    p.add_argument("--engine", metavar="NAME", help="engine key; default: config, then discovery, then embedded")
    p.add_argument("--host", metavar="URL", help="address of the engine's server")
    p.add_argument("--model", metavar="ID", help="embedding model id; default: the engine's model")
    p.add_argument("--dimensions", type=positive_int, metavar="N", help="shorter vectors, where the model takes it")
    p.add_argument("--encoding-format", choices=("float", "base64"), default="float",
                   help="--json vectors as float lists (default) or base64 float32")
    add_json_options(p)
    return p


def _texts(args: argparse.Namespace) -> List[str]:
    from jarvis_core.cli.arg_types import repair_text
    from jarvis_core.errors import UsageError

    if args.texts in ([], ["-"]):
        if not args.texts and sys.stdin.isatty():
            raise UsageError('no text given: jarvis embed "some text" (or pipe lines on stdin)', argument="TEXT")
        texts = [line.strip() for line in sys.stdin.read().splitlines() if line.strip()]
    else:
        texts = list(args.texts)
    if not texts:
        raise UsageError("there is nothing to embed", argument="TEXT")
    return [repair_text(t, what="the text") for t in texts]


def run(args: argparse.Namespace) -> int:
    """Run ``jarvis embed``."""
    from jarvis_core.cli import output
    from jarvis_core.cli.cmd_ask import close_quietly
    from jarvis_core.config import load_config
    from jarvis_core.embeddings import result_to_openai
    from jarvis_core.sdk import Jarvis

    texts = _texts(args)
    jarvis = Jarvis(load_config(), engine=args.engine, host=args.host, model=args.model, announce=output.announce)
    try:
        options = {"dimensions": args.dimensions} if args.dimensions else {}
        result = jarvis.embed(texts, **options)
    finally:
        close_quietly(jarvis)
    if wants_json(args):
        write_json(result_to_openai(result, encoding_format=args.encoding_format), args)
        return 0
    for text, item in zip(texts, result.embeddings, strict=True):
        head = ", ".join(f"{x:.4f}" for x in item.vector[:4])
        label = output.one_line(text)
        sys.stdout.write(f"{label[:40]!s:<40}  {len(item.vector)} dims  [{head}, …]\n")
    return 0
