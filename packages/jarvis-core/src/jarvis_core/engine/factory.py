"""Building engines by registry key."""

from __future__ import annotations

import inspect
import warnings
from typing import Any

from jarvis_core.engine.base import InferenceEngine
from jarvis_core.errors import InvalidOptionError, UnknownNameError

__all__ = ["create_engine", "engine_class", "left_out_plugins"]


def left_out_plugins() -> str:
    """A note naming the installed plugins that ``JARVIS_LOAD_PLUGINS`` / ``JARVIS_DISABLE_PLUGINS`` left out
    (empty when none were): "unknown engine" then says why an installed engine is missing."""
    from jarvis_core.plugins.registry import get_registry

    skipped = sorted(set(getattr(get_registry().pm, "skipped", ()) or ()))
    if not skipped:
        return ""
    return (f"; {len(skipped)} installed plugin(s) were left out by JARVIS_LOAD_PLUGINS / JARVIS_DISABLE_PLUGINS: "
            f"{', '.join(skipped)}")


def engine_class(key: str) -> type:
    """The engine class registered under ``key`` (imports it); unknown keys list the available ones."""
    from jarvis_core.plugins.registry import get_registry

    try:
        registration = get_registry().get("engine", key)
    except UnknownNameError as exc:
        note = left_out_plugins()
        if note:
            exc.args = (f"{exc.args[0]}{note}",)
        raise
    cls = registration.load()
    if not (isinstance(cls, type) and issubclass(cls, InferenceEngine)):
        raise registration.error(
            f"is registered as {registration.target_name()!r}, which is not a subclass of "
            "jarvis_core.engine.InferenceEngine"
        )
    return cls


def create_engine(key: str, **options: Any) -> InferenceEngine:
    """Build the engine registered as ``key``.

    Common options: ``host=`` / ``base_url=``, ``api_key=``, ``timeout=`` (where the engine has them);
    an option the engine's constructor does not take raises :class:`InvalidOptionError` naming it, except
    ``model_defaults=`` (the user's ``[model_defaults]`` rules), which is dropped with a warning for engines
    that do not resolve backend defaults.
    """
    from jarvis_core.plugins.registry import get_registry

    cls = engine_class(key)
    params = inspect.signature(cls).parameters
    takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
    if "model_defaults" in options and not takes_any and "model_defaults" not in params:
        # User rules are advice for engines that resolve backend defaults; one that does not is told, not broken.
        options.pop("model_defaults")
        warnings.warn(f"engine {key!r} does not apply [model_defaults] rules from the config; they are ignored for it",
                      RuntimeWarning, stacklevel=2)
    if not takes_any:
        accepted = [n for n, p in params.items() if n != "self" and p.kind is not inspect.Parameter.VAR_POSITIONAL]
        unknown = [k for k in options if k not in accepted]
        if unknown:
            raise InvalidOptionError(key, unknown, accepted)
    # The constructor is plugin code: anything but jarvis' typed errors is reported naming the plugin.
    engine: InferenceEngine = get_registry().get("engine", key).build(**options)
    return engine
