"""``jarvis plugins``: every loaded plugin, its distribution, version, hooks and registrations, as JSON.

Output shape::

    {
      "core_version": "0.1.0",
      "plugins": [
        {"name": "engine-ollama", "distribution": "jarvis-engine-ollama", "version": "0.1.0",
         "module": "jarvis_engine_ollama.plugin",
         "hooks": ["jarvis_register_config_sections", "jarvis_register_engines"],
         "registered": {"engine": [{"key": "ollama", "target": "jarvis_engine_ollama.engine:OllamaEngine",
                                    "description": "..."}],
                        "backend_defaults": ["qwen3", "..."]}}
      ],
      "failures": [{"plugin": "...", "distribution": "...", "version": "...", "error": "..."}],
      "skipped": ["..."],
      "clashes": [{"kind": "engine", "key": "twin", "by": [{"plugin": "...", "distribution": "...", "version": "..."}]}]
    }

``failures`` lists plugins that failed to load (each also printed as one warning line); ``skipped`` lists
plugins left out by ``JARVIS_LOAD_PLUGINS`` / ``JARVIS_DISABLE_PLUGINS``.

Budget: this command imports only :mod:`json` and :mod:`jarvis_core.plugins` (no attrs, httpx or config), so
it costs about as much as pluggy plus an entry-point scan. Keep it that way.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, Dict, List

__all__ = ["add_parser", "collect", "run"]


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``plugins`` to the ``jarvis`` parser."""
    p = subparsers.add_parser(
        "plugins",
        help="list installed plugins and what they registered (JSON)",
        description="Print, as JSON, each loaded plugin: its distribution, version, the hooks it implements "
        "and what it registered; plus the plugins that failed to load or were switched off.",
    )
    p.add_argument("--hook", metavar="HOOK", help="only plugins implementing HOOK (e.g. jarvis_register_engines)")
    p.add_argument("--indent", type=int, default=2, help="JSON indentation (0: one line)")
    return p


def collect(registry: Any, *, hook: str = "") -> Dict[str, Any]:
    """The ``jarvis plugins`` document for ``registry`` (a :class:`jarvis_core.plugins.Registry`)."""
    from jarvis_core import __version__, hookspecs
    from jarvis_core.errors import UnknownNameError

    known_hooks = sorted(n for n in dir(hookspecs) if n.startswith("jarvis_"))
    if hook and hook not in known_hooks:
        raise UnknownNameError("hook", hook, known_hooks)

    pm = registry.pm
    registered: Dict[str, Dict[str, List[Any]]] = {}
    for reg in registry:
        registered.setdefault(reg.plugin, {}).setdefault(reg.kind, []).append(reg.to_json())
    for pattern, _fields, plugin, _dist, _version in registry.default_rules:
        registered.setdefault(plugin, {}).setdefault("backend_defaults", []).append(pattern)

    plugins = []
    for name, plugin in pm.list_name_plugin():
        if plugin is None:  # blocked
            continue
        hooks = sorted(h.name for h in (pm.get_hookcallers(plugin) or ()))
        if hook and hook not in hooks:
            continue
        dist, version = pm.distribution_of(name)
        plugins.append(
            {
                "name": name,
                "distribution": dist,
                "version": version,
                "module": getattr(plugin, "__name__", type(plugin).__qualname__),
                "hooks": hooks,
                "registered": registered.get(name, {}),
            }
        )
    return {
        "core_version": __version__,
        "plugins": plugins,
        "failures": [f.to_json() for f in pm.failures],
        "skipped": list(pm.skipped),
        # Keys two plugins registered: unusable until one goes or [plugins] prefer picks one.
        "clashes": [
            {"kind": name.partition(":")[0], "key": name.partition(":")[2],
             "by": [{"plugin": r.plugin, "distribution": r.distribution, "version": r.version} for r in regs]}
            for name, regs in getattr(registry, "clashes", {}).items()
        ],
    }


def run(args: argparse.Namespace) -> int:
    """Print the plugin listing. A broken plugin or a key two plugins registered is a warning (exit 0)."""
    from jarvis_core.plugins import get_registry

    doc = collect(get_registry(), hook=args.hook or "")
    indent = args.indent if args.indent and args.indent > 0 else None
    sys.stdout.write(json.dumps(doc, indent=indent, default=repr) + "\n")
    return 0
