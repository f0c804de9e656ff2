"""Plugin loading and the registry. See :mod:`jarvis_core.hookspecs` for the hooks themselves."""

from jarvis_core.plugins.manager import (
    JarvisPluginManager,
    PluginFailure,
    PluginLoadWarning,
    PluginWarning,
    make_plugin_manager,
)
from jarvis_core.plugins.registry import Registration, Registry, get_registry, load_target, reset_registry

__all__ = [
    "JarvisPluginManager",
    "PluginFailure",
    "PluginLoadWarning",
    "PluginWarning",
    "Registration",
    "Registry",
    "get_registry",
    "load_target",
    "make_plugin_manager",
    "reset_registry",
]
