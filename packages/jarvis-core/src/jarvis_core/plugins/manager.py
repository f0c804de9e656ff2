"""Building the plugin manager: entry-point discovery with per-plugin fault isolation.

One factory, :func:`make_plugin_manager`, and no import-time side effects. The core's own built-ins are
entry points of the ``jarvis-core`` distribution, so they load (and can be switched off) exactly like
third-party plugins.

Environment switches (read by the factory when the matching argument is ``None``):

``JARVIS_LOAD_PLUGINS``
    Comma-separated allow-list of plugin (entry-point) names or distribution names. Set but empty: load
    no plugins at all.
``JARVIS_DISABLE_PLUGINS``
    Comma-separated block-list, same names. Applies to built-ins too.
``JARVIS_STRICT_PLUGINS=1``
    A plugin that fails to load raises :class:`~jarvis_core.errors.PluginLoadError` instead of warning.
``JARVIS_PREFER_PLUGINS``
    Comma-separated plugin or distribution names that win a key two plugins registered (read only when
    there is such a clash; the config file's ``[plugins] prefer`` list is the persistent form).

Loading is isolated per entry point: an exception *or* ``sys.exit()`` at import skips that plugin with one
warning (``KeyboardInterrupt`` still stops the command), and a plugin that takes longer than
:data:`SLOW_IMPORT_S` to import is named in a warning, since every ``jarvis`` command pays for it.
"""

from __future__ import annotations

import os
import re
import sys
import time
import warnings
from importlib.metadata import EntryPoint, entry_points
from typing import Any, Dict, Iterable, List, Optional, Tuple

import pluggy

from jarvis_core import hookspecs
from jarvis_core.errors import PluginLoadError
from jarvis_core.switches import env_flag

__all__ = ["JarvisPluginManager", "PluginFailure", "PluginLoadWarning", "PluginWarning", "make_plugin_manager"]

GROUP = hookspecs.PROJECT
#: An import slower than this (seconds) is named in a warning.
SLOW_IMPORT_S = 1.0
# ``name [extras] (specifier) ; marker`` of a Requires-Dist line: the name, then the specifier.
_REQUIREMENT = re.compile(r"([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[[^\]]*\])?\s*([^;]*)")
_HOOKS = frozenset(name for name in dir(hookspecs) if name.startswith("jarvis_"))


class PluginWarning(UserWarning):
    """A plugin does something that is probably a mistake (it still loads)."""


class PluginLoadWarning(PluginWarning):
    """A plugin failed to load and was skipped (everything else keeps working)."""


class PluginFailure:
    """A plugin that failed to load: which, from where, and why."""

    __slots__ = ("distribution", "error", "plugin", "version")

    def __init__(self, plugin: str, distribution: str, version: str, error: str) -> None:
        self.plugin, self.distribution, self.version, self.error = plugin, distribution, version, error

    def to_json(self) -> Dict[str, str]:
        return {"plugin": self.plugin, "distribution": self.distribution, "version": self.version, "error": self.error}


class JarvisPluginManager(pluggy.PluginManager):
    """A pluggy manager that remembers each plugin's distribution and the plugins that failed."""

    def __init__(self) -> None:
        super().__init__(GROUP)
        self.add_hookspecs(hookspecs)
        self._dists: Dict[str, Tuple[str, str]] = {}
        self.failures: List[PluginFailure] = []
        self.skipped: List[str] = []
        self._installed: Dict[str, Any] = {}
        #: Names that win clashes (``None``: not read yet; see :meth:`preferred_plugins`).
        self.prefer: Optional[List[str]] = None
        #: distribution -> the jarvis-core version range its ``Requires-Dist`` declares (when it declares one).
        self.core_requirements: Dict[str, str] = {}
        #: Re-raise plugin failures instead of warning (set by :func:`make_plugin_manager`).
        self.strict = False

    def plugin_failed(
        self, name: str, exc: BaseException, *, distribution: str = "", version: str = "", context: str = ""
    ) -> None:
        """Record that plugin ``name`` failed (to import or to register): one warning naming its distribution,
        version and error (``context`` says where, e.g. which hook), or :class:`PluginLoadError` in strict mode."""
        if not distribution:
            distribution, version = self.distribution_of(name)
        version = version or "?"
        if isinstance(exc, SystemExit):
            error = f"SystemExit: the plugin called sys.exit({exc.code!r})"
        elif isinstance(exc, PluginLoadError) and exc.__cause__ is None:
            error = str(exc)
        else:
            error = f"{type(exc).__name__}: {exc}"
        if context:
            error = f"{error} ({context})"
        if self.strict:
            raise PluginLoadError(f"plugin {name!r} from {distribution} {version} failed to load: {error}",
                                  plugin=name, distribution=distribution) from exc
        self.failures.append(PluginFailure(name, distribution, version, error))
        self.warn(
            f"jarvis plugin {name!r} from {distribution} {version} failed to load and was skipped: {error} "
            f"(disable it with JARVIS_DISABLE_PLUGINS={name}, or pip uninstall {distribution})",
            PluginLoadWarning,
        )

    def warn(self, message: str, category: type = PluginWarning) -> None:
        """Tell the user about a plugin problem (one line under the ``jarvis`` command)."""
        warnings.warn(message, category, stacklevel=3)

    def register_plugin(
        self, plugin: Any, name: str, *, distribution: str = "", version: str = "", installed_at: float = 0.0
    ) -> None:
        """Register ``plugin`` under ``name`` and record its distribution (for provenance)."""
        self.register(plugin, name=name)
        self._dists[name] = (distribution or name, version or "")
        # In-process plugins count as installed "now": they are the newest arrivals of a clash.
        self._installed[name] = installed_at or float("inf")

    def installed_at(self, name: str) -> float:
        """When plugin ``name``'s distribution was installed (its metadata's mtime; ``inf`` if unknown)."""
        value = self._installed.get(name, float("inf"))
        if callable(value):
            value = self._installed[name] = value()
        return float(value)

    def preferred_plugins(self) -> List[str]:
        """Plugin or distribution names that win a clash: ``JARVIS_PREFER_PLUGINS``, else the config file's
        ``[plugins] prefer``. Read only when two plugins claim the same key."""
        if self.prefer is None:
            env = _split(os.environ.get("JARVIS_PREFER_PLUGINS"))
            self.prefer = env if env is not None else _config_preference()
        return self.prefer

    def distribution_of(self, name: str) -> Tuple[str, str]:
        """``(distribution, version)`` of a registered plugin; in-process plugins report their own name."""
        return self._dists.get(name, (name, ""))


def _split(value: Optional[str]) -> Optional[List[str]]:
    if value is None:
        return None
    return [v.strip() for v in value.split(",") if v.strip()]


def _selected(names: Iterable[str], allow: Optional[List[str]], block: List[str]) -> bool:
    names = list(names)
    if any(n in block for n in names):
        return False
    return allow is None or any(n in allow for n in names)


def _config_preference() -> List[str]:
    """``[plugins] prefer`` from the config file, read without the config machinery (which needs the
    registry being built). A file that cannot be read is left to the config loader to report."""
    from jarvis_core.config.paths import config_path

    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib
    try:
        with open(config_path(), "rb") as fh:
            prefer = tomllib.load(fh).get("plugins", {}).get("prefer", [])
    except (OSError, ValueError, AttributeError):
        return []
    return [str(p) for p in prefer] if isinstance(prefer, list) else []


def _edit_distance(a: str, b: str) -> int:
    row = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        prev, row[0] = row[0], i
        for j, cb in enumerate(b, 1):
            prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, prev + (ca != cb))
    return row[-1]


def _near_hook(name: str) -> List[str]:
    """The hook ``name`` is a likely misspelling of (within two edits), if any."""
    scored = sorted((_edit_distance(name, hook), hook) for hook in _HOOKS)
    return [scored[0][1]] if scored and scored[0][0] <= 2 else []


def _hook_problems(pm: JarvisPluginManager, plugin: Any) -> Tuple[List[str], List[str]]:
    """``(errors, warnings)`` about the plugin's ``jarvis_*`` functions: a marked hook this core does not
    define is an error (the plugin is skipped); an unmarked function that looks like a hook is a warning."""
    errors: List[str] = []
    hints: List[str] = []
    for name in dir(plugin):
        if not name.startswith("jarvis_") or not callable(getattr(plugin, name, None)):
            continue
        marked = pm.parse_hookimpl_opts(plugin, name) is not None
        if name in _HOOKS:
            if not marked:
                hints.append(f"defines {name} without @hookimpl, so it is never called (from jarvis_core import hookimpl)")
            continue
        # Only names that are not hooks need the (quadratic) near-miss search; every jarvis command pays
        # for this loop, and a correctly named hook is the common case.
        guess = _near_hook(name)
        if marked:
            # Every hook so far exists since 0.1, so an unknown name is a mistake, not a plugin written for a
            # newer core; once a release adds hooks, a table of them by version can say "needs jarvis-core X".
            near = f"; did you mean {guess[0]}?" if guess else ""
            errors.append(f"implements {name}, which is not a jarvis hook{near}")
        elif guess:
            hints.append(f"defines {name}, which is not a jarvis hook; did you mean {guess[0]} (with @hookimpl)?")
    return errors, hints


def _dist_info(ep: EntryPoint, cache: Dict[int, Tuple[str, str, str]]) -> Tuple[str, str, str]:
    """``(name, version, jarvis-core requirement)`` of the entry point's distribution; parsing metadata is
    the costly part of a scan, so each distribution is read once."""
    dist = getattr(ep, "dist", None)
    if dist is None:
        return ("?", "?", "")
    info = cache.get(id(dist))
    if info is None:
        info = cache[id(dist)] = _name_version(dist)
    return info


def _core_requirement(requires: Iterable[str]) -> str:
    """The version range of the ``Requires-Dist`` on jarvis-core among ``requires`` (``""``: none declared)."""
    for req in requires:
        match = _REQUIREMENT.match(req.strip())
        if match and match.group(1).lower().replace("_", "-").replace(".", "-") == "jarvis-core":
            return match.group(2).strip().strip("()").strip() or "*"
    return ""


def _name_version(dist: Any) -> Tuple[str, str, str]:
    """``Name``, ``Version`` and the jarvis-core ``Requires-Dist`` from the metadata file's header lines; the
    full ``dist.metadata`` (an email parse, and the import of the email parser) only when Name and Version
    are not there as plain lines."""
    text = dist.read_text("METADATA") or dist.read_text("PKG-INFO") or ""
    found: Dict[str, str] = {}
    requires: List[str] = []
    for line in text.splitlines():
        if not line:
            break  # the end of the headers: the description follows
        key, sep, value = line.partition(":")
        if sep and key in ("Name", "Version") and key not in found:
            found[key] = value.strip()
        elif sep and key == "Requires-Dist" and "jarvis" in value.lower():
            requires.append(value)
    if len(found) == 2:
        return found["Name"], found["Version"], _core_requirement(requires)
    meta = dist.metadata
    return meta["Name"], meta["Version"], _core_requirement(meta.get_all("Requires-Dist") or ())


def make_plugin_manager(
    *,
    load_entrypoints: bool = True,
    allow: Optional[Iterable[str]] = None,
    block: Optional[Iterable[str]] = None,
    strict: Optional[bool] = None,
    plugins: Iterable[Tuple[str, Any]] = (),
) -> JarvisPluginManager:
    """Build a plugin manager and load the plugins.

    :param load_entrypoints: scan the ``jarvis`` entry-point group (built-ins included).
    :param allow: plugin or distribution names to load; ``None`` reads ``JARVIS_LOAD_PLUGINS`` (unset: all).
    :param block: names not to load; ``None`` reads ``JARVIS_DISABLE_PLUGINS``.
    :param strict: re-raise load failures; ``None`` reads ``JARVIS_STRICT_PLUGINS``.
    :param plugins: extra in-process ``(name, plugin)`` pairs, registered after the entry points.
    """
    env = os.environ
    allow_l = list(allow) if allow is not None else _split(env.get("JARVIS_LOAD_PLUGINS"))
    block_l = list(block) if block is not None else (_split(env.get("JARVIS_DISABLE_PLUGINS")) or [])
    if strict is None:
        strict = env_flag("JARVIS_STRICT_PLUGINS", env)

    pm = JarvisPluginManager()
    pm.strict = strict
    if load_entrypoints:
        # Deterministic order: the core's built-ins first, then by distribution and entry-point name.
        cache: Dict[int, Tuple[str, str, str]] = {}
        found = [(ep, _dist_info(ep, cache)) for ep in entry_points(group=GROUP)]
        found.sort(key=lambda item: (item[1][0] != "jarvis-core", item[1][0], item[0].name))
        for ep, (dist_name, version, core) in found:
            if core:
                pm.core_requirements[dist_name] = core
            if _load_entry_point(pm, ep, dist_name, version, allow_l, block_l):
                pm._installed[ep.name] = lambda ep=ep: _installed_time(ep)
    for name, plugin in plugins:
        pm.register_plugin(plugin, name)
    return pm


def _load_entry_point(
    pm: JarvisPluginManager, ep: EntryPoint, dist_name: str, version: str,
    allow: Optional[List[str]], block: List[str],
) -> bool:
    """Load one entry point; ``True`` when it was registered."""
    if not _selected((ep.name, dist_name), allow, block):
        pm.skipped.append(ep.name)
        return False
    if pm.has_plugin(ep.name):
        return False  # the same distribution is visible twice on sys.path
    whose = f"jarvis plugin {ep.name!r} from {dist_name} {version}"
    try:
        started = time.perf_counter()
        plugin = ep.load()
        took = time.perf_counter() - started
        if took > SLOW_IMPORT_S:
            pm.warn(
                f"{whose} took {took:.1f} s to import, and every jarvis command pays for it (a plugin module "
                f"should import only jarvis_core.hookimpl; disable it with JARVIS_DISABLE_PLUGINS={ep.name})"
            )
        errors, hints = _hook_problems(pm, plugin)
        if errors:
            raise PluginLoadError("; ".join(errors))
        for hint in hints:
            pm.warn(f"{whose} {hint}")
        pm.register_plugin(plugin, ep.name, distribution=dist_name, version=version)
        if not hints and not pm.get_hookcallers(plugin):
            pm.warn(f"{whose} implements no jarvis hook (mark each hook function with @hookimpl); it does nothing")
        return True
    except (Exception, SystemExit) as exc:  # not KeyboardInterrupt: Ctrl-C during a slow import still stops
        pm.plugin_failed(ep.name, exc, distribution=dist_name, version=version)
        return False


def _installed_time(ep: EntryPoint) -> float:
    path = getattr(getattr(ep, "dist", None), "_path", None)
    try:
        return os.stat(path).st_mtime if path is not None else float("inf")
    except OSError:
        return float("inf")
