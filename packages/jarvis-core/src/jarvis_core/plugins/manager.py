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
"""

from __future__ import annotations

import os
import warnings
from importlib.metadata import EntryPoint, entry_points
from typing import Any, Dict, Iterable, List, Optional, Tuple

import pluggy

from jarvis_core import hookspecs
from jarvis_core.errors import PluginLoadError

__all__ = ["JarvisPluginManager", "PluginLoadWarning", "PluginFailure", "make_plugin_manager"]

GROUP = hookspecs.PROJECT


class PluginLoadWarning(UserWarning):
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
        #: Re-raise plugin failures instead of warning (set by :func:`make_plugin_manager`).
        self.strict = False

    def plugin_failed(self, name: str, exc: Exception, *, distribution: str = "", version: str = "") -> None:
        """Record that plugin ``name`` failed (to import or to register): one warning naming its distribution,
        version and error, or :class:`PluginLoadError` in strict mode."""
        if not distribution:
            distribution, version = self.distribution_of(name)
        version = version or "?"
        if self.strict:
            if isinstance(exc, PluginLoadError):
                raise exc
            raise PluginLoadError(f"plugin {name!r} from {distribution} {version} failed to load: {exc!r}") from exc
        error = f"{type(exc).__name__}: {exc}"
        self.failures.append(PluginFailure(name, distribution, version, error))
        warnings.warn(
            f"jarvis plugin {name!r} from {distribution} {version} failed to load and was skipped: {error} "
            f"(disable it with JARVIS_DISABLE_PLUGINS={name}, or pip uninstall {distribution})",
            PluginLoadWarning,
            stacklevel=3,
        )

    def register_plugin(self, plugin: Any, name: str, *, distribution: str = "", version: str = "") -> None:
        """Register ``plugin`` under ``name`` and record its distribution (for provenance)."""
        self.register(plugin, name=name)
        self._dists[name] = (distribution or name, version or "")

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


def _unknown_hooks(plugin: Any) -> List[str]:
    known = {name for name in dir(hookspecs) if name.startswith("jarvis_")}
    return [n for n in dir(plugin) if n.startswith("jarvis_") and callable(getattr(plugin, n)) and n not in known]


def _dist_info(ep: EntryPoint, cache: Dict[int, Tuple[str, str]]) -> Tuple[str, str]:
    """``(name, version)`` of the entry point's distribution; parsing metadata is the costly part of a scan,
    so each distribution is read once."""
    dist = getattr(ep, "dist", None)
    if dist is None:
        return ("?", "?")
    info = cache.get(id(dist))
    if info is None:
        meta = dist.metadata
        info = cache[id(dist)] = (meta["Name"], meta["Version"])
    return info


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
        strict = env.get("JARVIS_STRICT_PLUGINS", "").strip().lower() in ("1", "true", "yes", "on")

    pm = JarvisPluginManager()
    pm.strict = strict
    if load_entrypoints:
        # Deterministic order: the core's built-ins first, then by distribution and entry-point name.
        cache: Dict[int, Tuple[str, str]] = {}
        found = [(ep, _dist_info(ep, cache)) for ep in entry_points(group=GROUP)]
        found.sort(key=lambda item: (item[1][0] != "jarvis-core", item[1][0], item[0].name))
        for ep, (dist_name, version) in found:
            _load_entry_point(pm, ep, dist_name, version, allow_l, block_l)
    for name, plugin in plugins:
        pm.register_plugin(plugin, name)
    return pm


def _load_entry_point(
    pm: JarvisPluginManager, ep: EntryPoint, dist_name: str, version: str,
    allow: Optional[List[str]], block: List[str],
) -> None:
    if not _selected((ep.name, dist_name), allow, block):
        pm.skipped.append(ep.name)
        return
    if pm.has_plugin(ep.name):
        return  # the same distribution is visible twice on sys.path
    try:
        plugin = ep.load()
        unknown = _unknown_hooks(plugin)
        if unknown:
            raise PluginLoadError(f"implements unknown hook(s) {', '.join(unknown)} (newer plugin than core?)")
        pm.register_plugin(plugin, ep.name, distribution=dist_name, version=version)
    except Exception as exc:
        pm.plugin_failed(ep.name, exc, distribution=dist_name, version=version)
