"""``jarvis engines``: each configured or installed engine, its address and whether it answers, as JSON.

Output shape (health checks run in parallel: the command takes about one health timeout)::

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
import json
from typing import Any

__all__ = ["add_parser", "run"]


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``engines`` to the ``jarvis`` parser."""
    p = subparsers.add_parser(
        "engines",
        help="list configured engines and their health",
        description="Health-check the configured and installed engines in parallel and print, as JSON, each "
        "one's address and whether it answers.",
    )
    p.add_argument("keys", nargs="*", metavar="ENGINE", help="only these engines (default: configured + installed)")
    p.add_argument("--timeout", type=float, metavar="S", help="health timeout per engine in seconds (default: each engine's)")
    p.add_argument("--indent", type=int, default=2, help="JSON indentation (0: one line)")
    return p


def run(args: argparse.Namespace) -> int:
    """Run ``jarvis engines``."""
    from jarvis_core.config import load_config
    from jarvis_core.discovery import probe_engines
    from jarvis_core.errors import JarvisError, UnknownNameError
    from jarvis_core.plugins.registry import get_registry

    if args.timeout is not None and args.timeout <= 0:
        raise JarvisError("--timeout must be a positive number of seconds")
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
    print(json.dumps(doc, indent=args.indent or None))
    return 0
