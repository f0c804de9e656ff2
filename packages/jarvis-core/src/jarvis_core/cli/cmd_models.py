"""``jarvis models``: the models each reachable engine offers.

By default a table, one row per model (engine, model id); ``--json`` prints the document, for scripts::

    {"models": {"ollama": ["qwen3:8b", "llama3.2:3b"]},
     "errors": {"vllm": "vllm: timed out talking to http://gpu:8000/v1/models ..."}}

Without ``--engine`` every engine that answers a health check is asked (in parallel); an engine that
answers the health check but fails to list its models appears under ``errors`` (and as a warning line on
stderr, in both forms). With ``--engine`` only that engine is asked, and its failure is the command's error.
Exit status 1 when no engine could list its models. The config's aliases (``[aliases]``) follow, in a table
of their own (``"aliases"`` in the JSON document, when there are any).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, Dict, List, Mapping

from jarvis_core.commands import add_json_options, format_table, wants_json, write_json

__all__ = ["add_parser", "render", "run"]


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``models`` to the ``jarvis`` parser."""
    p: argparse.ArgumentParser = subparsers.add_parser(
        "models",
        help="list the models each reachable engine offers",
        description="List the models each reachable engine offers (or only --engine's): a table, or JSON "
        "with --json.",
    )
    p.add_argument("--engine", metavar="NAME", help="only this engine (default: every engine that answers)")
    p.add_argument("--host", metavar="URL", help="address of --engine's server")
    p.add_argument("--timeout", type=float, default=15.0, metavar="S", help="seconds to wait for the lists (default 15)")
    add_json_options(p)
    return p


def run(args: argparse.Namespace) -> int:
    """Run ``jarvis models``."""
    from jarvis_core.cli.output import one_line
    from jarvis_core.config import load_config
    from jarvis_core.discovery import discover_engines, discover_models, get_engine
    from jarvis_core.errors import EngineConnectionError, UsageError

    if args.timeout <= 0:
        raise UsageError("--timeout must be a positive number of seconds", argument="--timeout")
    if args.host and not args.engine:
        raise UsageError("--host needs --engine too: which kind of server runs there? (e.g. --engine ollama)",
                         argument="--host")
    config = load_config(getattr(args, "config", None))

    if args.engine:
        with get_engine(config, args.engine, host=args.host) as engine:
            models = engine.list_models()
        _print({"models": {args.engine: list(models)}, "errors": {}}, args, config.aliases)
        return 0

    engines = discover_engines(config)
    if not engines:
        raise EngineConnectionError(
            "no engine is reachable; see 'jarvis engines' for each one's address and error, start a server, "
            "or point jarvis at one with [engine.NAME] host in the config"
        )
    try:
        listing = discover_models(engines, timeout=args.timeout)
    finally:
        for _, engine in engines:
            engine.close()
    errors: Dict[str, str] = {key: one_line(str(exc)) or type(exc).__name__ for key, exc in listing.errors.items()}
    for key, message in errors.items():
        # Engine errors usually start with the engine's key already: do not say it twice.
        said = message if message.startswith(f"{key}: ") else f"{key}: {message}"
        print(f"jarvis: warning: {said}", file=sys.stderr)
    _print({"models": dict(listing), "errors": errors}, args, config.aliases)
    return 0 if listing else 1


def _print(doc: Dict[str, Any], args: argparse.Namespace, aliases: Mapping[str, Any]) -> None:
    if aliases:
        doc["aliases"] = {name: alias.to_dict() for name, alias in aliases.items()}
    if wants_json(args):
        write_json(doc, args)
        return
    sys.stdout.write(render(doc["models"]) + "\n")
    if aliases:
        rows = [[name, alias.model, alias.engine or "-"] for name, alias in aliases.items()]
        sys.stdout.write("\n" + format_table(["ALIAS", "MODEL", "ENGINE"], rows) + "\n")


def render(models: Mapping[str, List[str]]) -> str:
    """The ``jarvis models`` table: a row per model, engine first; an engine that offers none says so."""
    rows = [[engine, model] for engine, ids in models.items() for model in (ids or ["(no models)"])]
    return format_table(["ENGINE", "MODEL"], rows) if rows else "no engine listed any models"
