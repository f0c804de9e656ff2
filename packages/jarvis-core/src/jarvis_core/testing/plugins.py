"""In-process plugins for tests: build a registry from plugin objects, install it for one test.

A plugin is any object (a module, a class, an instance) holding functions decorated with
:data:`jarvis_core.hookimpl`, exactly as an installed distribution's plugin module would. For one-liners,
:func:`simple_plugin` builds such an object from keyword tables::

    from jarvis_core.testing import installed_registry, simple_plugin

    def test_my_engine_is_found():
        with installed_registry(simple_plugin("echo", engines={"echo": "my_pkg.engine:EchoEngine"})):
            engine = jarvis_core.create_engine("echo")

With pytest, the ``jarvis_plugins`` fixture of :mod:`jarvis_core.testing.pytest_plugin` does the same
and restores the previous registry at teardown.
"""

from __future__ import annotations

import contextlib
from typing import Any, ContextManager, Iterable, Iterator, Mapping, Optional, Sequence, Tuple, Union

from jarvis_core.hookspecs import hookimpl
from jarvis_core.plugins import registry as _registry_mod
from jarvis_core.plugins.manager import make_plugin_manager
from jarvis_core.plugins.registry import Registry, reset_registry

__all__ = ["PluginSpec", "installed", "installed_registry", "registry_with", "simple_plugin"]

#: A plugin object, or a ``(name, plugin)`` pair naming it.
PluginSpec = Union[Any, Tuple[str, Any]]


def _named(plugins: Iterable[PluginSpec]) -> list[Any]:
    out = []
    for i, p in enumerate(plugins):
        if isinstance(p, tuple) and len(p) == 2 and isinstance(p[0], str):
            out.append(p)
        else:
            name = getattr(p, "jarvis_plugin_name", None) or getattr(p, "__name__", None) or f"test-plugin-{i}"
            out.append((str(name), p))
    return out


def registry_with(
    *plugins: PluginSpec,
    load_entrypoints: bool = False,
    allow: Optional[Iterable[str]] = None,
    block: Optional[Iterable[str]] = None,
    strict: Optional[bool] = True,
) -> Registry:
    """A fresh :class:`~jarvis_core.plugins.registry.Registry` built from these in-process plugins.

    :param load_entrypoints: also load the installed plugins (the core's built-ins included). Off by
        default, so a test sees exactly the plugins it names.
    :param allow: / :param block: as :func:`~jarvis_core.plugins.make_plugin_manager` (entry points only).
    :param strict: re-raise entry-point load failures (default: on, so a broken install fails the test).
    """
    pm = make_plugin_manager(
        load_entrypoints=load_entrypoints,
        allow=allow if allow is not None else (None if load_entrypoints else []),
        block=block if block is not None else [],
        strict=strict,
        plugins=_named(plugins),
    )
    return Registry(pm)


@contextlib.contextmanager
def installed(registry: Registry) -> Iterator[Registry]:
    """Make ``registry`` the process-wide registry for the ``with`` block, then put the previous one back
    (so tests never leak plugins into each other)."""
    previous = _registry_mod._registry
    reset_registry(registry)
    try:
        yield registry
    finally:
        reset_registry(previous)


def installed_registry(*plugins: PluginSpec, **options: Any) -> ContextManager[Registry]:
    """Install :func:`registry_with` ``(*plugins, **options)`` as the process-wide registry for the
    ``with`` block, then put the previous one back."""
    return installed(registry_with(*plugins, **options))


def simple_plugin(
    name: str,
    *,
    engines: Optional[Mapping[str, Any]] = None,
    agents: Optional[Mapping[str, Any]] = None,
    tools: Optional[Mapping[str, Any]] = None,
    prompt_providers: Optional[Mapping[str, Any]] = None,
    config_sections: Optional[Mapping[str, Any]] = None,
    parsers: Optional[Sequence[Tuple[str, Any, str]]] = None,
    defaults: Optional[Sequence[Tuple[str, Mapping[str, Any]]]] = None,
) -> Any:
    """A plugin object registering the given tables: ``{key: target}`` for the name-keyed kinds,
    ``[(name, target, kind)]`` for parsers and ``[(pattern, fields)]`` for backend defaults.

    Only the hooks for the tables given are implemented, like a real plugin that implements only some.
    """
    namespace: dict[str, Any] = {"jarvis_plugin_name": name}

    def table_hook(hook: str, table: Mapping[str, Any]) -> None:
        def impl(register: Any) -> None:
            for key, target in table.items():
                register(key, target)

        impl.__name__ = hook
        namespace[hook] = staticmethod(hookimpl(impl))

    for hook, table in (
        ("jarvis_register_engines", engines),
        ("jarvis_register_agents", agents),
        ("jarvis_register_tools", tools),
        ("jarvis_register_prompt_providers", prompt_providers),
        ("jarvis_register_config_sections", config_sections),
    ):
        if table is not None:
            table_hook(hook, table)
    if parsers is not None:

        def jarvis_register_parsers(register: Any) -> None:
            for pname, target, kind in parsers:
                register(pname, target, kind=kind)

        namespace["jarvis_register_parsers"] = staticmethod(hookimpl(jarvis_register_parsers))
    if defaults is not None:

        def jarvis_backend_defaults(register: Any) -> None:
            for pattern, fields in defaults:
                register(pattern, **fields)

        namespace["jarvis_backend_defaults"] = staticmethod(hookimpl(jarvis_backend_defaults))
    return type(f"Plugin_{name}", (), namespace)()
