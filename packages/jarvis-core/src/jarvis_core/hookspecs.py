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

    :param register: ``register(key, target, *, description="")``. ``target`` names a subclass of
        :class:`jarvis_core.engine.InferenceEngine`; it is built with the engine's options
        (``host``/``base_url``, ``api_key``, ``timeout``, …) by :func:`jarvis_core.create_engine`.

    .. versionadded:: 0.1
    """


@hookspec
def jarvis_register_agents(register: Register) -> None:
    """Register agents.

    :param register: ``register(key, target, *, description="")``. ``target`` names a
        ``BaseAgent`` subclass: ``Agent(engine, model=..., tools=..., **options).run(input, context)``
        returns an :class:`jarvis_core.types.AgentResult`.

    .. versionadded:: 0.1
    """


@hookspec
def jarvis_register_tools(register: Register) -> None:
    """Register tools that agents may call.

    :param register: ``register(key, target, *, description="")``. ``target`` names a tool class or
        factory exposing ``spec`` (a :class:`jarvis_core.types.ToolSpec`) and ``run(**arguments) -> str``.

    .. versionadded:: 0.1
    """


@hookspec
def jarvis_register_prompt_providers(register: Register) -> None:
    """Register prompt providers (``IJarvisPromptProvider``, DESIGN §6), found by case-insensitive name.

    :param register: ``register(key, target, *, description="")``.

    .. versionadded:: 0.1
    """


@hookspec
def jarvis_register_parsers(register: ParserRegister) -> None:
    """Register tool-call and reasoning parsers for models that emit them as raw text.

    :param register: ``register(name, target, *, kind, aliases=(), description="")`` where ``kind`` is
        ``"tool"`` or ``"reasoning"``. A tool parser's ``parse(text, tools=None)`` returns an object with
        ``.content`` and ``.tool_calls``; a reasoning parser's ``parse(text)`` one with ``.content`` and
        ``.reasoning``. Both also parse incrementally (``feed(delta)`` then ``finish()``).

    .. versionadded:: 0.1
    """


@hookspec
def jarvis_backend_defaults(register: DefaultsRegister) -> None:
    """Contribute per-model-family defaults: parsers and sampling values (DESIGN §5).

    :param register: ``register(pattern, *, backends=("*",), tool_parser=None, reasoning_parser=None,
        sampling=None, extras=None)``. ``pattern`` is matched against normalized model ids, longest pattern
        first across every plugin (ties by registration order). ``backends`` lists engine keys the rule
        applies to: ``"*"`` every backend, ``""`` only when the backend is unknown. ``sampling`` maps
        ``temperature``, ``top_p``, ``top_k``, ``min_p``, ``repeat_penalty``, ``presence_penalty`` to values.

    .. versionadded:: 0.1
    """


@hookspec
def jarvis_register_config_sections(register: Register) -> None:
    """Contribute the schema of a config sub-table, so the user's config is checked against it.

    :param register: ``register(section, target)``, e.g. ``register("engine.ollama",
        "jarvis_engine_ollama.config:OllamaConfig")``. ``target`` names an attrs class; the section's keys
        are structured into it (unknown keys and wrong types are errors naming file, key and line). The
        class is imported only when the user's config has that section.

    .. versionadded:: 0.1
    """


@hookspec
def jarvis_register_commands(register: Register) -> None:
    """Add a ``jarvis`` subcommand (e.g. ``jarvis serve`` from jarvis-server) without the core importing it.

    :param register: ``register(name, target, *, description="")``. ``target`` names a module (or any
        object) with ``add_parser(subparsers)``, which adds the command's ``argparse`` parser, and
        ``run(args) -> int``, which runs it and returns the exit status. ``description`` is the one-line
        summary ``jarvis --help`` shows; the target is imported only when its command runs. A built-in
        command's name cannot be taken.

    .. versionadded:: 0.2
    """
