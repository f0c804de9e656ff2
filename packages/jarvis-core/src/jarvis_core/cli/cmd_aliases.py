"""``jarvis aliases``: list, set and remove the model aliases of the config file (``[aliases]``).

::

    jarvis aliases list [--json]
    jarvis aliases set fast qwen3:0.6b
    jarvis aliases set smart qwen3:32b --engine ollama --option temperature=0.2 --option top_p=0.9
    jarvis aliases remove fast

An option's value is read as TOML (``0.2``, ``true``, ``"text"``, ``[1, 2]``), else taken as a string.
``set`` and ``remove`` edit the config file in place (``jarvis config path``), creating it when needed.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, Dict, List

__all__ = ["add_parser", "run"]


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``aliases`` to the ``jarvis`` parser."""
    p: argparse.ArgumentParser = subparsers.add_parser(
        "aliases", help="list, set and remove model aliases ([aliases] in the config)",
        description="Model aliases: a name for a model, optionally with an engine and request options. An alias "
        "is accepted wherever a model is named (--model, the SDK, jarvis serve's model field).",
    )
    p.add_argument("action", choices=("list", "set", "remove"), nargs="?", default="list")
    p.add_argument("name", nargs="?", metavar="NAME", help="the alias (set, remove)")
    p.add_argument("model", nargs="?", metavar="MODEL", help="the model it names (set)")
    p.add_argument("--engine", metavar="KEY", help="the engine it uses (set; default: whichever is in use)")
    p.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                   help="a request option it sets, e.g. temperature=0.2 (set; repeatable)")
    p.add_argument("--json", action="store_true", help="print the aliases as JSON (list)")
    return p


def _option(text: str) -> Any:
    from jarvis_core.config.toml_source import parse_toml
    from jarvis_core.errors import ConfigError, UsageError

    key, sep, raw = text.partition("=")
    if not sep or not key.strip():
        raise UsageError(f"--option wants KEY=VALUE, got {text!r}", argument="--option")
    try:
        value = parse_toml(f"v = {raw.strip()}", path=None).data["v"]
    except ConfigError:
        value = raw.strip()
    return key.strip(), value


def run(args: argparse.Namespace) -> int:
    """List, set or remove aliases."""
    import json

    from jarvis_core.aliases import ModelAlias
    from jarvis_core.commands import format_table
    from jarvis_core.config import config_path, load_config
    from jarvis_core.config.alias_edit import remove_alias, set_alias
    from jarvis_core.errors import UsageError

    if args.action == "list":
        aliases = load_config().aliases
        if args.json:
            sys.stdout.write(json.dumps({n: a.to_dict() for n, a in aliases.items()}, indent=2) + "\n")
        elif not aliases:
            sys.stderr.write("no aliases (add one: jarvis aliases set NAME MODEL)\n")
        else:
            rows: List[List[str]] = [[n, a.model, a.engine or "-", _options_text(a.options)]
                                     for n, a in aliases.items()]
            sys.stdout.write(format_table(["ALIAS", "MODEL", "ENGINE", "OPTIONS"], rows) + "\n")
        return 0
    if not args.name:
        raise UsageError(f"say which alias: jarvis aliases {args.action} NAME", argument="NAME")
    path = load_config().path or str(config_path())
    from pathlib import Path

    if args.action == "remove":
        remove_alias(Path(path), args.name)
        sys.stderr.write(f"removed alias {args.name} from {path}\n")
        return 0
    if not args.model:
        raise UsageError("say which model: jarvis aliases set NAME MODEL", argument="MODEL")
    options: Dict[str, Any] = dict(_option(o) for o in args.option)
    replaced = set_alias(Path(path), args.name, ModelAlias(model=args.model, engine=args.engine, options=options))
    sys.stderr.write(f"{'updated' if replaced else 'added'} alias {args.name} -> {args.model} in {path}\n")
    return 0


def _options_text(options: Any) -> str:
    import json

    return ", ".join(f"{k}={json.dumps(v)}" for k, v in options.items()) or "-"
