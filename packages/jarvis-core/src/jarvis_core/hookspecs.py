"""The jarvis hook specifications: everything a plugin can implement.

A plugin is a module (named by an entry point in the group ``jarvis``) holding functions decorated with
``jarvis_core.hookimpl``. Registration hooks receive a ``register`` callback built by the core: the core
records which distribution registered what, owns name clashes (a duplicate key is a
:class:`~jarvis_core.errors.DuplicateRegistrationError` naming both distributions), and keeps targets lazy.

A *target* is either a ``"package.module:attribute"`` string, imported only when the item is used, or the
object itself (a class or a cheap factory). Prefer strings: ``jarvis plugins`` and ``jarvis engines`` must
not import httpx-heavy modules or SDKs.

Example plugin (a complete distribution needs only this module and an entry point)::

    # jarvis_engine_echo/plugin.py
    from jarvis_core import hookimpl

    @hookimpl
    def jarvis_register_engines(register):
        register("echo", "jarvis_engine_echo.engine:EchoEngine", description="Repeats the prompt")

    # pyproject.toml
    # [project.entry-points.jarvis]
    # engine-echo = "jarvis_engine_echo.plugin"

Hooks evolve only by gaining arguments; pluggy passes an implementation only the arguments it names, so
old plugins keep working. Never give a hookimpl parameter a default value: pluggy will not pass it.

Each hook's ``register`` callback is typed by a protocol of :mod:`jarvis_core.plugins.registry`
(:class:`~jarvis_core.plugins.registry.Register`, :class:`~jarvis_core.plugins.registry.ParserRegister`,
:class:`~jarvis_core.plugins.registry.DefaultsRegister`), and each target's contract is a class or protocol
importable from the core, named in the hook's docstring. A hook must call ``register``; a returned value is
ignored with a warning. What happens when a plugin gets something wrong (at load time or when its target is
first used) is described in ``docs/plugins.md``; the whole contract is ``docs/contract.md``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pluggy

if TYPE_CHECKING:
    from jarvis_core.plugins.registry import (
        DefaultsRegister,
        ParserRegister,
        Register,
    )

__all__ = ["hookimpl", "hookspec", "PROJECT"]

#: The pluggy project name; also the entry-point group.
PROJECT = "jarvis"

hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


@hookspec
def jarvis_register_engines(register: Register) -> None:
    """Register inference engines.

    :param register: ``register(key, target, *, description="", **extra)``
        (:class:`~jarvis_core.plugins.registry.Register`). ``target`` names a subclass of
        :class:`jarvis_core.engine.InferenceEngine` (HTTP engines: of :class:`jarvis_core.engine.http.HTTPEngine`);
        it is built with the engine's options (``host``/``base_url``, ``api_key``, ``timeout``, the user's
        ``[engine.<key>]`` table, …) by :func:`jarvis_core.create_engine`. ``discoverable=False`` keeps it out
        of automatic discovery.

    .. versionadded:: 0.1
    """


@hookspec
def jarvis_register_agents(register: Register) -> None:
    """Register agents.

    :param register: ``register(key, target, *, description="", **extra)``
        (:class:`~jarvis_core.plugins.registry.Register`). ``target`` names a subclass of
        :class:`jarvis_core.agents.BaseAgent`: ``Agent(engine, model=..., tools=..., **options).run(input, context)``
        returns a :class:`jarvis_core.types.AgentResult`.

    .. versionadded:: 0.1
    """


@hookspec
def jarvis_register_tools(register: Register) -> None:
    """Register tools that agents may call.

    :param register: ``register(key, target, *, description="", **extra)``
        (:class:`~jarvis_core.plugins.registry.Register`). ``target`` names an implementation of the
        :class:`jarvis_core.tools.Tool` protocol (a class or a no-argument factory, or an instance): ``spec`` (a
        :class:`jarvis_core.types.ToolSpec`) and ``run(**arguments) -> str``. A tool without ``spec`` is a
        :class:`~jarvis_core.errors.PluginError` naming the plugin when it is first used.

    .. versionadded:: 0.1
    """


@hookspec
def jarvis_discover_tools(register: Register) -> None:
    """Register tools that are known only by asking something costly (starting an MCP server for its
    listing, a network call). The registry calls it at most once per process, and only when every tool is
    wanted (``jarvis tools``) or a tool key is not registered up front (``jarvis ask --tools NAME``); never
    for ``jarvis plugins``, ``jarvis --help`` or a command that names only registered tools.

    :param register: as :func:`jarvis_register_tools`'s: ``target`` names an implementation of
        :class:`jarvis_core.tools.Tool` or a factory of one. A key the same plugin registered up front is
        replaced (the discovered registration is the fuller one); a key of another plugin is a clash as usual.
        The hook reports what it could not discover itself (a warning), rather than raising: a hook that
        raises is reported as a failed plugin, and what it registered up front stays.

    .. versionadded:: 0.2
    """


@hookspec
def jarvis_register_prompt_providers(register: Register) -> None:
    """Register prompt providers, found by case-insensitive name.

    :param register: ``register(key, target, *, description="", **extra)``
        (:class:`~jarvis_core.plugins.registry.Register`). ``target`` names an implementation of
        :class:`jarvis_core.prompts.PromptProvider` (system prompt, response format and parsing for a model
        family; see ``docs/prompts.md``).

    .. versionadded:: 0.1
    """


@hookspec
def jarvis_register_parsers(register: ParserRegister) -> None:
    """Register tool-call and reasoning parsers for models that emit them as raw text.

    :param register: ``register(name, target, *, kind, aliases=(), description="", **extra)``
        (:class:`~jarvis_core.plugins.registry.ParserRegister`) where ``kind`` is ``"tool"`` or
        ``"reasoning"``. ``target`` names a subclass of :class:`jarvis_core.parsers.ToolParser` or
        :class:`jarvis_core.parsers.ReasoningParser` (implement ``_feed(delta)`` and ``_finish()``, each
        returning a list of :class:`jarvis_core.parsers.base.ParsedDelta`); the base classes give ``parse``,
        ``feed``, ``finish`` and ``result``. A target without ``parse`` is a
        :class:`~jarvis_core.errors.PluginError` naming the plugin when it is first used.

    .. versionadded:: 0.1
    """


@hookspec
def jarvis_backend_defaults(register: DefaultsRegister) -> None:
    """Contribute per-model-family defaults: parsers and sampling values (``docs/backend-defaults.md``).

    :param register: ``register(pattern, *, backends=("*",), tool_parser=None, reasoning_parser=None,
        sampling=None, extras=None)`` (:class:`~jarvis_core.plugins.registry.DefaultsRegister`). A parser name
        that no installed plugin registers is warned about when the registry is built. ``pattern`` is matched
        against normalized model ids, longest pattern first across every plugin (ties by registration order).
        ``backends`` lists engine keys the rule applies to: ``"*"`` every backend, ``""`` only when the backend
        is unknown. ``sampling`` maps ``temperature``, ``top_p``, ``top_k``, ``min_p``, ``repeat_penalty``,
        ``presence_penalty`` to values. ``compute="module:function"`` makes a rule computed by code: the
        function gets a :class:`jarvis_core.defaults.ModelInfo` (id, backend, local file) and returns a
        :class:`jarvis_core.defaults.Computed` (other ids of the model, and values) or None; ``pattern="*"``
        asks it about every model (:mod:`jarvis_core.defaults.hooks`).

    .. versionadded:: 0.1
    """


@hookspec
def jarvis_register_config_sections(register: Register) -> None:
    """Contribute the schema of a config sub-table, so the user's config is checked against it.

    :param register: ``register(section, target)`` (:class:`~jarvis_core.plugins.registry.Register`), e.g.
        ``register("engine.ollama", "jarvis_engine_ollama.config:OllamaConfig")`` or ``register("acme",
        "jarvis_tools_acme.config:AcmeConfig")``. ``target`` names an attrs class (``@attrs.frozen``, fields
        with defaults), whose instances are :class:`jarvis_core.config.ConfigSection`; the section's keys are
        structured into it (unknown keys and wrong types are errors naming file, key and line).
        ``engine.<key>`` tables become the engine's constructor options; any other section is read back as
        ``load_config().plugin_sections["acme"]``. The class is imported only when the user's config has
        that section.

    .. versionadded:: 0.1
    """


@hookspec
def jarvis_register_commands(register: Register) -> None:
    """Add a ``jarvis`` subcommand (e.g. ``jarvis serve`` from jarvis-server) without the core importing it.

    :param register: ``register(name, target, *, description="")``
        (:class:`~jarvis_core.plugins.registry.Register`). ``target`` names a module (or any object)
        satisfying :class:`jarvis_core.commands.CommandModule`: ``add_parser(subparsers)``, which adds the
        command's ``argparse`` parser, and ``run(args) -> int``, which runs it and returns the exit status.
        ``description`` is the one-line summary ``jarvis --help`` shows; the target is imported only when its
        command runs. A built-in command's name cannot be taken.

    .. versionadded:: 0.1
    """
