"""``jarvis engines``: each configured or installed engine, its address and whether it answers.

By default a table, one row per engine: key, ``up`` or ``down``, address, and a note (the reason it is down,
or what it is; ``default`` marks the configured default). ``--json`` prints the document, for scripts
(health checks run in parallel: the command takes about one health timeout)::

    {"config": "/home/me/.jarvis/config.toml", "default": "ollama",
     "engines": [
       {"key": "ollama", "healthy": true, "host": "http://localhost:11434", "default": true,
        "configured": true, "error": null, "description": "...", "distribution": "jarvis-engine-ollama"},
       {"key": "vllm", "healthy": false, "host": "http://localhost:8000", ...}
     ]}

Engines registered with ``discoverable=False`` (e.g. ``openai-compat``, ``embedded``) are listed only when
the config has a table for them or they are named on the command line. API keys are never printed.
"""

from __future__ import annotations

import argparse
from typing import Any, Dict

from jarvis_core.commands import add_json_options, cell, format_table, write_result

__all__ = ["add_parser", "render", "run"]


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``engines`` to the ``jarvis`` parser."""
    p: argparse.ArgumentParser = subparsers.add_parser(
        "engines",
        help="list configured engines and their health",
        description="Health-check the configured and installed engines in parallel and print each one's "
        "address and whether it answers (a table; --json for scripts).",
    )
    p.add_argument("keys", nargs="*", metavar="ENGINE", help="only these engines (default: configured + installed)")
    p.add_argument("--timeout", type=float, metavar="S", help="health timeout per engine in seconds (default: each engine's)")
    add_json_options(p)
    return p


def run(args: argparse.Namespace) -> int:
    """Run ``jarvis engines``."""
    from jarvis_core.config import load_config
    from jarvis_core.discovery import probe_engines
    from jarvis_core.errors import UnknownNameError, UsageError
    from jarvis_core.plugins.registry import get_registry

    if args.timeout is not None and args.timeout <= 0:
        raise UsageError("--timeout must be a positive number of seconds", argument="--timeout")
    config = load_config(getattr(args, "config", None))
    installed = get_registry().items("engine")
    for key in args.keys:
        if key not in installed:
            raise UnknownNameError("engine", key, list(installed))
    results = probe_engines(config, keys=args.keys or None, timeout=args.timeout)
    try:
        doc = {
            "config": config.path,
            "default": config.engine.default,
            "engines": [status.to_dict() for status, _ in results],
        }
    finally:
        for _, engine in results:
            if engine is not None:
                engine.close()
    write_result(doc, args, render)
    return 0


def render(doc: Dict[str, Any]) -> str:
    """The ``jarvis engines`` table: key, up/down, address and a note (why it is down, else what it is),
    then where the config is."""
    rows = []
    for e in doc["engines"]:
        note = cell(e["error"]) if e["error"] else (e["description"] or "-")
        if e["host"] and note.endswith(f" at {e['host']}"):  # the HOST column already says where
            note = note[: -len(f" at {e['host']}")]
        rows.append([e["key"], "up" if e["healthy"] else "down", e["host"] or "-",
                     f"default; {note}" if e["default"] else note])
    table = format_table(["ENGINE", "STATUS", "HOST", "NOTE"], rows) if rows else "no engines installed"
    where = f"config: {doc['config']}" if doc["config"] else "no config file ('jarvis config init' writes one)"
    default = f"default engine: {doc['default']}" if doc["default"] else "no default engine set"
    return f"{table}\n\n{where}; {default}"
