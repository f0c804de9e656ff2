"""Config tables owned by plugins (any name a plugin registers, e.g. ``[acme]`` or ``[tools.search]``) and
the core's ``[plugins]`` table (which plugin wins a key two of them registered).

``[engine.<key>]`` tables are handled with the engine settings (see :mod:`jarvis_core.config.loader`); this
module covers every other section registered through ``jarvis_register_config_sections``. A schema class is
imported only when the user's file has its table.
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any, Dict, List, Tuple, Type

from jarvis_core.config.section import ConfigSection, is_config_section_schema
from jarvis_core.config.toml_source import KeyPath, TomlSource
from jarvis_core.config.validation import structure_table
from jarvis_core.errors import PluginError
from jarvis_core.switches import env_flag

if TYPE_CHECKING:
    from jarvis_core.plugins.registry import Registration, Registry

__all__ = ["load_plugin_sections", "plugin_roots", "schema_of"]


def _plugin_sections(reg: Registry) -> Dict[str, Registration]:
    return {name: r for name, r in reg.items("config_section").items() if not name.startswith("engine.")}


def plugin_roots(reg: Registry) -> List[str]:
    """Top-level table names that plugins own (the first part of each registered section name)."""
    return sorted({name.split(".")[0] for name in _plugin_sections(reg)})


def schema_of(registration: Registration, table: str) -> Type[ConfigSection] | Type[dict[str, Any]]:
    """The attrs class a plugin registered for ``[table]`` (see :class:`~jarvis_core.config.section.ConfigSection`).

    A schema that does not import or is not an attrs class is a broken plugin like any other: ``dict`` (the
    table kept as written, unchecked, with one warning naming the plugin), so every command keeps working;
    with ``JARVIS_STRICT_PLUGINS`` set, the :class:`PluginError`."""
    try:
        schema = registration.load()
        if not is_config_section_schema(schema):
            raise registration.error(
                f"is registered as {registration.target_name()!r}, the schema of [{table}], but it is not an attrs "
                "class"
            )
    except PluginError as exc:
        if env_flag("JARVIS_STRICT_PLUGINS"):
            raise
        from jarvis_core.config.loader import ConfigWarning

        # Like a broken plugin at load time: warn and keep going; the table is kept as written, unchecked.
        warnings.warn(f"the schema of [{table}]: {exc}; [{table}] is used unchecked", ConfigWarning, stacklevel=4)
        return dict
    return schema


def load_plugin_sections(src: TomlSource, data: Dict[str, Any], reg: Registry) -> Dict[str, Any]:
    """Structure every plugin-registered table present in ``data``: ``{"acme": AcmeConfig(...), ...}``."""
    out: Dict[str, Any] = {}
    for name, registration in sorted(_plugin_sections(reg).items()):
        path: KeyPath = tuple(name.split("."))
        value, found = _lookup(data, path)
        if not found:
            continue
        schema = schema_of(registration, name)
        out[name] = dict(value) if schema is dict else structure_table(src, value, schema, path)
    return out


def _lookup(data: Dict[str, Any], path: Tuple[str, ...]) -> Tuple[Any, bool]:
    node: Any = data
    for part in path:
        if not isinstance(node, dict) or part not in node:
            return None, False
        node = node[part]
    return node, True

