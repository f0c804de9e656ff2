"""Deprecated and removed public names (``docs/contract.md`` §11): the warning, the error, and whose code it is.

A deprecated name keeps working and warns with :class:`~jarvis_core.errors.JarvisDeprecationWarning` naming
the replacement, the version that removes it and the plugin code that used it (its module and
distribution), once per place that uses it. A removed name raises
:class:`~jarvis_core.errors.RemovedAPIError` with the same facts instead of a bare ``AttributeError``.

Modules keep their deprecated names behind :func:`module_getattr`, so the old code is imported only when
a plugin still uses it.
"""

from __future__ import annotations

import importlib
import inspect
import warnings
from typing import Any, Callable, Dict, Mapping, Optional, Tuple

from jarvis_core.errors import JarvisDeprecationWarning, RemovedAPIError

__all__ = ["DEPRECATED_IN", "REMOVED_IN", "deprecated", "module_getattr", "removed", "user_of"]

#: The version that deprecated the names removed while the version still read 0.1.0.
DEPRECATED_IN = "0.2.0"
#: The version that removes every name deprecated during 0.x.
REMOVED_IN = "1.0.0"

_OWN = ("jarvis_core.", "contextlib", "asyncio.", "importlib.", "typing")


def _outside(module: str) -> bool:
    return not (module == "jarvis_core" or module.startswith(_OWN) or module in ("asyncio", "contextlib", "importlib"))


def user_of() -> Tuple[str, int]:
    """``(module, stacklevel)`` of the nearest caller outside jarvis-core (and the standard library's
    context-manager and async plumbing): the code that used a deprecated or removed name."""
    frame = inspect.currentframe()
    level = 0
    try:
        while frame is not None:
            module = str(frame.f_globals.get("__name__", ""))
            if level > 0 and _outside(module):
                return module, level
            frame, level = frame.f_back, level + 1
        return "", 2
    finally:
        del frame


def _whose(module: str) -> str:
    """``used by pkg.mod, from dist 1.0`` (the distribution when the module belongs to an installed one)."""
    if not module:
        return ""
    from importlib import metadata

    top = module.partition(".")[0]
    dists = metadata.packages_distributions().get(top, [])
    if not dists:
        return f" (used by {module})"
    try:
        version = metadata.version(dists[0])
    except metadata.PackageNotFoundError:  # pragma: no cover - a distribution without metadata
        version = ""
    return f" (used by {module}, from {f'{dists[0]} {version}'.strip()})"


def deprecated(name: str, replacement: str, *, since: str = DEPRECATED_IN, removed_in: str = REMOVED_IN) -> None:
    """Warn that ``name`` is deprecated, blaming the caller outside jarvis-core (call it first thing in the
    deprecated function)."""
    module, level = user_of()
    warnings.warn(
        f"{name} is deprecated since jarvis-core {since} and will be removed in {removed_in}; use {replacement} "
        f"instead{_whose(module)}",
        JarvisDeprecationWarning,
        stacklevel=level,
    )


def removed(name: str, replacement: str, *, removed_in: str = DEPRECATED_IN) -> RemovedAPIError:
    """The error for a use of ``name``, which jarvis-core ``removed_in`` removed, blaming the caller."""
    module, _ = user_of()
    top = module.partition(".")[0]
    return RemovedAPIError(
        f"{name} was removed in jarvis-core {removed_in}; use {replacement} instead{_whose(module)}",
        key=name, plugin=top, name=name, removed_in=removed_in, replacement=replacement,
    )


def module_getattr(
    module: str,
    aliases: Mapping[str, Tuple[str, str]],
    gone: Optional[Mapping[str, str]] = None,
) -> Callable[[str], Any]:
    """A module ``__getattr__`` for deprecated and removed names.

    :param aliases: old name -> (``"module:attribute"`` of the code that keeps it working, its replacement).
    :param gone: removed name -> its replacement.
    """
    short = module.rpartition(".")[2]
    cache: Dict[str, Any] = {}

    def __getattr__(name: str) -> Any:
        if name in aliases:
            target, replacement = aliases[name]
            deprecated(f"{module}.{name}", replacement)
            if name not in cache:
                where, _, attr = target.partition(":")
                cache[name] = getattr(importlib.import_module(where), attr)
            return cache[name]
        if gone and name in gone:
            raise removed(f"{short}.{name}", gone[name])
        raise AttributeError(f"module {module!r} has no attribute {name!r}")

    return __getattr__
