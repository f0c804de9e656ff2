"""Building a registered tool: :func:`create_tool`."""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, Any, Dict, Mapping, Optional, Union

from jarvis_core.errors import ConfigError

if TYPE_CHECKING:
    from jarvis_core.config.schema import JarvisConfig
    from jarvis_core.plugins.registry import Registry

__all__ = ["RUNTIME_OBJECTS", "create_tool", "section_of"]

#: Objects a tool factory may ask for by naming them in its signature (or all at once, typed: ``context``).
RUNTIME_OBJECTS = ("engine", "model", "home", "bus")
#: The parameter through which a tool factory takes a :class:`~jarvis_core.tools.context.ToolContext`.
CONTEXT = "context"


def section_of(config: Union[JarvisConfig, Mapping[str, Any], None], kind: str, key: str) -> Dict[str, Any]:
    """The user's ``[<kind>.<key>]`` table (``kind`` is ``tools`` or ``agents``) as a dict.

    ``config`` may be a :class:`~jarvis_core.config.JarvisConfig`, the section itself (a mapping), or
    ``None`` (no options).
    """
    if config is None:
        return {}
    if isinstance(config, Mapping):
        return dict(config)
    tables = getattr(config, kind, None) or {}
    return dict(tables.get(key) or {})


def _accepted(factory: Any) -> Optional[set[Any]]:
    """The keyword names ``factory`` accepts (``None``: it takes ``**kwargs``, so anything)."""
    try:
        sig = inspect.signature(factory)
    except (TypeError, ValueError):
        return None
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in sig.parameters.values()):
        return None
    return {name for name, p in sig.parameters.items()
            if p.kind in (inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)}


def create_tool(
    key: str,
    *,
    config: Union[JarvisConfig, Mapping[str, Any], None] = None,
    registry: Optional[Registry] = None,
    **runtime: Any,
) -> Any:
    """Build the tool registered as ``key``.

    The registered target (a class or a factory) is called with the options from the user's
    ``[tools.<key>]`` section, plus the ``runtime`` objects (``engine``, ``model``, ``home``, ``bus``): all
    of them as one :class:`~jarvis_core.tools.context.ToolContext` when its signature has a ``context``
    parameter, else those whose names it accepts (all of them when it takes ``**kwargs``). A config option
    the target does not accept is a :class:`~jarvis_core.errors.ConfigError` naming it.

    :raises UnknownNameError: no tool of that name (the message lists the installed ones).
    :raises InvalidToolError: the target failed to build, or what it built has no ``spec`` or neither
        ``run`` nor ``arun``; the message names the key, the plugin and its distribution.
    """
    if registry is None:
        from jarvis_core.plugins.registry import get_registry

        registry = get_registry()
    reg = registry.get("tool", key)
    target = reg.load()
    options = section_of(config, "tools", key)
    accepted = _accepted(target)
    if accepted is not None:
        unknown = sorted(k for k in options if k not in accepted)
        if unknown:
            allowed = ", ".join(sorted(k for k in accepted if k not in (*RUNTIME_OBJECTS, CONTEXT))) or "none"
            raise ConfigError(f"tool {key!r} has no option(s) {', '.join(map(repr, unknown))}; allowed: {allowed}",
                              key=f"tools.{key}.{unknown[0]}")
    if CONTEXT in options:
        raise ConfigError(f"tool {key!r}: {CONTEXT!r} is given by jarvis, not set in the config",
                          key=f"tools.{key}.{CONTEXT}")
    if accepted is not None and CONTEXT in accepted:
        from jarvis_core.tools.context import ToolContext

        context = ToolContext(**{k: v for k, v in runtime.items() if k in RUNTIME_OBJECTS})
        extra: Dict[str, Any] = {CONTEXT: context}
    else:
        extra = {k: v for k, v in runtime.items() if v is not None and (accepted is None or k in accepted)}
    return reg.instance(**options, **extra)
