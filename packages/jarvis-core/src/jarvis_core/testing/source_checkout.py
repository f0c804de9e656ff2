"""The plugin under test, registered from its source checkout, next to the installed plugins.

A plugin's own tests usually run before the plugin is installed (``pytest`` in a fresh clone). Building a
registry from the plugin module alone (:func:`~jarvis_core.testing.registry_with`) leaves out the core's
built-in parsers and defaults, so a model family whose defaults name ``hermes`` finds no parser. Here the
registry holds every installed plugin *and* the one under test, read from the project's ``pyproject.toml``
exactly as an install would declare it (``[project.entry-points.jarvis]``)::

    from jarvis_core.testing import source_plugin

    def test_my_defaults_resolve():
        with source_plugin("path/to/my-plugin") as registry:
            assert jarvis_core.defaults.resolve("acme-7b").tool_parser == "acme"

With pytest, the ``jarvis_source_plugin`` fixture of :mod:`jarvis_core.testing.pytest_plugin` does the same.
"""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path
from typing import Any, ContextManager, Dict, List, Tuple, Union

from jarvis_core.errors import PluginError
from jarvis_core.plugins.manager import make_plugin_manager
from jarvis_core.plugins.registry import Registry
from jarvis_core.testing.plugins import installed

__all__ = ["source_plugin", "source_registry"]

PathLike = Union[str, "os.PathLike[str]"]


def _project(path: PathLike) -> Tuple[Path, Dict[str, Any]]:
    start = Path(path).resolve()
    for folder in (start, *start.parents):
        candidate = folder / "pyproject.toml"
        if candidate.is_file():
            break
    else:
        raise PluginError(f"no pyproject.toml in {start} or any folder above it; pass your plugin project's folder")
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib
    try:
        data = tomllib.loads(candidate.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise PluginError(f"cannot read {candidate}: {exc}") from exc
    return candidate.parent, data


def _source_plugins(path: PathLike) -> Tuple[str, str, List[Tuple[str, Any]]]:
    root, data = _project(path)
    project = data.get("project") or {}
    dist, version = str(project.get("name", root.name)), str(project.get("version", "0+source"))
    eps = (project.get("entry-points") or {}).get("jarvis") or {}
    if not eps:
        raise PluginError(
            f"{root / 'pyproject.toml'} declares no [project.entry-points.jarvis] table, so jarvis would never "
            'find this plugin; add one: [project.entry-points.jarvis] my-plugin = "my_package.plugin"'
        )
    folder = root / "src" if (root / "src").is_dir() else root
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))
    plugins: List[Tuple[str, Any]] = []
    for name, target in eps.items():
        module_name, _, attr = str(target).partition(":")
        try:
            obj: Any = importlib.import_module(module_name.strip())
            for part in filter(None, attr.strip().split(".")):
                obj = getattr(obj, part)
        except Exception as exc:
            raise PluginError(
                f"entry point {name!r} of {dist} names {target!r}, which does not import from {root}: "
                f"{type(exc).__name__}: {exc}"
            ) from exc
        plugins.append((str(name), obj))
    return dist, version, plugins


def source_registry(path: PathLike, **options: Any) -> Registry:
    """A registry with the installed plugins (built-ins included) plus the plugin whose project is at
    ``path`` (a folder holding ``pyproject.toml``, or one below it), loaded from source.

    An installed copy of the same plugin is left out, so the source wins. ``options`` go to
    :func:`~jarvis_core.plugins.make_plugin_manager` (``strict`` defaults to on, so a broken install fails
    the test instead of warning). Raises :class:`PluginError` saying what is missing when the project cannot
    be read or its plugin module does not import.
    """
    dist, version, plugins = _source_plugins(path)
    names = [name for name, _ in plugins]
    options.setdefault("strict", True)
    options["block"] = [*(options.get("block") or []), *names, dist]
    pm = make_plugin_manager(**options)
    for name, plugin in plugins:
        pm.register_plugin(plugin, name, distribution=dist, version=version)
    return Registry(pm)


def source_plugin(path: PathLike, **options: Any) -> ContextManager[Registry]:
    """Install :func:`source_registry` as the process-wide registry for the ``with`` block, then put the
    previous one back."""
    return installed(source_registry(path, **options))
