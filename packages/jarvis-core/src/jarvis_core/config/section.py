"""The contract of a plugin's config section: what a ``jarvis_register_config_sections`` target must be.

A section's schema is an attrs class: ``@attrs.frozen``, every field with a default (a user who leaves the
table out, or a key of it, gets the defaults). The loader structures the user's table into it with a strict
converter, so an unknown key or a wrong type is a :class:`~jarvis_core.errors.ConfigError` naming file, key
and line. A target that is not an attrs class is a :class:`~jarvis_core.errors.PluginError` naming the
plugin. ::

    import attrs

    @attrs.frozen
    class AcmeConfig:
        level: int = 1
        api_key: str = ""   # secrets (api_key, token, *_password, ...) are masked by 'jarvis config show'

Type checkers see the same contract: an attrs class is a ``type[ConfigSection]``.
"""

from __future__ import annotations

from typing import Any, Protocol, Type, TypeGuard

import attrs

__all__ = ["ConfigSection", "is_config_section_schema"]


class ConfigSection(attrs.AttrsInstance, Protocol):
    """An instance of a plugin's config-section schema: an instance of an attrs class.

    ``load_config().plugin_sections["acme"]`` is one of these, and an ``[engine.<key>]`` table becomes the
    keyword options of the engine's constructor through one. The protocol is for type checkers (attrs
    declares its members only in its stubs); at run time, check a class with :func:`is_config_section_schema`.
    """


def is_config_section_schema(obj: Any) -> TypeGuard[Type[ConfigSection]]:
    """Whether ``obj`` can be a config-section schema: a class made with attrs (``attrs.has``)."""
    return isinstance(obj, type) and attrs.has(obj)
