"""``jarvis plugins``: every loaded plugin, its distribution, version and what it registered.

By default a table, one row per plugin (name, distribution, version, what it registers, summarised), then
the plugins that failed to load, the keys two plugins claim (clashes) and the plugins switched off. With
``--json`` (or ``--indent N``) the whole document, for scripts::

    {
      "core_version": "0.2.0",
      "plugins": [
        {"name": "engine-ollama", "distribution": "jarvis-engine-ollama", "version": "0.2.0",
         "core_requirement": ">=0.2,<1", "core_compatible": true,
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

``core_requirement`` is the jarvis-core range the plugin's distribution declares in its ``Requires-Dist``
(``""``: none) and ``core_compatible`` whether this core is in it (``null``: nothing to check); a plugin
outside its range is a warning, and the table lists every declared range under its own heading.
``failures`` lists plugins that failed to load (each also printed as one warning line); ``skipped`` lists
plugins left out by ``JARVIS_LOAD_PLUGINS`` / ``JARVIS_DISABLE_PLUGINS``.

Budget: this command imports only the standard library and :mod:`jarvis_core.plugins` (no attrs, httpx,
config, or ``packaging`` unless a plugin declares an unusual jarvis-core range), table or JSON, so it costs about as much as pluggy plus an entry-point scan. Keep it that way.
"""

from __future__ import annotations

import argparse
import re
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from jarvis_core.commands import add_json_options, cell, format_table, write_result

__all__ = ["add_parser", "collect", "render", "run", "summarise"]

SUMMARY = "list installed plugins and what they registered (table; --json)"

#: Kinds whose name does not read as a noun (the others: ``prompt_provider`` -> ``prompt provider(s)``).
_KIND_WORDS = {"backend_defaults": ("backend-default rule", "backend-default rules")}
#: Keys named in a summary before the rest are counted only.
_KEYS_SHOWN = 3


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``plugins`` to the ``jarvis`` parser."""
    p: argparse.ArgumentParser = subparsers.add_parser(
        "plugins",
        help=SUMMARY,
        description="List each loaded plugin: its distribution, version and what it registered; then the "
        "plugins that failed to load, the keys two plugins claim and the plugins switched off. --json adds "
        "each plugin's module, hooks and every registration with its target.",
    )
    p.add_argument("--hook", metavar="HOOK", help="only plugins implementing HOOK (e.g. jarvis_register_engines)")
    add_json_options(p)
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
        # A callable extra (jarvis-agents' isolation) is computed by jarvis agents/tools, not by this cheap listing.
        info = {k: v for k, v in reg.to_json().items() if not callable(v)}
        registered.setdefault(reg.plugin, {}).setdefault(reg.kind, []).append(info)
    for pattern, _fields, plugin, _dist, _version in registry.default_rules:
        registered.setdefault(plugin, {}).setdefault("backend_defaults", []).append(pattern)

    failed = {f.plugin for f in pm.failures}
    plugins = []
    for name, plugin in pm.list_name_plugin():
        if plugin is None or name in failed:  # blocked, or a hook raised: listed under failures only
            continue
        hooks = sorted(h.name for h in (pm.get_hookcallers(plugin) or ()))
        if hook and hook not in hooks:
            continue
        dist, version = pm.distribution_of(name)
        core = pm.core_requirements.get(dist, "")
        plugins.append(
            {
                "name": name,
                "distribution": dist,
                "version": version,
                # The jarvis-core range its distribution declares ("" when none), and whether this core is in it.
                "core_requirement": core,
                "core_compatible": core_compatible(core, __version__),
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
        ] + [
            # A plugin command with a built-in command's name: the built-in wins, the plugin's is ignored.
            {"kind": "command", "key": reg.key, "builtin": True,
             "by": [{"plugin": reg.plugin, "distribution": reg.distribution, "version": reg.version},
                    {"plugin": "(built-in)", "distribution": "jarvis-core", "version": __version__}]}
            for reg in getattr(registry, "builtin_clashes", [])
        ],
    }


_SIMPLE_CLAUSE = re.compile(r"(>=|<=|==|!=|<|>)\s*(\d+(?:\.\d+)*)")


def core_compatible(requirement: str, core_version: str) -> Optional[bool]:
    """Whether ``core_version`` is in the declared ``requirement`` (``None``: none declared, or unreadable).

    Plain ranges of release numbers (``>=0.2,<1``, what every plugin declares) are compared here; anything
    else goes to ``packaging``'s specifiers, whose import costs ``jarvis plugins`` a noticeable share."""
    if not requirement:
        return None
    clauses = [c.strip() for c in requirement.split(",") if c.strip() and c.strip() != "*"]
    simple = [_SIMPLE_CLAUSE.fullmatch(c) for c in clauses]
    if re.fullmatch(r"\d+(?:\.\d+)*", core_version) and all(simple):
        have = _release(core_version)
        return all(_OPS[m.group(1)](have, _release(m.group(2))) for m in simple if m is not None)
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    try:
        return SpecifierSet(",".join(clauses)).contains(core_version, prereleases=True)
    except InvalidSpecifier:
        return None


def _release(text: str) -> Tuple[int, ...]:
    parts = [int(p) for p in text.split(".")]
    while len(parts) > 1 and parts[-1] == 0:  # 1.0 == 1
        parts.pop()
    return tuple(parts)


_OPS: Dict[str, Callable[[Tuple[int, ...], Tuple[int, ...]], bool]] = {
    ">=": lambda a, b: a >= b, "<=": lambda a, b: a <= b, "==": lambda a, b: a == b,
    "!=": lambda a, b: a != b, "<": lambda a, b: a < b, ">": lambda a, b: a > b,
}


def run(args: argparse.Namespace) -> int:
    """Print the plugin listing. A broken plugin, a key two plugins registered, or a plugin declaring a
    jarvis-core range this core is outside of is a warning (exit 0)."""
    import warnings

    from jarvis_core.plugins import PluginWarning, get_registry

    doc = collect(get_registry(), hook=args.hook or "")
    for p in _outside(doc):
        warnings.warn(
            f"plugin {p['name']!r} ({p['distribution']} {p['version']}) declares jarvis-core{p['core_requirement']}, "
            f"and this is jarvis-core {doc['core_version']}: it may use names this core does not have; install a "
            f"version of {p['distribution']} made for jarvis-core {doc['core_version']}",
            PluginWarning, stacklevel=2,
        )
    write_result(doc, args, lambda d: render(d, hook=args.hook or ""))
    return 0


def render(doc: Dict[str, Any], *, hook: str = "") -> str:
    """The ``jarvis plugins`` table for a :func:`collect` document: a row per plugin, then failures, clashes
    and switched-off plugins, each under its own heading."""
    clashing: Dict[str, List[str]] = {}
    ignored: Dict[str, List[str]] = {}
    for c in doc["clashes"]:
        for by in c["by"]:
            (ignored if c.get("builtin") else clashing).setdefault(by["plugin"], []).append(
                f"{c['kind'].replace('_', ' ')} {c['key']}")
    rows = []
    for p in doc["plugins"]:
        registers = summarise(p["registered"])
        if p["name"] in clashing:
            clash = "clashing (unusable): " + ", ".join(clashing[p["name"]])
            registers = clash if registers == "nothing" else f"{registers}; {clash}"
        if p["name"] in ignored:
            shadowed = "ignored (a built-in's name): " + ", ".join(ignored[p["name"]])
            registers = shadowed if registers == "nothing" else f"{registers}; {shadowed}"
        rows.append([p["name"], p["distribution"], p["version"] or "-", registers])
    if rows:
        out = [format_table(["PLUGIN", "DISTRIBUTION", "VERSION", "REGISTERS"], rows)]
    else:
        out = [f"no loaded plugin implements {hook}" if hook else "no plugins loaded"]
    failures = doc["failures"]
    if failures:
        out += ["", f"failed to load, not used ({len(failures)}):",
                _indented(["PLUGIN", "DISTRIBUTION", "VERSION", "ERROR"],
                          [[f["plugin"], f["distribution"], f["version"] or "-", cell(f["error"])] for f in failures])]
    builtin = [c for c in doc["clashes"] if c.get("builtin")]
    if builtin:
        out += ["", f"take a built-in command's name, ignored ({len(builtin)}):",
                _indented(["KIND", "KEY", "REGISTERED BY"],
                          [[c["kind"], c["key"], _owner(c["by"][0])] for c in builtin])]
    clashes = [c for c in doc["clashes"] if not c.get("builtin")]
    if clashes:
        out += ["", f"registered twice, unusable until one is removed or [plugins] prefer picks one ({len(clashes)}):",
                _indented(["KIND", "KEY", "REGISTERED BY"],
                          [[c["kind"].replace("_", " "), c["key"], ", ".join(_owner(b) for b in c["by"])]
                           for c in clashes])]
    declared = {(p["distribution"], p["core_requirement"]): p for p in doc["plugins"] if p["core_requirement"]}
    if declared:
        out += ["", f"jarvis-core versions the distributions declare (this is {doc['core_version']}):",
                _indented(["DISTRIBUTION", "REQUIRES", "COMPATIBLE"],
                          [[dist, req, {True: "yes", False: "NO", None: "?"}[p["core_compatible"]]]
                           for (dist, req), p in sorted(declared.items())])]
    if doc["skipped"]:
        out += ["", "switched off by JARVIS_LOAD_PLUGINS / JARVIS_DISABLE_PLUGINS: " + ", ".join(doc["skipped"])]
    out += ["", f"jarvis-core {doc['core_version']}; 'jarvis plugins --json' adds hooks, modules and every target"]
    return "\n".join(out)


def _outside(doc: Dict[str, Any]) -> List[Dict[str, Any]]:
    seen, out = set(), []
    for p in doc["plugins"]:
        if p["core_compatible"] is False and p["distribution"] not in seen:
            seen.add(p["distribution"])
            out.append(p)
    return out


def summarise(registered: Dict[str, List[Any]]) -> str:
    """What a plugin registered, one phrase per kind: ``1 engine: ollama; 26 parsers: hermes, granite4, ...``."""
    parts = []
    for kind, items in registered.items():
        one, several = _KIND_WORDS.get(kind, (kind.replace("_", " "), kind.replace("_", " ") + "s"))
        keys = [item["key"] if isinstance(item, dict) else str(item) for item in items]
        shown = ", ".join(keys[:_KEYS_SHOWN]) + (", ..." if len(keys) > _KEYS_SHOWN else "")
        parts.append(f"{len(keys)} {one if len(keys) == 1 else several}: {shown}")
    return "; ".join(parts) or "nothing"


def _owner(by: Dict[str, str]) -> str:
    return f"{by['plugin']} ({by['distribution']} {by['version']})".replace(" )", ")")


def _indented(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    return "\n".join("  " + line for line in format_table(headers, rows).splitlines())
